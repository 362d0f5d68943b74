package nemesis

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/workload"
)

// fakeEnv is pure bookkeeping: the schedule's logic needs no processes.
// Besides the core Env it gives the Processes capability (pause-client's);
// no links, replication or clocks.
type fakeEnv struct {
	mu        sync.Mutex
	holders   []Holding
	paused    map[int]bool
	stretched map[int]string
	exited    map[int]bool
	lost      map[int]map[string]int64
	renews    bool // Topology().Renews
	// waits, when set, says which hold of each client waits (View.Waiting);
	// otherwise every hold reaches its wait at once.
	waits map[int]Wait
	// acquires are each client's latest acquire (View.Acquires).
	acquires map[int]Acquire
	changed  chan struct{}
	// ended is when the workload stopped (WorkloadEnded), 0 while it runs.
	ended atomic.Int64
}

func (e *fakeEnv) WorkloadEnded() (int64, bool) { return e.ended.Load(), false }

var testShape = Shape{Clients: 4, Keys: 1, LockNodes: 1, KeyName: func(int) string { return "lock:0" }}

func newFakeEnv() *fakeEnv {
	return &fakeEnv{paused: map[int]bool{}, stretched: map[int]string{}, exited: map[int]bool{}, changed: make(chan struct{})}
}

// hold makes client c hold key, by an acquire invoked now.
func (f *fakeEnv) hold(c int, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := history.Now()
	f.holders = append(f.holders, Holding{Client: c, Key: key, Since: time.Now(), OK: now, Invoked: now})
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeEnv) TTL() time.Duration   { return 20 * time.Millisecond }
func (f *fakeEnv) Lease() time.Duration { return 20 * time.Millisecond }
func (f *fakeEnv) Hold() time.Duration  { return 5 * time.Millisecond }
func (f *fakeEnv) Rand() *rand.Rand     { return rand.New(rand.NewPCG(1, 2)) }
func (f *fakeEnv) Holders() []Holding {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Holding(nil), f.holders...)
}
func (f *fakeEnv) Await(ctx context.Context, cond func(View) bool) error {
	for {
		f.mu.Lock()
		// A fake hold reaches the end of its work at once.
		waiting := map[int]Wait{}
		for _, h := range f.holders {
			if h.OK >= waiting[h.Client].At {
				waiting[h.Client] = Wait{At: h.OK, Holding: h}
			}
		}
		if f.waits != nil {
			waiting = f.waits
		}
		ok, changed := cond(View{Holders: append([]Holding(nil), f.holders...), Acquires: maps.Clone(f.acquires), Exited: f.exited, Waiting: waiting, Lost: f.lost, Stretched: maps.Clone(f.stretched)}), f.changed
		f.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}
func (f *fakeEnv) Acquiring(time.Duration) []int { return nil }
func (f *fakeEnv) RunFor(int, time.Duration, time.Duration) (bool, error) {
	return true, nil
}
func (f *fakeEnv) Pause(c int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused[c] = true
	return nil
}
func (f *fakeEnv) Resume(c int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused[c] = false
	return nil
}
func (f *fakeEnv) Kill(int) error { return errors.New("not here") }
func (f *fakeEnv) Stretch(_ context.Context, c int, key string, _, _ time.Duration, _ bool) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.exited[c] {
		return 0, ErrNoTarget
	}
	f.stretched[c] = key
	return history.Now(), nil
}
func (f *fakeEnv) Unstretch(c int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.stretched, c)
	return nil
}
func (f *fakeEnv) LockNodes() []cluster.Node { return nil }
func (f *fakeEnv) Topology() Topology {
	return Topology{Store: "redis", LockNodes: 1, Quorum: 1, Renews: f.renews, Workload: workload.Workload{Clients: 4, Keys: 1}}
}

var _ Processes = (*fakeEnv)(nil)

// A pause waits, after its quiet time, for the client its step chose to
// hold the step's key — another client's hold is no target — asks it to
// stay inside first, records the window with the hold it aimed at, and
// heals when the schedule stops; the client is never left paused or
// stretched.
func TestScheduleAimsAtTheStepsHoldAndHealsOnStop(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	n, err := (&PauseClient{}).withDuration(t, "40ms")
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := ParsePlan("every", 0, 7, "pause-client")
	victim := plan.Steps("pause-client", testShape, 10*time.Millisecond, 1)[0].Client
	var mu sync.Mutex
	var events []history.Event
	record := func(e history.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- Schedule(ctx, env, []Scheduled{{Name: "pause-client", Nemesis: n, Plan: plan}}, testShape, 10*time.Millisecond, record, func(Executed) {})
	}()
	env.hold((victim+1)%4, "lock:0") // not the step's client
	waitFor(t, func() bool { env.mu.Lock(); defer env.mu.Unlock(); return env.stretched[victim] == "lock:0" })
	mu.Lock()
	if len(events) != 0 {
		t.Errorf("a fault was recorded before its target held the key: %+v", events)
	}
	mu.Unlock()
	env.hold(victim, "lock:0")
	// One whole pause, then stop while the next step waits for its target.
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(events) == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if env.paused[victim] || env.stretched[victim] != "" {
		t.Errorf("client %d was left paused (%v) or stretched (%q) after the schedule stopped", victim, env.paused[victim], env.stretched[victim])
	}
	starts := map[int]history.Event{}
	for _, e := range events {
		switch e.Kind {
		case history.FaultStart:
			starts[e.Fault.ID] = e
		case history.FaultEnd:
			s, ok := starts[e.Fault.ID]
			if !ok || s.Time > e.Time {
				t.Errorf("fault %d ends before it starts or without a start", e.Fault.ID)
			}
			if e.Fault.ID == 1 && (e.Effect == nil || !e.Effect.Landed || e.Effect.Lease != history.LeaseLost) {
				t.Errorf("a 40 ms pause past a 20 ms lease did not land: %+v", e.Effect)
			}
			delete(starts, e.Fault.ID)
		}
	}
	if len(starts) != 0 {
		t.Errorf("faults without an end: %v", starts)
	}
	if f := events[0].Fault; f.Aim == nil || f.Aim.Client != victim || f.Step != 1 || !slices.Equal(f.Stopped, []int{victim}) {
		t.Errorf("want the first fault aimed at client %d's hold, as step 1, stopping it: %+v", victim, f)
	}
}

// A step whose client has exited is missed, said so, and the schedule
// goes on to the next.
func TestStepOfAnExitedClientIsMissed(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	for c := 0; c < 4; c++ {
		env.exited[c] = true
	}
	n, _ := (&PauseClient{}).withDuration(t, "40ms")
	plan, _ := ParsePlan("at=0s,10ms", 0, 1, "pause-client")
	var done []Executed
	record, events := recorder()
	if err := Schedule(context.Background(), env, []Scheduled{{Name: "pause-client", Nemesis: n, Plan: plan}}, testShape, time.Hour, record, func(e Executed) { done = append(done, e) }); err != nil {
		t.Fatal(err)
	}
	if len(events()) != 0 || len(done) != 2 || done[0].Missed == "" || done[1].Missed == "" || done[0].Fault != 0 {
		t.Errorf("events %v, steps %+v: want both steps missed, no fault", events(), done)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

func (p *PauseClient) withDuration(t *testing.T, d string) (Nemesis, error) {
	spec, _ := Lookup("pause-client")
	return newFrom(spec, map[string]string{"duration": d})
}

// pauseUnderWay schedules an hour's pause of a holder on env and returns
// once it began: its victim, the events recorded, the schedule's result and
// the cancel that ends the run.
func pauseUnderWay(t *testing.T, env *fakeEnv) (victim int, events func() []history.Event, done chan error, cancel context.CancelFunc) {
	t.Helper()
	n, _ := (&PauseClient{}).withDuration(t, "1h")
	plan, _ := ParsePlan("at=0s", 0, 3, "pause-client")
	victim = plan.Steps("pause-client", testShape, time.Hour, 1)[0].Client
	record, events := recorder()
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error)
	go func() {
		done <- Schedule(ctx, env, []Scheduled{{Name: "pause-client", Nemesis: n, Plan: plan}}, testShape, time.Hour, record, func(Executed) {})
	}()
	waitFor(t, func() bool { env.mu.Lock(); defer env.mu.Unlock(); return env.stretched[victim] != "" })
	env.hold(victim, "lock:0")
	waitFor(t, func() bool { return len(events()) == 1 })
	return victim, events, done, cancel
}

// A fault in progress when the run ends is healed before Schedule returns.
func TestStopHealsTheFaultInProgress(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	victim, events, done, cancel := pauseUnderWay(t, env)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ev := events()
	if len(ev) != 2 || ev[1].Kind != history.FaultEnd || env.paused[victim] {
		t.Errorf("events %+v, client paused %v: want the pause healed", ev, env.paused[victim])
	}
	if ev[1].Effect == nil {
		t.Error("the healed pause records no effect")
	}
}

// A fault that the workload's end cut short did not land, whatever its
// nemesis measured: the workers had stopped, and what follows its heal
// (here: a paused holder resumed long past its lease) was no longer part of
// the workload. A step due after the workload's end is missed.
func TestAFaultTheWorkloadsEndCutShortDidNotLand(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	_, events, done, cancel := pauseUnderWay(t, env)
	time.Sleep(50 * time.Millisecond) // the pause outlasts the 20ms lease: it would land
	env.ended.Store(history.Now())
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ev := events()
	if len(ev) != 2 || ev[1].Effect == nil || ev[1].Effect.Landed || !strings.Contains(ev[1].Effect.Note, "the workload ended") {
		t.Fatalf("events %+v: want the pause's end to say it did not land, cut short by the workload's end", ev)
	}
	if !strings.Contains(ev[1].Effect.Note, "past its") {
		t.Errorf("effect %q: want what the nemesis measured kept beside it", ev[1].Effect.Note)
	}

	// A step whose time comes after the workload's end does nothing.
	n, _ := (&PauseClient{}).withDuration(t, "1h")
	plan, _ := ParsePlan("at=0s", 0, 3, "pause-client")
	record, after := recorder()
	var steps []Executed
	err := Schedule(context.Background(), env, []Scheduled{{Name: "pause-client", Nemesis: n, Plan: plan}}, testShape, time.Hour, record,
		func(e Executed) { steps = append(steps, e) })
	if err != nil || len(steps) != 1 || !strings.Contains(steps[0].Missed, "the workload ended") || len(after()) != 0 {
		t.Errorf("Schedule: %v, steps %+v, events %d: want the step missed, no fault", err, steps, len(after()))
	}
}

// settledFault is a fault whose nemesis knows its effect when it begins
// (a failover that already lost the lease), then lasts an hour.
type settledFault struct{}

func (settledFault) Inject(context.Context, Env, Step) (*Fault, error) {
	return &Fault{Target: "settled", Duration: time.Hour, Effect: &history.Effect{Landed: true, Note: "lost the lease"}}, nil
}

// A fault whose effect was settled before its duration began keeps it
// when the workload's end cuts the duration short.
func TestAnEffectSettledBeforeTheWorkloadEndedStands(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	plan, _ := ParsePlan("at=0s", 0, 1, "settled")
	record, events := recorder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- Schedule(ctx, env, []Scheduled{{Name: "settled", Nemesis: settledFault{}, Plan: plan}}, testShape, time.Hour, record, func(Executed) {})
	}()
	waitFor(t, func() bool { return len(events()) == 1 })
	env.ended.Store(history.Now())
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ev := events()
	if len(ev) != 2 || ev[1].Effect == nil || !ev[1].Effect.Landed || !strings.Contains(ev[1].Effect.Note, "settled before") {
		t.Fatalf("events %+v: want the settled effect kept, said so", ev)
	}
}

// slowHeal is a fault whose heal lasts until its test lets it end, as a
// PostgreSQL failover's rebuild of the old primary may on a busy machine.
type slowHeal struct{ healed chan struct{} }

func (s slowHeal) Inject(context.Context, Env, Step) (*Fault, error) {
	return &Fault{Target: "slow heal", Heal: func(context.Context) error { <-s.healed; return nil }}, nil
}

// A step starts only once the previous fault is healed; one whose time came
// during a heal that outlasted the run is missed, said so — not skipped in
// silence, and not a failure of the run.
func TestAStepDueDuringAHealThatOutlastedTheRunIsMissed(t *testing.T) {
	t.Parallel()
	n := slowHeal{healed: make(chan struct{})}
	plan, _ := ParsePlan("at=0s,0s", 0, 1, "slow")
	record, events := recorder()
	var mu sync.Mutex
	var steps []Executed
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		errc <- Schedule(ctx, newFakeEnv(), []Scheduled{{Name: "slow", Nemesis: n, Plan: plan}}, testShape, time.Hour, record,
			func(e Executed) { mu.Lock(); steps = append(steps, e); mu.Unlock() })
	}()
	waitFor(t, func() bool { return len(events()) == 1 }) // fault 1 started; its heal waits
	cancel()                                              // the run ends during the heal
	close(n.healed)
	if err := <-errc; err != nil {
		t.Fatalf("Schedule: %v; want no error: the run ended, nothing failed", err)
	}
	if len(steps) != 2 || steps[0].Fault != 1 || steps[1].Fault != 0 || !strings.Contains(steps[1].Missed, "fault 1 (slow heal) was still being healed") {
		t.Errorf("steps %+v: want fault 1, then step 2 missed while fault 1 was healed", steps)
	}
}
