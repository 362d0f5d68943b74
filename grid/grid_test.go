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
	Pool(context.Background(), 3, func() (int, int, bool) {
		if next == 10 {
			return 0, 0, false
		}
		next++
		return next - 1, 1, true
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
	Pool(ctx, 1, func() (int, int, bool) { return 0, 1, true }, func(int) {
		if ran++; ran == 2 {
			cancel()
		}
	})
	if ran != 2 {
		t.Errorf("%d jobs ran, want 2: none after the cancel", ran)
	}
}

// The jobs going at once never weigh more than the budget; a job heavier
// than the whole budget still runs, alone; and light jobs fill the room a
// heavy one leaves.
func TestPoolKeepsTheWeightOfTheJobsAtOnceWithinItsBudget(t *testing.T) {
	weights := []int{2, 1, 1, 2, 9, 1, 1, 1, 1, 2, 2, 1}
	var (
		mu         sync.Mutex
		now, most  int
		alone      bool
		ran        []int
		next       int
		overBudget []int
	)
	full := sync.NewCond(&mu)
	release := make(chan struct{})
	go func() {
		// The first three (2+1+1) fill the budget before any ends.
		mu.Lock()
		for now < 4 {
			full.Wait()
		}
		mu.Unlock()
		for range len(weights) {
			release <- struct{}{}
		}
	}()
	Pool(context.Background(), 4, func() (int, int, bool) {
		if next == len(weights) {
			return 0, 0, false
		}
		next++
		return next - 1, weights[next-1], true
	}, func(j int) {
		w := min(weights[j], 4)
		mu.Lock()
		now += w
		most = max(most, now)
		if now > 4 {
			overBudget = append(overBudget, j)
		}
		if weights[j] == 9 {
			alone = now == 4
		}
		full.Broadcast()
		mu.Unlock()
		<-release
		mu.Lock()
		now -= w
		ran = append(ran, j)
		mu.Unlock()
	})
	if len(ran) != len(weights) {
		t.Errorf("ran %d jobs, want %d", len(ran), len(weights))
	}
	if len(overBudget) > 0 || most != 4 {
		t.Errorf("the jobs at once weighed up to %d (over the budget 4 when %v started), want 4 at most and reached", most, overBudget)
	}
	if !alone {
		t.Error("the job heavier than the budget ran beside others")
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
