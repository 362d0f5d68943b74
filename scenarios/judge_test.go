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
