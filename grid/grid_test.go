package grid

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
)

func TestPoolRunsEveryJobOnceAndStopsWhenCancelled(t *testing.T) {
	var mu sync.Mutex
	var got []int
	next := 0
	Pool(context.Background(), 3, func() (int, bool) {
		if next == 10 {
			return 0, false
		}
		next++
		return next - 1, true
	}, func(j int) {
		mu.Lock()
		got = append(got, j)
		mu.Unlock()
	})
	slices.Sort(got)
	if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("ran %v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	ran := 0
	Pool(ctx, 1, func() (int, bool) { return 0, true }, func(int) {
		if ran++; ran == 2 {
			cancel()
		}
	})
	if ran != 2 {
		t.Errorf("%d jobs ran, want 2: none after the cancel", ran)
	}
}

func TestASeedRunsAgainInFoldersOfItsOwnWhileItIsNoEvidence(t *testing.T) {
	var outs, after []string
	s := Seed{Out: "grid", Dir: "cell.seed7", Force: true,
		Run: func(_ context.Context, out string, force bool) (checker.Result, error) {
			outs = append(outs, out)
			if !force {
				t.Error("Force not passed on")
			}
			if len(outs) == 1 {
				return checker.Result{}, errors.New("setup failed") // no verdict: no report
			}
			return checker.Result{Verdict: checker.Inconclusive}, nil
		},
		AfterRun: func(dir string) error { after = append(after, dir); return nil },
	}
	var tries []int
	n := s.Attempts(context.Background(), func(a Attempt) bool {
		tries = append(tries, a.Try)
		return true // never evidence
	})
	want := []string{filepath.Join("grid", "cell.seed7"), filepath.Join("grid", "cell.seed7.attempt2"), filepath.Join("grid", "cell.seed7.attempt3")}
	if n != MaxAttempts || !slices.Equal(outs, want) || !slices.Equal(tries, []int{1, 2, 3}) {
		t.Errorf("%d attempts in %v (tries %v), want %d in %v", n, outs, tries, MaxAttempts, want)
	}
	if !slices.Equal(after, want[1:]) {
		t.Errorf("reports rendered for %v, want %v (not for a run that ended in an error)", after, want[1:])
	}
	if n := s.Attempts(context.Background(), func(Attempt) bool { return false }); n != 1 {
		t.Errorf("evidence at once took %d attempts", n)
	}
}
