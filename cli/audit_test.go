package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/audit"
	"github.com/lockchaos/lockchaos/rundir"
)

// An audit of a real lock on a real Redis: set-nx-px claims to survive no
// fault and a client's pause. The pause breaks it (by construction: the
// grid pauses the holder for 3 TTLs), so the audit exits 1, names the
// claim and its witness, a minimal scenario that violates; the fault-free
// column holds. `lockchaos report` sums the same runs up again alike.
func TestAuditHoldsALockToItsClaims(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "audit")
	stdout, stderr, code := lockchaos(t, "audit", "--lock", "set-nx-px", "--nemeses", "none,pause-client", "--refs", "token-lua",
		"--claims", "none,pause-client", "--seeds", "3", "--min-seeds", "2", "--parallel", "2",
		"--shrink-budget", "20s", "--shrink-tries", "1", "--out", out)
	if code != ExitClaimsBroken {
		t.Fatalf("audit: exit %d, want %d (a claim broke)\n%s%s", code, ExitClaimsBroken, stdout, stderr)
	}
	if !strings.Contains(stdout, "CLAIM BROKEN: pause-client broke set-nx-px (witness: "+filepath.Join(out, "witness", "pause-client", rundir.ShrinkWitnessFile)+")") {
		t.Errorf("stdout names no broken claim and witness:\n%s", stdout)
	}
	a, err := audit.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(a.ClaimsBroken, ",") != "pause-client" || len(a.ClaimsUnverified) != 0 {
		t.Errorf("claims broken %v, unverified %v; want pause-client and none", a.ClaimsBroken, a.ClaimsUnverified)
	}
	if len(a.Classes) != 2 || a.Classes[0].Status != audit.Held || a.Classes[1].Status != audit.Broken {
		t.Fatalf("classes %+v: want none held, pause-client broken", a.Classes)
	}
	pc := a.Classes[1]
	if pc.FaultsLanded == 0 || pc.Expected != "violation" || len(pc.Refs) != 1 || pc.Refs[0].Lock != "token-lua" || pc.Refs[0].Seeds == 0 {
		t.Errorf("pause-client: %d faults landed, catalogue expects %q, refs %+v", pc.FaultsLanded, pc.Expected, pc.Refs)
	}
	w := pc.Witness
	if w == nil || !w.Shrunk || w.Scenario == "" {
		t.Fatalf("pause-client's witness %+v: want a minimal scenario", w)
	}
	for _, f := range []string{rundir.AuditMarkdownFile, rundir.AuditHTMLFile, "index.html", "compare.json", w.Scenario, w.Story, w.Report} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the audit did not write %s: %v", f, err)
		}
	}
	// The minimal scenario reproduces it (a run may miss; two may not).
	violated := false
	for i := 0; i < 2 && !violated; i++ {
		_, _, code := lockchaos(t, "run", "--scenario", filepath.Join(out, w.Scenario), "--out", filepath.Join(t.TempDir(), "again"))
		violated = code == ExitViolation
	}
	if !violated {
		t.Errorf("the witness %s did not violate in two runs", w.Scenario)
	}
	md, _ := os.ReadFile(filepath.Join(out, rundir.AuditMarkdownFile))
	if !strings.Contains(string(md), "- **pause-client** broke it in 2 of 2 seeds") || !strings.Contains(string(md), "Reproduce: `lockchaos run --scenario ") {
		t.Errorf("audit.md has no sentence with its command for the broken fault:\n%s", md)
	}
	if _, stderr, code := lockchaos(t, "report", out); code != 0 {
		t.Fatalf("report of the audit: exit %d\n%s", code, stderr)
	}
	again, _ := os.ReadFile(filepath.Join(out, rundir.AuditMarkdownFile))
	if string(again) != string(md) {
		t.Errorf("lockchaos report summed the same runs up otherwise:\n%s\nthen\n%s", md, again)
	}
}

// Claims that cannot be checked are refused before anything runs.
func TestAuditRefusesClaimsItCannotCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--lock", "token-lua", "--nemeses", "none", "--claims", "pause-client"}, "--claims pause-client: not among the faults audited (none)"},
		{[]string{"--lock", "etcd-mutex", "--nemeses", "failover-sentinel", "--claims", "failover-sentinel"}, "--claims failover-sentinel: the fault cannot run against etcd-mutex (n/a)"},
		{[]string{"--lock", "tokn-lua"}, "--lock:"},
		{[]string{}, "--lock: name the lock to audit"},
	} {
		_, stderr, code := lockchaos(t, append([]string{"audit", "--out", t.TempDir()}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.says) {
			t.Errorf("audit %v: exit %d, stderr %q; want %d saying %q", tc.args, code, stderr, ExitUsage, tc.says)
		}
	}
}
