package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/compare"
)

// TestMarginOfAPlainLeaseOnRealRedis searches the pause that breaks
// set-nx-px (a key with a TTL, no token): a pause of 4 TTLs breaks it by
// construction (its holder writes long after the key expired and another
// client took it). The size that broke it must show a violation in its
// run's own result.json, the size below it none, and margin.md must give
// the interval and every size run.
func TestMarginOfAPlainLeaseOnRealRedis(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "margin")
	stdout, stderr, code := lockchaos(t, "margin", "--locks", "set-nx-px", "--nemeses", "pause-client",
		"--seeds", "1", "--steps", "1", "--parallel", "1", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var ms compare.Margins
	b, err := os.ReadFile(filepath.Join(out, compare.MarginJSONFile))
	if err == nil {
		err = json.Unmarshal(b, &ms)
	}
	if err != nil || len(ms.Margins) != 1 {
		t.Fatalf("margin.json: %v, %d margins\n%s", err, len(ms.Margins), stderr)
	}
	m := ms.Margins[0]
	if _, ok := m.Options["duration"]; ok || m.Fault() != "pause-client" {
		t.Errorf("the fault's other options %v name the size the search varies (fault %q)", m.Options, m.Fault())
	}
	if m.Breaks == nil || m.Unbroken == nil || m.Breaks.X <= m.Unbroken.X {
		t.Fatalf("no interval: %s\n%s", m.Says(), stderr)
	}
	verdicts := func(p *compare.Probe) (vs []checker.Verdict) {
		for _, r := range p.Row.Runs {
			var res checker.Result
			b, err := os.ReadFile(filepath.Join(out, r.Dir, "result.json"))
			if err == nil {
				err = json.Unmarshal(b, &res)
			}
			if err != nil {
				t.Fatalf("%s: %v", r.Dir, err)
			}
			if p == m.Breaks && res.Verdict == checker.Violation && res.Evidence.LandedFaultOverlaps == 0 {
				t.Errorf("%s: a violation at the breaking size that no landed fault caused", r.Dir)
			}
			vs = append(vs, res.Verdict)
		}
		return vs
	}
	if vs := verdicts(m.Breaks); len(vs) == 0 || vs[0] != checker.Violation {
		t.Errorf("the breaking size %s: its runs' verdicts %v, want a violation", m.Breaks.Value, vs)
	}
	for _, v := range verdicts(m.Unbroken) {
		if v == checker.Violation {
			t.Errorf("the size below, %s, has a violation among its runs", m.Unbroken.Value)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, compare.MarginMDFile))
	want := "| set-nx-px | pause-client | duration 0.1ttl…4ttl | " + m.Unbroken.Value
	if err != nil || !strings.Contains(string(md), want) || strings.Count(string(md), "| set-nx-px | pause-client | duration=") != len(m.Probes) {
		t.Errorf("margin.md lacks the row %q or a size run (%v):\n%s", want, err, md)
	}
	if !strings.Contains(stdout, "breaks at duration="+m.Breaks.Value) {
		t.Errorf("stdout does not give the margin:\n%s", stdout)
	}
}

func TestMarginRefusesBadInputNamingTheFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--locks", "set-nx-px", "--nemeses", "kill-client"}, "--nemeses kill-client: kill-client declares no size to vary: give --vary"},
		{[]string{"--locks", "set-nx-px", "--from", "3ttl", "--to", "1ttl"}, "--from 3ttl is not below --to 1ttl"},
		{[]string{"--locks", "set-nx-px", "--steps", "50"}, "--steps 50"},
		{[]string{"--locks", "set-nx-pz"}, "--locks: "},
	} {
		_, stderr, code := lockchaos(t, append([]string{"margin", "--out", t.TempDir()}, c.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("margin %v: exit %d, %q; want %d and %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
}
