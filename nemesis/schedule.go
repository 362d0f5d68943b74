package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// Scheduled is one nemesis of a run under its registered name, with its
// plan (the zero Plan: every fault interval).
type Scheduled struct {
	Name    string
	Nemesis Nemesis
	Plan    Plan
}

// Schedule runs each nemesis in its own loop: a quiet time from its plan,
// one fault, its duration, heal; again until ctx ends or the plan (or the
// nemesis, with ErrDone) has nothing more. Faults of different nemeses may
// overlap. Each nemesis draws its targets from its own seeded source
// (Env.Rand), so that one nemesis's choices do not depend on when another
// one drew. Every fault is recorded as a fault-start event taken before it was
// injected and a fault-end event taken after it was healed, so the recorded
// window always covers the real one. When ctx ends, a fault in progress is
// healed before Schedule returns. The error joins every failure to inject or
// heal: a fault that could not be healed leaves the run in doubt.
func Schedule(ctx context.Context, env Env, items []Scheduled, interval time.Duration, record func(history.Event)) error {
	var (
		wg   sync.WaitGroup
		ids  atomic.Int64
		mu   sync.Mutex
		errs []error
	)
	for _, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop(ctx, env, it, interval, &ids, record); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("nemesis %s: %w", it.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func loop(ctx context.Context, env Env, it Scheduled, interval time.Duration, ids *atomic.Int64, record func(history.Event)) error {
	plan := it.Plan.planner(interval, time.Now())
	env = &scopedEnv{Env: env, rng: it.Plan.targetRand()}
	for {
		wait, more := plan.wait(time.Now())
		if !more || !sleep(ctx, wait) {
			return nil
		}
		var (
			f     *Fault
			start int64
			err   error
		)
		for {
			start = history.Now()
			f, err = it.Nemesis.Inject(ctx, env)
			if !errors.Is(err, ErrNoTarget) {
				break
			}
			if !sleep(ctx, 5*time.Millisecond) {
				return nil
			}
		}
		cancelled := ctx.Err() != nil && errors.Is(err, ctx.Err())
		if f == nil && (errors.Is(err, ErrDone) || cancelled) {
			// Done, or the run ended while the nemesis waited for its
			// moment: nothing was done, nothing to record.
			return nil
		}
		if f == nil && err != nil {
			return err
		}
		injectErr := err // with f: a partial fault, recorded and healed
		if cancelled {
			injectErr = nil
		}
		id := int(ids.Add(1))
		desc := &history.Fault{ID: id, Name: it.Name, Target: f.Target, Params: f.Params, Clients: f.Clients}
		record(history.Event{Time: start, Kind: history.FaultStart, Client: history.NoClient, Fault: desc})
		if f.Duration > 0 && err == nil {
			sleep(ctx, f.Duration)
		}
		var healErr error
		if f.Heal != nil {
			// Heal even when the run is ending: a fault must never outlive it.
			healErr = f.Heal(context.Background())
		}
		end := history.Event{Time: history.Now(), Kind: history.FaultEnd, Client: history.NoClient, Fault: desc}
		if err := errors.Join(injectErr, healErr); err != nil {
			end.Error = err.Error()
		}
		record(end)
		if healErr != nil {
			return errors.Join(injectErr, fmt.Errorf("heal fault %d (%s): %w", id, f.Target, healErr))
		}
		if injectErr != nil {
			return fmt.Errorf("fault %d (%s) failed halfway: %w", id, f.Target, injectErr)
		}
	}
}

// scopedEnv gives one nemesis its own random source.
type scopedEnv struct {
	Env
	rng *rand.Rand
}

func (s *scopedEnv) Rand() *rand.Rand { return s.rng }

// sleep waits d or until ctx ends; it reports whether the full d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
