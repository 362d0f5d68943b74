package grid

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

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
	// An idle machine: a busy one (this test's own, beside CPU hogs) runs
	// half as many jobs (TestPoolUsesHalfItsBudgetWhileTheMachineIsBusy).
	defer func(f func() bool) { machineBusy = f }(machineBusy)
	machineBusy = func() bool { return false }
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

// On a busy machine half the budget's number of jobs go at once, whatever
// they weigh (as every grid ran before runs were weighed); once it is idle
// again, as many as their weights allow.
func TestPoolUsesHalfItsBudgetWhileTheMachineIsBusy(t *testing.T) {
	defer func(f func() bool) { machineBusy = f }(machineBusy)
	var (
		mu        sync.Mutex
		busy      = true
		now, most int
		mostIdle  int
		ran, next int
	)
	machineBusy = func() bool { mu.Lock(); defer mu.Unlock(); return busy }
	release := make(chan struct{})
	Pool(context.Background(), 8, func() (int, int, bool) {
		if next == 16 {
			return 0, 0, false
		}
		next++
		return next - 1, 1 + (next-1)%2, true // weights 1, 2, 1, 2…
	}, func(j int) {
		mu.Lock()
		now++
		if busy {
			most = max(most, now)
		} else {
			mostIdle = max(mostIdle, now)
		}
		first := j == 0
		mu.Unlock()
		if first {
			// The others start meanwhile, as many as a busy machine takes;
			// then the machine is idle.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				mu.Lock()
				n := now
				mu.Unlock()
				if n == 4 {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			busy = false
			mu.Unlock()
			close(release)
		}
		<-release
		// On the idle machine, a job ends only once more than half the
		// budget went at once (or, were Pool wrong, after 10 s).
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			n := mostIdle
			mu.Unlock()
			if n > 4 || j >= 12 {
				break
			}
		}
		mu.Lock()
		now--
		ran++
		mu.Unlock()
	})
	if ran != 16 {
		t.Errorf("%d jobs ran, want 16", ran)
	}
	if most != 4 {
		t.Errorf("%d jobs went at once on a busy machine, want 4 (half of 8, whatever they weigh)", most)
	}
	if mostIdle <= 4 {
		t.Errorf("at most %d jobs went at once on an idle machine, want more than half of 8", mostIdle)
	}
}

func TestCPUTimesReadsTheCPULineOfProcStat(t *testing.T) {
	f := filepath.Join(t.TempDir(), "stat")
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  100 5 50 800 20 1 2 3 40 4\ncpu0 50 2 25 400 10 0 1 1 20 2\nintr 12345\n"
	if err := os.WriteFile(f, []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	total, idle, ok := cpuTimes(f)
	if !ok || total != 981 || idle != 820 {
		t.Errorf("cpuTimes = %d, %d, %v; want 981 in all (guest time left out: user holds it), 820 idle (idle and iowait)", total, idle, ok)
	}
	if _, _, ok := cpuTimes(filepath.Join(t.TempDir(), "none")); ok {
		t.Error("a missing /proc/stat read as ok")
	}
}
