package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// row builds a comparison row of lock under nemesis from its runs' outcomes.
func row(lock, nemesis string, runs ...compare.Run) compare.Row {
	r := compare.Row{Lock: lock, Nemesis: nemesis, Status: compare.StatusRan, Seeds: len(runs), Runs: runs, Dir: lock + "+" + nemesis}
	for i := range r.Runs {
		r.Runs[i].Seed = int64(i + 1)
		r.Runs[i].Dir = r.Dir + "/seed" + string(rune('1'+i))
		switch r.Runs[i].Outcome {
		case compare.OutcomeViolation:
			r.Violations++
			r.LostUpdatesTotal += r.Runs[i].LostUpdates
		case compare.OutcomeSafe:
			r.Safe++
		}
	}
	if n := r.Violations + r.Safe; n > 0 {
		p := float64(r.Violations) / float64(n)
		lo, hi := compare.Wilson(r.Violations, n)
		r.DetectionRate, r.CILow, r.CIHigh = &p, &lo, &hi
	}
	return r
}

func run(outcome string, landed int, res checker.ResourceState) compare.Run {
	return compare.Run{Outcome: outcome, Landed: landed, Resource: res, Acquires: 100, AcquiresOK: 50, FaultAcquires: 20, FaultAcquiresOK: 2, LostUpdates: 3}
}

// The audit sums the comparison up per fault of the audited lock: broken
// where a seed violated (however many did not), held only where every
// seed that was evidence was safe, and neither where none was evidence; a
// claim broken or unverified is named; fencing is judged from the fenced
// reference's resource under the same fault.
func TestSummarizeJudgesEachFaultFromItsSeeds(t *testing.T) {
	spec := Spec{Lock: "set-nx-px", Refs: []string{"token-lua", "etcd-mutex-fenced"},
		Nemeses: []string{"none", "pause-client", "crash-restart", "clock-jump", "failover-sentinel"},
		Claims:  []string{"crash-restart", "pause-client", "clock-jump"}, Seeds: 3, MinSeeds: 2}
	na := compare.Row{Lock: "set-nx-px", Nemesis: "failover-sentinel", Status: compare.SkipNA, Why: "needs redis-sentinel", Runs: []compare.Run{}}
	cmp := compare.Comparison{Rows: []compare.Row{
		row("set-nx-px", "none", run(compare.OutcomeSafe, 0, checker.ResourceIntact), run(compare.OutcomeSafe, 0, checker.ResourceIntact)),
		row("set-nx-px", "pause-client", run(compare.OutcomeSafe, 1, checker.ResourceIntact), run(compare.OutcomeViolation, 1, checker.ResourceDamaged)),
		row("set-nx-px", "crash-restart", run(compare.OutcomeSafe, 1, checker.ResourceIntact), run(compare.OutcomeSafe, 2, checker.ResourceIntact), run(compare.OutcomeSafe, 1, checker.ResourceIntact)),
		row("set-nx-px", "clock-jump", run(compare.OutcomeNoEvidence, 0, checker.ResourceIntact)),
		na,
		row("etcd-mutex-fenced", "pause-client", run(compare.OutcomeViolation, 1, checker.ResourceFenced), run(compare.OutcomeViolation, 1, checker.ResourceIntact)),
		row("token-lua", "pause-client", run(compare.OutcomeViolation, 1, checker.ResourceDamaged)),
	}}
	a := Summarize(spec, cmp, map[string]checker.Verdict{"none": checker.Safe, "pause-client": checker.Violation, "crash-restart": checker.Violation})
	want := map[string]string{"none": Held, "pause-client": Broken, "crash-restart": Held, "clock-jump": NoEvidence, "failover-sentinel": NA}
	if len(a.Classes) != len(want) {
		t.Fatalf("%d classes, want %d: %+v", len(a.Classes), len(want), a.Classes)
	}
	by := map[string]Class{}
	for _, c := range a.Classes {
		by[c.Nemesis] = c
		if c.Status != want[c.Nemesis] {
			t.Errorf("%s: status %q, want %q", c.Nemesis, c.Status, want[c.Nemesis])
		}
	}
	if got := strings.Join(a.ClaimsBroken, ","); got != "pause-client" {
		t.Errorf("claims broken %q, want pause-client", got)
	}
	if got := strings.Join(a.ClaimsUnverified, ","); got != "clock-jump" {
		t.Errorf("claims unverified %q, want clock-jump (no seed was evidence)", got)
	}
	pc := by["pause-client"]
	if pc.Fencing != "saved" || pc.FencedBy != "etcd-mutex-fenced" {
		t.Errorf("pause-client fencing %q by %q, want saved by etcd-mutex-fenced (its resource stayed intact)", pc.Fencing, pc.FencedBy)
	}
	if by["none"].Fencing != "" {
		t.Errorf("fencing judged for a fault that did not break the lock: %q", by["none"].Fencing)
	}
	if pc.FaultsLanded != 2 || pc.LostUpdates != 3 {
		t.Errorf("pause-client: %d faults landed, %d lost updates; want 2 and 3", pc.FaultsLanded, pc.LostUpdates)
	}
	// 2 of 20 acquires granted during faults, 48 of 80 outside, per seed.
	if pc.GrantedDuring == nil || *pc.GrantedDuring != 0.1 || pc.GrantedOutside == nil || *pc.GrantedOutside != 0.6 {
		t.Errorf("pause-client granted during %v outside %v, want 0.1 and 0.6", pc.GrantedDuring, pc.GrantedOutside)
	}
	md := a.Markdown()
	for _, s := range []string{
		"| pause-client | **broken 1/2** (claimed) | violation |",
		"| crash-restart | held 0/3 (claimed) | violation ≠ |",
		"**Differs from the catalogue**: under crash-restart the catalogue expects violation, and the audit found it held in 3 of 3 seeds.",
		"- **pause-client** broke it in 1 of 2 seeds",
		"fencing would have saved the data (`etcd-mutex-fenced`'s resource stayed intact under the same fault)",
		"broken 2/2, data intact", // the fenced reference's own verdict
		"- **crash-restart**: safe in 3 of 3 seeds, 4 faults landed",
		"- **clock-jump**: no evidence",
		"- **failover-sentinel**: n/a: needs redis-sentinel",
		"**Broken**: `pause-client`",
		"**Not verified** (fewer than 3 seeds of evidence): `clock-jump`",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("audit.md lacks %q:\n%s", s, md)
		}
	}
}

// The references of a lock never include the lock itself (that each
// store names registered locks is a test of package locks).
func TestALockIsNotItsOwnReference(t *testing.T) {
	tl, _ := locks.Lookup("token-lua")
	refs := References(tl)
	if len(refs) == 0 {
		t.Fatal("token-lua has no references")
	}
	for _, r := range refs {
		if r == "token-lua" {
			t.Error("token-lua is its own reference")
		}
	}
}

// A --budget ends the runs when their share of it is spent: every fault
// has as many seeds as the others (they advance seed by seed together),
// and the audit says what it left out; nothing is called interrupted.
// The runs are stand-ins (this is the scheduling, not a lock).
func TestBudgetEndsTheRunsEvenlyAndSaysSo(t *testing.T) {
	run := func(ctx context.Context, cfg settings.Run) (checker.Result, error) {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return checker.Result{Verdict: checker.Safe, Nemesis: cfg.Nemeses, Evidence: checker.Evidence{Faults: 1, Landed: 1, Overlaps: map[string]int{}},
			Acquire: checker.AcquireStats{Attempted: 10, OK: 5}}, nil
	}
	spec := Spec{Lock: "token-lua", Refs: []string{"etcd-mutex-fenced"}, Nemeses: []string{"pause-client", "partition"},
		Seeds: 1000, FirstSeed: 1, MinSeeds: 3, Parallel: 1, Budget: time.Second, ShrinkBudget: time.Minute, ShrinkTries: 1}
	var cells []compare.Cell
	for _, l := range []string{"token-lua", "etcd-mutex-fenced"} {
		for _, n := range spec.Nemeses {
			cells = append(cells, compare.Cell{Lock: l, Nemesis: n, Config: settings.Run{Lock: l, Nemeses: []string{n}, Seed: 1, Workload: workload.Workload{TTL: 300 * time.Millisecond}}})
		}
	}
	a, cmp := Run(context.Background(), spec, cells, Options{Options: compare.Options{Out: t.TempDir(), Run: run}})
	if a.Interrupted || cmp.Interrupted {
		t.Error("a budget spent is not an interrupt")
	}
	if len(a.LeftOut) != 1 || !strings.Contains(a.LeftOut[0], "--budget 1s") {
		t.Errorf("left out %q: want the budget named", a.LeftOut)
	}
	lo, hi := 1000, 0
	for _, r := range cmp.Rows {
		lo, hi = min(lo, r.Seeds), max(hi, r.Seeds)
	}
	if lo < 1 || hi-lo > 1 || hi >= 1000 {
		t.Errorf("the cells ran %d to %d of 1000 seeds: want every cell some, within one of the others, none all", lo, hi)
	}
	if c := a.Classes[0]; c.Status != Held || c.Safe != c.Seeds {
		t.Errorf("pause-client: %+v, want held over the seeds that ran", c)
	}
	if !strings.Contains(a.Markdown(), "**Left out**: the runs reached 70% of the --budget 1s and stopped") {
		t.Errorf("audit.md does not say what the budget left out:\n%s", a.Markdown())
	}
}
