package cli

import (
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/scenarios"
)

// run --junit: a run of a scenario is judged by what the scenario expects
// (Expectation.Assess), not by its exit status, which is the verdict's (a
// violation exits 1 whether the scenario expected it or not); a run with
// no expectation expects safe.
func TestRunJUnitJudgesAScenarioByItsExpectation(t *testing.T) {
	t.Parallel()
	expecting := func(v checker.Verdict) *scenarios.Scenario {
		return &scenarios.Scenario{Name: "s", Expect: scenarios.Expectation{Verdict: v}}
	}
	for _, tc := range []struct {
		name string
		sc   *scenarios.Scenario
		got  checker.Verdict
		code int
		want scenarios.Status
	}{
		{"expects safe, violated", expecting(checker.Safe), checker.Violation, ExitViolation, scenarios.StatusMismatch},
		{"expects a violation, violated", expecting(checker.Violation), checker.Violation, ExitViolation, scenarios.StatusMatch},
		{"expects a violation, safe", expecting(checker.Violation), checker.Safe, ExitSafe, scenarios.StatusMismatch},
		{"expects safe, safe", expecting(checker.Safe), checker.Safe, ExitSafe, scenarios.StatusMatch},
		{"no scenario, violated", nil, checker.Violation, ExitViolation, scenarios.StatusMismatch},
		{"no scenario, no evidence", nil, checker.Inconclusive, ExitInconclusive, scenarios.StatusInconclusive},
	} {
		res := checker.Result{Lock: "token-lua", Verdict: tc.got, Summary: string(tc.got)}
		if got := runMatrix(res, tc.sc, tc.code).Cells[0].Status; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
