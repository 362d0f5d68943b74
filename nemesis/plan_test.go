package nemesis

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func TestParsePlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{"every", "every", false},
		{"", "every", false},
		{"every=500ms", "every=500ms", false},
		{"at=3s,1s", "at=1s,3s", false},
		{"random", "random", false},
		{"random=100ms-2s", "random=100ms-2s", false},
		{"every=-1s", "", true},
		{"at=", "", true},
		{"at=soon", "", true},
		{"random=2s-1s", "", true},
		{"sometimes", "", true},
	} {
		p, err := ParsePlan(tc.in, 0, 1, "x")
		if (err != nil) != tc.bad {
			t.Errorf("ParsePlan(%q): error %v", tc.in, err)
			continue
		}
		if !tc.bad && p.String() != tc.want {
			t.Errorf("ParsePlan(%q) = %s, want %s", tc.in, p, tc.want)
		}
	}
}

// The same run seed gives the same steps — gaps, clients, keys, nodes and
// each step's own random source — whatever happens meanwhile; another seed
// or another nemesis gives others; every random gap stays in its range.
func TestStepsAreRepeatableFromTheSeed(t *testing.T) {
	t.Parallel()
	shape := Shape{Clients: 4, Keys: 3, LockNodes: 5, KeyName: func(i int) string { return fmt.Sprintf("k%d", i) }}
	steps := func(seed int64, name, mode string) []Step {
		p, err := ParsePlan(mode, 0, seed, name)
		if err != nil {
			t.Fatal(err)
		}
		return p.Steps(name, shape, 100*time.Millisecond, 20)
	}
	for _, mode := range []string{"every", "random"} {
		a, b := steps(42, "partition", mode), steps(42, "partition", mode)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed, different steps:\n%v\n%v", mode, a, b)
		}
		if reflect.DeepEqual(a, steps(43, "partition", mode)) || reflect.DeepEqual(a, steps(42, "latency", mode)) {
			t.Errorf("%s: another seed or nemesis gave the same steps", mode)
		}
		clients, keys, nodes := map[int]bool{}, map[string]bool{}, map[int]bool{}
		for i, s := range a {
			if s.N != i+1 || s.Nemesis != "partition" {
				t.Errorf("step %d is numbered %d of %s", i+1, s.N, s.Nemesis)
			}
			clients[s.Client], keys[s.Key], nodes[s.Node] = true, true, true
			if mode == "random" && (s.Gap < 50*time.Millisecond || s.Gap > 150*time.Millisecond) {
				t.Errorf("gap %v outside interval/2 .. 3×interval/2", s.Gap)
			}
			if mode == "every" && s.Gap != 100*time.Millisecond {
				t.Errorf("every: gap %v, want the interval", s.Gap)
			}
			if s.Rand().Uint64() != s.Rand().Uint64() {
				t.Error("a step's random source is not repeatable")
			}
		}
		if len(clients) != 4 || len(keys) != 3 || len(nodes) != 5 {
			t.Errorf("%s: 20 steps chose clients %v, keys %v, nodes %v: want every one of each", mode, clients, keys, nodes)
		}
	}
	p, _ := ParsePlan("at=1s,3s", 0, 42, "x")
	got := p.Steps("x", shape, time.Second, 5)
	if len(got) != 2 || got[0].Gap != time.Second || got[1].Gap != 3*time.Second {
		t.Errorf("at=1s,3s gives %v", got)
	}
	// A replayed plan takes the steps it is given, and no more.
	p.Replay = got[1:]
	if again := p.Steps("x", shape, time.Second, 5); !reflect.DeepEqual(again, got[1:]) {
		t.Errorf("replay gives %v, want %v", again, got[1:])
	}
}

// countNemesis counts injections and can fail halfway.
type countNemesis struct {
	mu      sync.Mutex
	times   []time.Time
	partial bool // return a partial fault with an error
	healed  int
}

func (c *countNemesis) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.times = append(c.times, time.Now())
	f := &Fault{Target: "thing", Duration: 10 * time.Millisecond, Heal: func(context.Context) error {
		c.mu.Lock()
		c.healed++
		c.mu.Unlock()
		return nil
	}}
	if c.partial {
		return f, errors.New("the second half failed")
	}
	return f, nil
}

func recorder() (func(history.Event), func() []history.Event) {
	var mu sync.Mutex
	var events []history.Event
	return func(e history.Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
		func() []history.Event { mu.Lock(); defer mu.Unlock(); return append([]history.Event(nil), events...) }
}

// at= injects once at each time, measured from the schedule's start (never
// before it; how much later depends on the machine), and then the nemesis
// is done.
func TestAtPlanInjectsAtTheGivenTimes(t *testing.T) {
	t.Parallel()
	n := &countNemesis{}
	plan, _ := ParsePlan("at=50ms,150ms", 0, 1, "count")
	record, events := recorder()
	start := time.Now()
	var done []Executed
	if err := Schedule(context.Background(), newFakeEnv(), []Scheduled{{Name: "count", Nemesis: n, Plan: plan}}, testShape, time.Hour, record, func(e Executed) { done = append(done, e) }); err != nil {
		t.Fatal(err)
	}
	if len(n.times) != 2 {
		t.Fatalf("%d injections, want 2", len(n.times))
	}
	for i, want := range []time.Duration{50 * time.Millisecond, 150 * time.Millisecond} {
		if got := n.times[i].Sub(start); got < want {
			t.Errorf("injection %d at %v, before %v", i, got, want)
		}
	}
	if got := len(events()); got != 4 {
		t.Errorf("%d events, want a start and an end per fault", got)
	}
	if len(done) != 2 || done[0].Fault != 1 || done[1].Fault != 2 || done[1].Gap != 150*time.Millisecond {
		t.Errorf("executed steps %+v, want both with their faults", done)
	}
}

// A fault that failed halfway is still recorded, healed, and reported.
func TestPartialFaultIsRecordedHealedAndReported(t *testing.T) {
	t.Parallel()
	n := &countNemesis{partial: true}
	plan, _ := ParsePlan("at=0s", 0, 1, "count")
	record, events := recorder()
	err := Schedule(context.Background(), newFakeEnv(), []Scheduled{{Name: "count", Nemesis: n, Plan: plan}}, testShape, time.Hour, record, func(Executed) {})
	if err == nil {
		t.Error("the failure was not reported")
	}
	ev := events()
	if len(ev) != 2 || ev[0].Kind != history.FaultStart || ev[1].Kind != history.FaultEnd || ev[1].Error == "" {
		t.Errorf("want a recorded window whose end carries the error, got %+v", ev)
	}
	if n.healed != 1 {
		t.Errorf("healed %d times, want 1", n.healed)
	}
}

// Schedule times are spans like every other duration: a multiple of the TTL
// works, and the parser is strict about the whole value.
func TestParsePlanTakesMultiplesOfTheTTL(t *testing.T) {
	t.Parallel()
	ttl := 500 * time.Millisecond
	for in, want := range map[string]string{
		"every=2ttl":           "every=1s",
		"at=1ttl,0.5ttl":       "at=250ms,500ms",
		"random=0.2ttl-1.5ttl": "random=100ms-750ms",
	} {
		p, err := ParsePlan(in, ttl, 1, "x")
		if err != nil || p.String() != want {
			t.Errorf("ParsePlan(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, in := range []string{"every=2,5ttl", "every=2 ttl", "at=1ttlx", "every=300"} {
		if _, err := ParsePlan(in, ttl, 1, "x"); err == nil {
			t.Errorf("ParsePlan(%q) took a malformed time", in)
		}
	}
}
