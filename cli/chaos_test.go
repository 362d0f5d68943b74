package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
)

// tinyScenario writes a scenario file of a short run to dir.
func tinyScenario(t *testing.T, dir, name, lock, hold, expect string) string {
	t.Helper()
	src := `shows: a tiny run for the tests
source: cli tests
expect:
  verdict: ` + expect + `
lock:
  name: ` + lock + `
workload:
  clients: 3
  ttl: 300ms
  hold: ` + hold + `
duration: 1500ms
`
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChaosComparesEachVerdictWithItsExpectation runs a matrix of three
// tiny scenarios on real Redis, one of them expecting the wrong verdict: the
// matrix must fail because of that one, and leave every file it promises.
func TestChaosComparesEachVerdictWithItsExpectation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tinyScenario(t, dir, "safe-ok", "token-lua", "20ms", "safe")
	tinyScenario(t, dir, "broken-ok", "set-nx-px", "2ttl", "violation")
	tinyScenario(t, dir, "wrongly-safe", "token-lua", "2ttl", "safe")
	out := filepath.Join(dir, "out")
	junit := filepath.Join(dir, "junit.xml")
	stdout, stderr, code := lockchaos(t, "chaos", "--scenarios", filepath.Join(dir, "*.yaml"), "--parallel", "3", "--junit", junit, "--out", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (one verdict differs from its expectation)\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "MISMATCH wrongly-safe: expected safe, got violation") || !strings.Contains(stderr, "[3/3 ") {
		t.Errorf("the output does not name the mismatch, or shows no progress:\n%s\n%s", stdout, stderr)
	}
	sum, err := scenarios.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]scenarios.Status{"safe-ok": scenarios.StatusMatch, "broken-ok": scenarios.StatusMatch, "wrongly-safe": scenarios.StatusMismatch}
	for _, c := range sum.Cells {
		if c.Status != want[c.Name] {
			t.Errorf("%s: %s (%s), want %s", c.Name, c.Status, c.Detail, want[c.Name])
		}
		for _, f := range []string{"history.jsonl", "result.json", "report.html", "porcupine.html"} {
			if _, err := os.Stat(filepath.Join(out, c.Dir, f)); err != nil {
				t.Errorf("%s: %v", c.Name, err)
			}
		}
	}
	if len(sum.Cells) != 3 || sum.Passed {
		t.Errorf("summary: %d cells, passed %v", len(sum.Cells), sum.Passed)
	}
	index, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil || !strings.Contains(string(index), `href="wrongly-safe/report.html"`) {
		t.Errorf("index.html does not link the runs (%v)", err)
	}
	if b, err := os.ReadFile(junit); err != nil || strings.Count(string(b), "<testcase ") != 3 || strings.Count(string(b), "<failure ") != 1 {
		t.Errorf("junit.xml: %v\n%s", err, b)
	}

	// The pages can be rendered again from the files alone.
	os.Remove(filepath.Join(out, "index.html"))
	os.Remove(filepath.Join(out, "broken-ok", "report.html"))
	if stdout, stderr, code := lockchaos(t, "report", out); code != 0 {
		t.Errorf("report: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, f := range []string{"index.html", "broken-ok/report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("report did not render %s: %v", f, err)
		}
	}
}

// TestRunScenarioFlagsOverrideOnlyWhatTheySet: the explicitly given flags
// win, everything else comes from the file.
func TestRunScenarioFlagsOverrideOnlyWhatTheySet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := tinyScenario(t, dir, "quiet", "token-lua", "20ms", "safe")
	out := filepath.Join(dir, "run")
	stdout, stderr, code := lockchaos(t, "run", "--scenario", file, "--seed", "7", "--duration", "1s", "--out", out)
	if code != ExitSafe {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "scenario quiet expects safe: as expected") || !strings.Contains(stdout, "report: "+filepath.Join(out, "report.html")) {
		t.Errorf("stdout:\n%s", stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg settings.Run
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Seed != 7 || cfg.Duration != time.Second || cfg.Hold != 20*time.Millisecond || cfg.TTL != 300*time.Millisecond || cfg.Clients != 3 || cfg.Lock != "token-lua" {
		t.Errorf("config.json %s: want seed 7 and duration 1s from the flags, the rest from the file", b)
	}
}

func TestChaosAndRunScenarioUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	later := filepath.Join(dir, "later.yaml")
	os.WriteFile(later, []byte("shows: x\nexpect:\n  verdict: safe\nlock:\n  name: chubby\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("shows: x\nexpect:\n  verdict: maybe\nlock:\n  name: token-lua\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"chaos", "--scenarios", "no-such-scenario*", "--out", dir}, "matches no scenario or grid cell"},
		{[]string{"chaos", "--parallel", "0"}, "--parallel 0"},
		{[]string{"chaos", "--quick", "--update-baseline"}, "--update-baseline records the full matrix"},
		{[]string{"run", "--scenario", later, "--out", dir}, "later.yaml:5: lock.name: lock chubby not available"},
		{[]string{"run", "--scenario", bad, "--out", dir}, "bad.yaml:3: expect.verdict: \"maybe\": want safe or violation"},
		{[]string{"report", dir}, "holds neither a run's history.jsonl nor a matrix's summary.json"},
	} {
		_, stderr, code := lockchaos(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("lockchaos %v: exit %d, stderr %q; want exit %d saying %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
}
