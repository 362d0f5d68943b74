package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/compare"
)

// The audit's JUnit report (the one writer of chaos --junit): a claimed
// fault is a case that passes held on ClaimSeeds seeds, fails as not
// enough evidence on fewer, and fails as a mismatch when it broke the
// lock; a fault not claimed is only observed (skipped).
func TestAuditJUnitHoldsTheClaims(t *testing.T) {
	spec := Spec{Lock: "set-nx-px", Nemeses: []string{"none", "latency", "pause-client", "partition"}, Claims: []string{"latency", "pause-client", "partition"}, Seeds: 3}
	safe := run(compare.OutcomeSafe, 1, checker.ResourceIntact)
	cmp := compare.Comparison{Rows: []compare.Row{
		row("set-nx-px", "none", safe),
		row("set-nx-px", "latency", safe, safe, safe),
		row("set-nx-px", "pause-client", run(compare.OutcomeViolation, 1, checker.ResourceDamaged)),
		row("set-nx-px", "partition", safe, safe),
	}}
	a := Summarize(spec, cmp, nil)
	path := filepath.Join(t.TempDir(), "a.xml")
	if err := a.Matrix().JUnit(path, "au"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	x := string(b)
	for _, s := range []string{
		`<testsuites name="lockchaos audit" tests="4" failures="2" errors="0" skipped="1"`,
		`<testcase name="set-nx-px+latency" classname="lockchaos.audit.set-nx-px"`,
		`expected safe, got violation`,
		`not enough evidence for partition: 2 of the 3 seeds needed`,
		`no expectation, only observed`,
	} {
		if !strings.Contains(x, s) {
			t.Errorf("JUnit lacks %q:\n%s", s, x)
		}
	}
}
