// Package grid runs a grid of runs: the one executor of the matrix
// (scenarios.Execute) and of compare (compare.Execute). It owns what both
// share — a pool of runs going at once, and a seed run again while it is no
// evidence, each attempt in a folder of its own — and leaves the order of
// the runs, what a run's outcome means, and the run's settings (it does
// not import them: each attempt is the caller's Run, in the folder given)
// to its caller.
package grid

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/checker"
)

// MaxAttempts is how often a grid runs one seed at most: a run that was no
// evidence either way (its faults never landed, a stall of the harness
// made its overlap, the checker could not decide) is run again, with the
// same seed and so the same fault decisions, since what spoiled it was the
// machine's speed, not the lock. Every attempt's folder is kept.
const MaxAttempts = 3

// Pool calls do for each job that take hands out, until take has none left
// or ctx ends, with jobs going at once as long as their weights add up to
// at most budget, and — while the machine is busy (machineBusy) — as long
// as they are at most half of budget in number, whatever they weigh (a
// job's weight is clamped to 1..budget, and one job always may run, so a
// heavy one still runs, alone). It returns when every do has. Jobs start
// in take's order: one that does not fit waits for room, and those after
// it wait too. take is called under Pool's lock, so it may read and write
// the caller's state without one of its own.
func Pool(ctx context.Context, budget int, take func() (job, weight int, ok bool), do func(int)) {
	budget = max(budget, 1)
	var (
		mu   sync.Mutex
		room = sync.NewCond(&mu)
		wg   sync.WaitGroup
		// used is what the jobs going weigh, going how many they are.
		used, going int
	)
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		room.Broadcast()
		mu.Unlock()
	})
	defer stop()
	// While it waits on a busy machine, look again now and then.
	tick, done := time.NewTicker(500*time.Millisecond), make(chan struct{})
	defer close(done)
	defer tick.Stop()
	go func() {
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				mu.Lock()
				room.Broadcast()
				mu.Unlock()
			}
		}
	}()
	fits := func(w int) bool {
		if going == 0 {
			return true
		}
		if used+w > budget {
			return false
		}
		return going < max(budget/2, 1) || !machineBusy()
	}
	mu.Lock()
	for {
		for !fits(1) && ctx.Err() == nil {
			room.Wait()
		}
		if ctx.Err() != nil {
			break
		}
		j, w, ok := take()
		if !ok {
			break
		}
		w = min(max(w, 1), budget)
		for !fits(w) && ctx.Err() == nil {
			room.Wait()
		}
		if ctx.Err() != nil {
			break
		}
		used += w
		going++
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(j)
			mu.Lock()
			used -= w
			going--
			room.Broadcast()
			mu.Unlock()
		}()
	}
	mu.Unlock()
	wg.Wait()
}

// Seed says where and how one seed of a cell runs.
type Seed struct {
	// Out is the grid's folder; Dir the seed's folder in it, to which the
	// attempts after the first add ".attemptN".
	Out, Dir string
	// Force lets a run replace an earlier one in its folder.
	Force bool
	// Run performs one attempt: the seed's run with its output folder out,
	// and force for its Force (a settings.RunFunc, given the seed's
	// settings with those two set).
	Run func(ctx context.Context, out string, force bool) (checker.Result, error)
	// AfterRun, when set, gets the folder of each run that finished (to
	// render its report).
	AfterRun func(dir string) error
}

// Attempt is one run of a seed.
type Attempt struct {
	Try int
	// Dir is its folder, relative to the grid's.
	Dir    string
	Result checker.Result
	Err    error
	// AfterErr is what AfterRun returned.
	AfterErr error
}

// Attempts runs seed s, and again while judge says its attempt was no
// evidence, up to MaxAttempts times or until ctx ends. It returns the
// number of attempts.
func (s Seed) Attempts(ctx context.Context, judge func(Attempt) (again bool)) int {
	try := 1
	for ; ; try++ {
		a := Attempt{Try: try, Dir: s.Dir}
		if try > 1 {
			a.Dir += fmt.Sprintf(".attempt%d", try)
		}
		out := filepath.Join(s.Out, a.Dir)
		a.Result, a.Err = s.Run(ctx, out, s.Force)
		if s.AfterRun != nil && (a.Result.Verdict != "" || a.Err == nil) {
			a.AfterErr = s.AfterRun(out)
		}
		if !judge(a) || ctx.Err() != nil || try == MaxAttempts {
			return try
		}
	}
}
