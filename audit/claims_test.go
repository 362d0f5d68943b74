package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// A claim is verified only on at least 3 seeds of evidence (ClaimSeeds):
// held 0/1 (interval [0 %, 79 %]) or 0/2 says nothing, and the audit names
// the claim as not verified, in audit.md's verdict line; held 0/3 verifies
// it. An audit that plans fewer seeds than a claim needs is refused before
// it runs.
func TestAClaimNeedsThreeSeedsOfEvidence(t *testing.T) {
	safe := func(n int) []compare.Run {
		var runs []compare.Run
		for i := 0; i < n; i++ {
			runs = append(runs, run(compare.OutcomeSafe, 1, checker.ResourceIntact))
		}
		return runs
	}
	for seeds := 1; seeds <= 4; seeds++ {
		spec := Spec{Lock: "set-nx-px", Nemeses: []string{"latency"}, Claims: []string{"latency"}, Seeds: seeds, MinSeeds: 3, ShrinkBudget: time.Minute}
		a := Summarize(spec, compare.Comparison{Rows: []compare.Row{row("set-nx-px", "latency", safe(seeds)...)}}, nil)
		verified := seeds >= 3
		if got := len(a.ClaimsUnverified) == 0; got != verified {
			t.Errorf("held 0/%d: verified %v, want %v (unverified %v)", seeds, got, verified, a.ClaimsUnverified)
		}
		md := a.Markdown()
		first := strings.SplitN(md, "\n", 2)[0]
		want := fmt.Sprintf("**Verdict: claims held** — latency safe in %d of %d seeds.", seeds, seeds)
		if !verified {
			want = "**Verdict: not enough evidence** for `latency`"
		}
		if !strings.HasPrefix(first, want) {
			t.Errorf("held 0/%d: audit.md begins %q, want %q", seeds, first, want)
		}
		err := spec.Validate()
		if refused := err != nil && strings.Contains(err.Error(), "a claim is verified on at least 3 seeds"); refused == verified {
			t.Errorf("--seeds %d with a claim: Validate says %v", seeds, err)
		}
	}
}

// audit.md counts in words that agree with their numbers ("1 seed", "1
// update"), names no fault as left out when the budget left nothing out,
// and for a lock outside the catalogue shows its claims where the
// catalogue's expectations go.
func TestAuditMarkdownWording(t *testing.T) {
	one := run(compare.OutcomeViolation, 1, checker.ResourceDamaged)
	one.LostUpdates = 1
	spec := Spec{Lock: "set-nx-px", Nemeses: []string{"none", "pause-client"}, Claims: []string{"none"}, Seeds: 1}
	cmp := compare.Comparison{Rows: []compare.Row{row("set-nx-px", "none", run(compare.OutcomeSafe, 0, checker.ResourceIntact)), row("set-nx-px", "pause-client", one)}}
	a := Summarize(spec, cmp, map[string]checker.Verdict{"none": checker.Safe})
	a.ExpectFrom = "claims"
	md := a.Markdown()
	for _, s := range []string{"ran up to 1 seed (", "broke it in 1 of 1 seed (", "1 update of the protected counter lost", "safe in 1 of 1 seed;",
		"| fault | set-nx-px | claimed |", "| none | held 0/1 (claimed) | safe |", "| pause-client | **broken 1/1** | – |", "beside no reference lock"} {
		if !strings.Contains(md, s) {
			t.Errorf("audit.md lacks %q:\n%s", s, md)
		}
	}
	for _, s := range []string{"1 seeds", "1 updates", "1 faults", "catalogue expects"} {
		if strings.Contains(md, s) {
			t.Errorf("audit.md says %q:\n%s", s, md)
		}
	}

	// A budget the runs did not reach leaves nothing out.
	stand := func(ctx context.Context, cfg settings.Run) (checker.Result, error) {
		return checker.Result{Verdict: checker.Safe, Nemesis: cfg.Nemeses, Evidence: checker.Evidence{Faults: 1, Landed: 1, Overlaps: map[string]int{}},
			Acquire: checker.AcquireStats{Attempted: 10, OK: 5}}, nil
	}
	spec = Spec{Lock: "token-lua", Nemeses: []string{"pause-client"}, Seeds: 3, FirstSeed: 1, MinSeeds: 3, Parallel: 1, Budget: time.Hour, ShrinkBudget: time.Minute, ShrinkTries: 1}
	cells := []compare.Cell{{Lock: "token-lua", Nemesis: "pause-client", Config: settings.Run{Lock: "token-lua", Nemeses: []string{"pause-client"}, Seed: 1, Workload: workload.Workload{TTL: 300 * time.Millisecond}}}}
	a, _ = Run(context.Background(), spec, cells, Options{Options: compare.Options{Out: t.TempDir(), Run: stand}})
	if len(a.LeftOut) > 0 || strings.Contains(a.Markdown(), "Left out") {
		t.Errorf("every seed ran within the budget, yet left out %q", a.LeftOut)
	}
}
