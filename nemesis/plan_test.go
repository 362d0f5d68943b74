package nemesis

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func TestParsePlan(t *testing.T) {
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
		p, err := ParsePlan(tc.in, 1, "x")
		if (err != nil) != tc.bad {
			t.Errorf("ParsePlan(%q): error %v", tc.in, err)
			continue
		}
		if !tc.bad && p.String() != tc.want {
			t.Errorf("ParsePlan(%q) = %s, want %s", tc.in, p, tc.want)
		}
	}
}

// The same run seed gives the same gaps; another seed or another nemesis
// gives others; every gap stays in its range.
func TestRandomPlanIsRepeatableFromTheSeed(t *testing.T) {
	gaps := func(seed int64, name string) []time.Duration {
		p, err := ParsePlan("random", seed, name)
		if err != nil {
			t.Fatal(err)
		}
		return p.Gaps(20, 100*time.Millisecond)
	}
	a, b := gaps(42, "partition"), gaps(42, "partition")
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different gaps:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, gaps(43, "partition")) || reflect.DeepEqual(a, gaps(42, "latency")) {
		t.Error("another seed or nemesis gave the same gaps")
	}
	for _, g := range a {
		if g < 50*time.Millisecond || g > 150*time.Millisecond {
			t.Errorf("gap %v outside interval/2 .. 3×interval/2", g)
		}
	}
	p, _ := ParsePlan("at=1s,3s", 42, "x")
	if got := p.Gaps(5, time.Second); !reflect.DeepEqual(got, []time.Duration{time.Second, 3 * time.Second}) {
		t.Errorf("at=1s,3s gives %v", got)
	}
}

// countNemesis counts injections and can fail halfway.
type countNemesis struct {
	mu      sync.Mutex
	times   []time.Time
	partial bool // return a partial fault with an error
	healed  int
}

func (c *countNemesis) Inject(ctx context.Context, env Env) (*Fault, error) {
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

// at= injects once at each time, measured from the schedule's start, and
// then the nemesis is done.
func TestAtPlanInjectsAtTheGivenTimes(t *testing.T) {
	n := &countNemesis{}
	plan, _ := ParsePlan("at=50ms,150ms", 1, "count")
	record, events := recorder()
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := Schedule(ctx, &fakeEnv{paused: map[int]bool{}}, []Scheduled{{Name: "count", Nemesis: n, Plan: plan}}, time.Hour, record); err != nil {
		t.Fatal(err)
	}
	if len(n.times) != 2 {
		t.Fatalf("%d injections, want 2", len(n.times))
	}
	for i, want := range []time.Duration{50 * time.Millisecond, 150 * time.Millisecond} {
		if got := n.times[i].Sub(start); got < want || got > want+40*time.Millisecond {
			t.Errorf("injection %d at %v, want %v", i, got, want)
		}
	}
	if got := len(events()); got != 4 {
		t.Errorf("%d events, want a start and an end per fault", got)
	}
}

// A fault that failed halfway is still recorded, healed, and reported.
func TestPartialFaultIsRecordedHealedAndReported(t *testing.T) {
	n := &countNemesis{partial: true}
	plan, _ := ParsePlan("at=0s", 1, "count")
	record, events := recorder()
	err := Schedule(context.Background(), &fakeEnv{paused: map[int]bool{}}, []Scheduled{{Name: "count", Nemesis: n, Plan: plan}}, time.Hour, record)
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
