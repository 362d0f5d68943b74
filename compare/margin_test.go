package compare

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// fakeSizes plans a probe as a cell whose settings carry its fault column,
// and runs it as a lock that breaks under a pause of more than breakAt
// TTLs; a pause of less than landsAt never lands (no evidence), and fail
// makes a run of that size fail.
type fakeSizes struct {
	breakAt, landsAt, fail float64
	// overlapsUnlanded: sizes above it (and below landsAt) overlap though
	// their fault did not land.
	overlapsUnlanded float64
	mu               sync.Mutex
	runs             int
}

func (f *fakeSizes) plan(s Spec) []Cell {
	c := Cell{Lock: s.Locks[0], Nemesis: s.Nemeses[0], Config: settings.Run{Lock: s.Locks[0], Nemeses: s.Nemeses, Seed: s.FirstSeed, Workload: workload.Workload{TTL: 300 * time.Millisecond}}}
	return []Cell{c}
}

func (f *fakeSizes) run(_ context.Context, cfg settings.Run) (checker.Result, error) {
	f.mu.Lock()
	f.runs++
	f.mu.Unlock()
	fault, err := scenarios.ParseFault(cfg.Nemeses[0])
	if err != nil {
		return checker.Result{}, err
	}
	sp, err := option.ParseSpan(fault.Options["duration"])
	if err != nil {
		return checker.Result{}, err
	}
	res := checker.Result{Verdict: checker.Safe, Nemesis: []string{"pause-client"}, Evidence: checker.Evidence{Faults: 1, Landed: 1, Overlaps: map[string]int{}}}
	switch x := sp.TTL; {
	case x == f.fail:
		return res, errors.New("redis did not start")
	case x > f.breakAt:
		res.Verdict = checker.Violation
		res.Evidence.Overlaps[checker.CauseFault] = 1
		res.Evidence.LandedFaultOverlaps = 1
	case x < f.landsAt && x > f.overlapsUnlanded:
		// The fault did not land, yet the run overlapped: no evidence.
		res.Verdict = checker.Violation
		res.Evidence.Landed = 0
		res.Evidence.Overlaps[checker.CauseFault] = 1
	case x < f.landsAt:
		res.Evidence.Landed = 0
	}
	return res, nil
}

func (f *fakeSizes) margin(t *testing.T, spec MarginSpec) Margin {
	t.Helper()
	spec.Locks, spec.Nemeses = []string{"plain"}, []string{"pause-client"}
	spec.Seeds, spec.FirstSeed, spec.Parallel = 3, 1, 1
	ms := FindMargins(context.Background(), spec, MarginOptions{Options: Options{Out: t.TempDir(), Run: f.run}, Plan: f.plan})
	if len(ms.Margins) != 1 {
		t.Fatalf("%d margins, want 1", len(ms.Margins))
	}
	return ms.Margins[0]
}

// TestMarginBisectsToTheBreakingSize: a lock that breaks above 1.3 TTLs
// and whose faults land from 0.5 on is found to break in an interval
// around 1.3 as wide as the steps make it, the smallest size not broken
// is below it with its verdict, and every size run is kept in order.
func TestMarginBisectsToTheBreakingSize(t *testing.T) {
	f := &fakeSizes{breakAt: 1.3, landsAt: 0.5, fail: -1}
	m := f.margin(t, MarginSpec{Steps: 5})
	if m.Option != "duration" || m.From != "0.1ttl" || m.To != "4ttl" {
		t.Fatalf("searched %s over %s..%s, want pause-client's size, duration, over 0.1ttl..4ttl", m.Option, m.From, m.To)
	}
	if m.Breaks == nil || m.Unbroken == nil {
		t.Fatalf("no interval: %s", m.Says())
	}
	if m.Breaks.X <= 1.3 || m.Unbroken.X > 1.3 || m.Breaks.X-m.Unbroken.X > (4-0.1)/32+0.01 {
		t.Errorf("interval (%v, %v], want one of width ≤ 3.9/32 around 1.3", m.Unbroken.X, m.Breaks.X)
	}
	if m.Breaks.Verdict != Breaks || m.Unbroken.Verdict != Survives {
		t.Errorf("verdicts %s and %s, want breaks and survives", m.Breaks.Verdict, m.Unbroken.Verdict)
	}
	if len(m.Probes) != 7 || m.Probes[0].Value != "4ttl" || m.Probes[1].Value != "0.1ttl" || m.Probes[1].Verdict != NoEvidence {
		t.Errorf("probes %+v, want the two ends (4ttl breaks, 0.1ttl no evidence) then 5 steps", m.Probes)
	}
	// A size that broke stopped at its first violation; one that survived
	// ran every seed.
	if r := m.Breaks.Row; r.Seeds != 1 || !r.StoppedEarly {
		t.Errorf("the breaking size ran %d seeds (stopped early %v), want 1", r.Seeds, r.StoppedEarly)
	}
	if r := m.Unbroken.Row; r.Seeds != 3 || r.Safe != 3 {
		t.Errorf("the surviving size ran %d seeds, %d safe, want 3", r.Seeds, r.Safe)
	}
	if s := m.Says(); !strings.Contains(s, "breaks at duration="+m.Breaks.Value) || !strings.Contains(s, "survives: 0 of 3 seeds violated, rate ≤ 56 % at 95 %") {
		t.Errorf("Says: %s", s)
	}
}

// TestMarginBelowWhereTheFaultLandsIsNoEvidence: when the lock breaks as
// soon as the fault lands, the largest size not broken is one whose
// faults did not land, and says so: it is not a survival.
func TestMarginBelowWhereTheFaultLandsIsNoEvidence(t *testing.T) {
	f := &fakeSizes{breakAt: 0.9, landsAt: 1.0, fail: -1, overlapsUnlanded: 0.8}
	m := f.margin(t, MarginSpec{Steps: 4})
	if m.Breaks == nil || m.Unbroken == nil || m.Unbroken.Verdict != NoEvidence || m.Breaks.X < 1.0 {
		t.Fatalf("%s; want a break at ≥ 1 TTL above a size that was no evidence", m.Says())
	}
	// Between 0.8 and 1 the runs overlap with faults that did not land:
	// that is not the size breaking the lock.
	seen := 0
	for _, p := range m.Probes {
		if p.X > 0.8 && p.X < 1.0 {
			seen++
		}
		if p.X > 0.8 && p.X < 1.0 && (p.Verdict != NoEvidence || !strings.Contains(p.Seeds(), "(1 not by a fault that landed)")) {
			t.Errorf("size %s, overlapping with its fault unlanded: %s (%s), want no evidence", p.Value, p.Verdict, p.Seeds())
		}
	}
	if seen == 0 {
		t.Errorf("no size between 0.8 and 1 TTL was run: %+v", m.Probes)
	}
}

// TestMarginEnds: a lock the largest size does not break costs one size;
// one the smallest breaks, two; a failed run stops the search and says
// why, and a search of sizes too close to write apart ends early.
func TestMarginEnds(t *testing.T) {
	f := &fakeSizes{breakAt: 99, landsAt: 0, fail: -1}
	if m := f.margin(t, MarginSpec{Steps: 5}); len(m.Probes) != 1 || m.Breaks != nil || m.Unbroken == nil || m.Unbroken.Value != "4ttl" || m.Unbroken.Verdict != Survives {
		t.Errorf("never broken: %s (%d sizes)", m.Says(), len(m.Probes))
	}
	f = &fakeSizes{breakAt: 0, landsAt: 0, fail: -1}
	if m := f.margin(t, MarginSpec{Steps: 5}); len(m.Probes) != 2 || m.Breaks == nil || m.Breaks.Value != "0.1ttl" || m.Unbroken != nil {
		t.Errorf("always broken: %s (%d sizes)", m.Says(), len(m.Probes))
	}
	f = &fakeSizes{breakAt: 1.3, landsAt: 0, fail: 2.05}
	m := f.margin(t, MarginSpec{Steps: 5})
	if len(m.Probes) != 3 || m.Probes[2].Verdict != Unknown || !strings.Contains(m.Note, "stopped at 2.05ttl, where a run failed: redis did not start") {
		t.Errorf("a failed run: %s (%d sizes: %+v)", m.Says(), len(m.Probes), m.Probes)
	}
	if m.Breaks == nil || m.Breaks.Value != "4ttl" || m.Unbroken == nil || m.Unbroken.Value != "0.1ttl" {
		t.Errorf("a failed run should leave the interval it had: %s", m.Says())
	}
	f = &fakeSizes{breakAt: 1.001, landsAt: 0, fail: -1}
	if m := f.margin(t, MarginSpec{Steps: 20, From: "1ttl", To: "1.02ttl"}); len(m.Probes) > 4 {
		t.Errorf("sizes written alike ran again: %d sizes %+v", len(m.Probes), m.Probes)
	}
}

func TestMarginRangeErrorsNameWhatToFix(t *testing.T) {
	for _, c := range []struct {
		spec   MarginSpec
		column string
		want   string
	}{
		{MarginSpec{}, "pause-client:duration=1ttl", "sets duration, the option the search varies"},
		{MarginSpec{}, "kill-client", "kill-client declares no size to vary: give --vary"},
		{MarginSpec{Vary: "phase"}, "pause-client", "option phase is not a size"},
		{MarginSpec{Vary: "lenght"}, "pause-client", `no option "lenght"`},
		{MarginSpec{From: "2ttl", To: "1ttl"}, "pause-client", "--from 2ttl is not below --to 1ttl"},
		{MarginSpec{From: "100ms", To: "2ttl"}, "pause-client", "both ends of the range as durations, or both as multiples"},
		{MarginSpec{From: "1", To: "3"}, "pause-client", "a number needs a unit"},
		{MarginSpec{}, "no-such", "no-such"},
	} {
		_, _, _, _, err := c.spec.ParseRange(c.column)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %s: %v, want %q", c.spec, c.column, err, c.want)
		}
	}
	key, sc, lo, hi, err := MarginSpec{}.ParseRange("clock-drift")
	if err != nil || key != "rate" || sc.unit != "" || lo != 1 || hi != 16 {
		t.Errorf("clock-drift: %s %q %v..%v %v, want rate over 1..16", key, sc.unit, lo, hi, err)
	}
	key, sc, lo, hi, err = MarginSpec{From: "100ms", To: "1.5s"}.ParseRange("slow-reply:links=all")
	if err != nil || key != "delay" || sc.unit != "ms" || lo != 100 || hi != 1500 || sc.format(812.5) != "812ms" {
		t.Errorf("slow-reply in ms: %s %q %v..%v %v (812.5 → %s)", key, sc.unit, lo, hi, err, sc.format(812.5))
	}
	if v := (scale{"ttl"}).format(1.0703125); v != "1.07ttl" || math.Abs(lo-100) > 0 {
		t.Errorf("format: %s", v)
	}
}
