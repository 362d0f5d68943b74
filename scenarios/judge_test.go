package scenarios

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
)

// A scenario that expects the resource fenced (or damaged) needs a stale
// holder's operation after another holder's: a run whose overlap came from
// its fault, as expected, but whose resource stayed intact never put the
// fence to the test — no evidence either way, run again; a resource
// damaged where fenced was expected stays a mismatch.
func TestAnUntestedFenceIsNoEvidence(t *testing.T) {
	e := Expectation{Verdict: checker.Violation, Resource: checker.ResourceFenced}
	run := func(state checker.ResourceState) checker.Result {
		return checker.Result{
			Verdict:  checker.Violation,
			Mutex:    checker.MutexResult{OverlapCount: 1},
			Evidence: checker.Evidence{Faults: 1, Landed: 1, LeasesLost: 1, Overlaps: map[string]int{checker.CauseFault: 1}, LandedFaultOverlaps: 1},
			Resource: checker.ResourceResult{State: state, Summary: "the resource stayed correct"},
		}
	}
	for _, tc := range []struct {
		state checker.ResourceState
		want  Status
		why   string
	}{
		{checker.ResourceFenced, StatusMatch, ""},
		{checker.ResourceIntact, StatusInconclusive, "the fence was not put to the test"},
		{checker.ResourceDamaged, StatusMismatch, "the resource was damaged, expected fenced"},
	} {
		got, why := e.Assess(run(tc.state), true)
		if got != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("resource %s: %s (%s), want %s (%q)", tc.state, got, why, tc.want, tc.why)
		}
	}
	// An intact resource where the verdict differs is still a mismatch.
	safe := run(checker.ResourceIntact)
	safe.Verdict, safe.Mutex.OverlapCount, safe.Evidence.Overlaps, safe.Evidence.LandedFaultOverlaps = checker.Safe, 0, nil, 0
	safe.Evidence.LeasesLost, safe.Evidence.LeasesKept = 0, 1
	if got, _ := e.Assess(safe, true); got != StatusMismatch {
		t.Errorf("safe and intact where a violation and a fenced resource were expected: %s, want mismatch", got)
	}
}

// A violation whose every overlap came from a fault the machine overdid
// (a starved client held off the CPU beyond the fault's stops) is no
// evidence either way, whatever was expected; one overlap the fault as
// asked explains makes the run evidence again.
func TestAViolationOnlyAnOverdoneFaultExplainsIsNoEvidence(t *testing.T) {
	overdone := "the machine held client 3 off the CPU past 2 of its runs"
	run := func(faults ...checker.FaultWindow) checker.Result {
		var overlaps []checker.Overlap
		for _, f := range faults {
			overlaps = append(overlaps, checker.Overlap{Cause: checker.CauseFault, Faults: []int{f.ID}})
		}
		return checker.Result{
			Verdict:  checker.Violation,
			Faults:   faults,
			Mutex:    checker.MutexResult{OverlapCount: len(overlaps), Overlaps: overlaps},
			Evidence: checker.Evidence{Faults: len(faults), Landed: len(faults), LeasesLost: 1, Overlaps: map[string]int{checker.CauseFault: len(overlaps)}, LandedFaultOverlaps: len(overlaps)},
		}
	}
	starved := checker.FaultWindow{ID: 1, Landed: true, Overdone: overdone}
	asAsked := checker.FaultWindow{ID: 2, Landed: true}
	for _, e := range []Expectation{{Verdict: checker.Safe}, {Verdict: checker.Violation}} {
		got, why := e.Assess(run(starved), true)
		if got != StatusInconclusive || !strings.Contains(why, overdone) {
			t.Errorf("expected %s, only an overdone fault's overlap: %s (%s), want inconclusive saying why", e.Verdict, got, why)
		}
		if res := run(starved); res.NoEvidence() == "" {
			t.Errorf("NoEvidence of a run only an overdone fault broke: \"\"")
		}
	}
	if got, _ := (Expectation{Verdict: checker.Safe}).Assess(run(starved, asAsked), true); got != StatusMismatch {
		t.Errorf("expected safe, an overlap of a fault as asked beside an overdone one's: %s, want mismatch", got)
	}
	if got, _ := (Expectation{Verdict: checker.Violation}).Assess(run(starved, asAsked), true); got != StatusMatch {
		t.Errorf("expected violation, an overlap of a fault as asked beside an overdone one's: %s, want match", got)
	}
}

// A "violation?" cell (Expectation.Chance): a fault that can break the
// lock, not by construction. A violation counts only as any violation does
// (from an overlap a landed fault caused), safe only when a fault landed;
// a run without a landed fault is no evidence either way.
func TestAViolationByChanceMeetsEitherVerdictOnEvidence(t *testing.T) {
	e := Expectation{Verdict: checker.Violation, Chance: true}
	broke := checker.Result{
		Verdict:  checker.Violation,
		Mutex:    checker.MutexResult{OverlapCount: 1},
		Evidence: checker.Evidence{Faults: 1, Landed: 1, LeasesLost: 1, Overlaps: map[string]int{checker.CauseFault: 1}, LandedFaultOverlaps: 1},
	}
	held := checker.Result{Verdict: checker.Safe, Evidence: checker.Evidence{Faults: 2, Landed: 1, LeasesKept: 1}}
	unlanded := checker.Result{Verdict: checker.Safe, Evidence: checker.Evidence{Faults: 2}}
	otherCause := broke
	otherCause.Evidence = checker.Evidence{Faults: 1, Landed: 1, Overlaps: map[string]int{checker.CauseNone: 1}}
	for _, tc := range []struct {
		name string
		res  checker.Result
		want Status
	}{
		{"broken by a landed fault", broke, StatusMatch},
		{"held under a landed fault", held, StatusMatch},
		{"no fault landed", unlanded, StatusInconclusive},
		{"broken, but not by the fault", otherCause, StatusInconclusive},
	} {
		if got, why := e.Assess(tc.res, true); got != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got, why, tc.want)
		}
	}
	if got := e.String(); got != "violation?" {
		t.Errorf("String() = %q, want violation?", got)
	}
	g, err := ParseGrid("grid.yaml", []byte("cell:\n  duration: 2s\nexpect:\n  token-lua:\n    none: safe\n    partition: violation?\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Chance["token-lua"]["partition"] || g.Expect["token-lua"]["partition"] != checker.Violation || g.Chance["token-lua"]["none"] {
		t.Errorf("parsed %v, chance %v: want partition a violation by chance", g.Expect, g.Chance)
	}
	if sure, _ := g.ExpectOf("token-lua"); sure["partition"] != "" || sure["none"] != checker.Safe {
		t.Errorf("ExpectOf: %v, want nothing expected of the chance cell", sure)
	}
	if _, err := ParseGrid("grid.yaml", []byte("cell:\n  duration: 2s\nexpect:\n  token-lua:\n    none: safe?\n")); err == nil {
		t.Errorf("safe? parsed; want it refused (safe by chance is not an expectation)")
	}
}
