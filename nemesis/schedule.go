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
	Action  history.Action // Spec.Action
	Nemesis Nemesis
	Plan    Plan
}

// Executed is one step as it went: the fault it became, or why it was
// missed. The steps a run executed are its schedule.json, which
// `lockchaos run --replay` takes again.
type Executed struct {
	Step
	// Fault is the fault's ID in the history; 0 when the step was missed.
	Fault int `json:"fault,omitempty"`
	// Missed says why no fault happened (its target never came, the run
	// ended first).
	Missed string `json:"missed,omitempty"`
}

// Timetable is the steps a run's nemeses executed, as its schedule.json
// holds them (rundir.ScheduleFile); settings.Run.Replay takes them again.
type Timetable struct {
	Nemeses []Executions `json:"nemeses"`
}

// Executions is one nemesis's steps, in order.
type Executions struct {
	Name string `json:"name"`
	// Plan is its schedule option (every, at=…, random): how the steps'
	// gaps are read.
	Plan  string     `json:"plan"`
	Steps []Executed `json:"steps"`
}

// Steps returns the steps of nemesis name, to take again.
func (t *Timetable) Steps(name string) ([]Step, bool) {
	for _, n := range t.Nemeses {
		if n.Name == name {
			steps := make([]Step, 0, len(n.Steps))
			for _, e := range n.Steps {
				steps = append(steps, e.Step)
			}
			return steps, true
		}
	}
	return nil, false
}

// Schedule runs each nemesis in its own loop: its next step's quiet time,
// then the step's fault, its duration, heal; again until ctx ends or the
// plan (or the nemesis, with ErrDone) has nothing more. Faults of different
// nemeses may overlap. Every fault is recorded as a fault-start event at the
// moment it began (before it acted) and a fault-end event after it was
// healed, carrying what it did to the lease it aimed at, so the recorded
// window always covers the real one. When ctx ends, a fault in progress is
// healed before Schedule returns. done receives every step as it ends. The
// error joins every failure to inject or heal: a fault that could not be
// healed leaves the run in doubt.
func Schedule(ctx context.Context, env Env, items []Scheduled, shape Shape, interval time.Duration, record func(history.Event), done func(Executed)) error {
	var (
		wg   sync.WaitGroup
		ids  atomic.Int64
		mu   sync.Mutex
		errs []error
	)
	start := time.Now()
	for _, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop(ctx, env, it, shape, interval, start, &ids, record, done); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("nemesis %s: %w", it.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func loop(ctx context.Context, env Env, it Scheduled, shape Shape, interval time.Duration, start time.Time, ids *atomic.Int64, record func(history.Event), done func(Executed)) error {
	plan := it.Plan.planner(it.Name, shape, interval)
	last := ""                          // the previous step's fault, "" if none
	var ended atomic.Pointer[time.Time] // when ctx ended: the run's end
	defer context.AfterFunc(ctx, func() { t := time.Now(); ended.Store(&t) })()
	for {
		step, more := plan.next()
		if !more {
			return nil
		}
		wait := step.Gap
		if it.Plan.Mode == "at" {
			wait = max(time.Until(start.Add(step.Gap)), 0)
			// A step starts only once the previous fault is healed (a
			// failover's heal rebuilds what the next one needs): one
			// whose time came during that heal, which outlasted the run,
			// is missed, said so. ended is set an instant after ctx
			// ends; unset yet, the end is now, past the step's time.
			if e := ended.Load(); ctx.Err() != nil && last != "" && (e == nil || !start.Add(step.Gap).After(*e)) {
				done(Executed{Step: step, Missed: fmt.Sprintf("its time (%v) came while %s was still being healed, and the run ended first", step.Gap, last)})
				return nil
			}
		}
		if !sleep(ctx, wait) {
			return nil
		}
		if we, _ := workloadEnd(env); we != 0 {
			// The workers are stopping: a fault now would hit nobody.
			done(Executed{Step: step, Missed: "the workload ended before the step's time"})
			return nil
		}
		began := history.Now()
		f, err := it.Nemesis.Inject(ctx, &stepEnv{Env: env, rng: step.Rand()}, step)
		cancelled := ctx.Err() != nil && errors.Is(err, ctx.Err())
		switch {
		case f == nil && errors.Is(err, ErrNoTarget):
			done(Executed{Step: step, Missed: err.Error()})
			last = ""
			continue
		case f == nil && cancelled:
			// The run ended while the nemesis waited for its moment:
			// nothing was done, nothing to record.
			done(Executed{Step: step, Missed: "the run ended before the step's target came"})
			return nil
		case f == nil && errors.Is(err, ErrDone):
			return nil
		case f == nil && err != nil && ctx.Err() != nil:
			// The run ended while the step was under way (its own calls
			// cancelled with it), and it did nothing: a missed step,
			// not a failure of the run.
			done(Executed{Step: step, Missed: "the run ended during the step: " + err.Error()})
			return nil
		case f == nil && err != nil:
			return err
		}
		injectErr := err // with f: a partial fault, recorded and healed
		// An effect the nemesis settled before the fault's duration began
		// (a failover that already lost the lease), and when.
		settled, settledAt := f.Effect, history.Now()
		if cancelled {
			injectErr = nil
		}
		if f.Start != 0 {
			began = f.Start
		}
		id := int(ids.Add(1))
		desc := &history.Fault{ID: id, Name: it.Name, Action: it.Action, Target: f.Target, Params: f.Params, Clients: f.Clients, Stopped: f.Stopped, Nodes: f.Nodes, Aim: f.Aim, Step: step.N}
		record(history.Event{Time: began, Kind: history.FaultStart, Client: history.NoClient, Fault: desc})
		if f.Duration > 0 && err == nil {
			sleep(ctx, f.Duration)
		}
		var healErr error
		if f.Heal != nil {
			// Heal even when the run is ending: a fault must never outlive it.
			healErr = f.Heal(context.Background())
		}
		if we, violated := workloadEnd(env); we != 0 && we < began+f.Duration.Nanoseconds() {
			keep := ""
			switch {
			case violated:
				keep = "at the run's first violation"
			case settled != nil && f.Effect == settled && settledAt <= we:
				keep = "its effect settled before"
			}
			f.Effect = cutShort(f.Effect, time.Duration(we-began), f.Duration, keep)
		}
		end := history.Event{Time: history.Now(), Kind: history.FaultEnd, Client: history.NoClient, Fault: desc, Effect: f.Effect}
		if err := errors.Join(injectErr, healErr); err != nil {
			end.Error = err.Error()
		}
		record(end)
		done(Executed{Step: step, Fault: id})
		last = fmt.Sprintf("fault %d (%s)", id, f.Target)
		if healErr != nil {
			return errors.Join(injectErr, fmt.Errorf("heal fault %d (%s): %w", id, f.Target, healErr))
		}
		if injectErr != nil {
			return fmt.Errorf("fault %d (%s) failed halfway: %w", id, f.Target, injectErr)
		}
	}
}

// cutShort is the effect of a fault that the workload's end cut short,
// or that began after it: the workers stopped (a stopped client was
// resumed to stop) before its duration was over, so what it does at and
// after its heal — the stale OK acted on, the restarted node that forgot a
// lease, the client back from a partition — fell outside the workload,
// with nobody left to take the lock it hit. It did not land, whatever it
// measured at its heal: a run whose faults all ended so is no evidence,
// never a safe lock (a paused acquire cut short at the end of a 4-second
// run once passed for a landed fault of a safe run). What it measured
// stands (keep) when the nemesis had settled its effect before the fault's
// duration began and the workload ended (a failover that already lost the
// lease, the old primary kept down afterwards), or when the workload ended
// early at the run's first violation (--stop-on-violation): no safe verdict
// can rest on it then.
func cutShort(e *history.Effect, lasted, planned time.Duration, keep string) *history.Effect {
	if keep != "" && lasted >= 0 {
		if e == nil {
			return nil
		}
		out := *e
		out.Note += fmt.Sprintf("; the workload ended %s into the fault's %s, %s", round(lasted), round(planned), keep)
		return &out
	}
	note := fmt.Sprintf("the workload ended %s into the fault's %s, before what follows its heal could happen: not counted as landed", round(lasted), round(planned))
	if lasted < 0 {
		note = "the fault began after the workload ended: not counted as landed"
	}
	if e != nil && e.Note != "" {
		note = e.Note + "; " + note
	}
	return &history.Effect{Note: note}
}

// workloadEnd is when the run's workload stopped (history time), 0 while
// it runs or when the environment does not say, and whether it stopped at
// the run's first violation.
func workloadEnd(env Env) (int64, bool) {
	w, err := capability[Workload](env, "the workload's end")
	if err != nil {
		return 0, false
	}
	return w.WorkloadEnded()
}

// stepEnv gives one step its own random source. Embedding Env hides the
// capabilities of the run's environment: capability finds them through
// Unwrap.
type stepEnv struct {
	Env
	rng *rand.Rand
}

func (s *stepEnv) Rand() *rand.Rand { return s.rng }

// Unwrap is the run's environment, for its capabilities.
func (s *stepEnv) Unwrap() Env { return s.Env }

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
