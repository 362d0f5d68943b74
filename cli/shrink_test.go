package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/shrink"
)

// TestShrinkFindsTheMinimalPause shrinks a real violation on Redis — four
// clients, two keys, a client paused past its lease now and then — and
// checks the effect, never a timing: the minimal scenario has at most two
// clients, one key and one fault, and running it violates again.
func TestShrinkFindsTheMinimalPause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	violated := false
	for seed := 1; seed <= 3 && !violated; seed++ {
		os.RemoveAll(run)
		stdout, stderr, code := lockchaos(t, "run", "--lock", "token-lua", "--nemesis", "pause-client", "--clients", "4", "--keys", "2",
			"--ttl", "300ms", "--hold", "60ms", "--duration", "4s", "--seed", fmt.Sprint(seed), "--out", run)
		if code == ExitSetup || code == ExitUsage {
			t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
		}
		violated = code == ExitViolation
	}
	if !violated {
		t.Fatal("three runs of token-lua under pause-client did not violate")
	}

	out := filepath.Join(dir, "min")
	stdout, stderr, code := lockchaos(t, "shrink", run, "--tries", "2", "--budget", "30s", "--out", out)
	if code != ExitShrunk {
		t.Fatalf("shrink: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, f := range []string{rundir.ShrinkScenarioFile, rundir.ShrinkWitnessFile, rundir.ShrinkReportFile, "minimal/report.html", "minimal/history.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the shrink did not write %s: %v", f, err)
		}
	}
	if !strings.Contains(stderr, "shrink: #1 the original") || !strings.Contains(stderr, "— best: ") {
		t.Errorf("no progress lines on stderr:\n%s", stderr)
	}
	rep, err := shrink.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Reproduced || len(rep.Candidates) < 2 || rep.Verify == nil || rep.Verify.Runs != 2 {
		b, _ := json.MarshalIndent(rep, "", " ")
		t.Errorf("shrink.json: %s", b)
	}
	scen := filepath.Join(out, rundir.ShrinkScenarioFile)
	s, err := scenarios.LoadFile(scen)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	if s.Config.Replay != nil {
		for _, n := range s.Config.Replay.Nemeses {
			steps += len(n.Steps)
		}
	}
	if s.Config.Clients > 2 || s.Config.Keys != 1 || steps != 1 || s.Expect.String() != "violation" {
		b, _ := os.ReadFile(scen)
		t.Errorf("minimal.yaml: %d clients, %d keys, %d fault steps, expects %s; want at most 2 clients, 1 key, 1 step, a violation\n%s", s.Config.Clients, s.Config.Keys, steps, s.Expect, b)
	}
	w, _ := os.ReadFile(filepath.Join(out, rundir.ShrinkWitnessFile))
	if !strings.Contains(string(w), "pause-client") || !strings.Contains(string(w), "acquired lock:0") {
		t.Errorf("witness.md tells no pause:\n%s", w)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "minimal", "report.html")); !strings.Contains(string(b), `id="witness"`) {
		t.Errorf("the minimal run's report has no witness")
	}

	// The scenario reproduces it (a run may miss; three may not all).
	violated = false
	for i := 1; i <= 3 && !violated; i++ {
		stdout, stderr, code := lockchaos(t, "run", "--scenario", scen, "--out", filepath.Join(dir, fmt.Sprintf("again-%d", i)))
		if code == ExitSetup || code == ExitUsage {
			t.Fatalf("run --scenario minimal.yaml: exit %d\n%s%s", code, stdout, stderr)
		}
		violated = code == ExitViolation
	}
	if !violated {
		t.Error("run --scenario minimal.yaml did not violate in 3 runs")
	}
}

// fakeRun makes a folder with a run's files and the verdict given, for
// shrink to refuse before it runs anything.
func fakeRun(dir, verdict string) string {
	os.MkdirAll(dir, 0o755)
	for _, f := range []string{"config.json", "schedule.json", "history.jsonl"} {
		os.WriteFile(filepath.Join(dir, f), []byte(`{"Lock":"token-lua","nemeses":[]}`), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "result.json"), []byte(`{"verdict":"`+verdict+`"}`), 0o644)
	return dir
}

func TestShrinkUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	safe := fakeRun(filepath.Join(dir, "safe"), "safe")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"shrink"}, "usage: lockchaos shrink DIR"},
		{[]string{"shrink", dir, "--tries", "0"}, "--tries 0: want at least 1"},
		{[]string{"shrink", "--budget", "10", dir}, `invalid value "10" for --budget`},
		{[]string{"shrink", dir, "--budget", "2ttl"}, "want a plain duration"},
		{[]string{"shrink", dir, dir}, "one run folder at a time"},
		{[]string{"shrink", filepath.Join(dir, "none")}, "is not a run folder"},
		{[]string{"shrink", safe}, "its verdict is safe: only a violation can be shrunk"},
		{[]string{"shrink", safe, "--out", safe}, "give another folder than the run it shrinks"},
	} {
		_, stderr, code := lockchaos(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("lockchaos %v: exit %d, stderr %q; want exit %d saying %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
}

// TestChaosShrinksAMismatch: chaos --shrink shrinks the cell that violated
// against its expectation into OUT/CELL.shrink, and the index links it.
func TestChaosShrinksAMismatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tinyScenario(t, dir, "wrongly-safe", "token-lua", "2ttl", "safe")
	out := filepath.Join(dir, "out")
	stdout, stderr, code := lockchaos(t, "chaos", "--scenarios", filepath.Join(dir, "*.yaml"), "--out", out, "--shrink", "--shrink-budget", "15s")
	if code != ExitMatrixMismatch {
		t.Fatalf("exit %d, want %d (the verdict differs)\n%s\n%s", code, ExitMatrixMismatch, stdout, stderr)
	}
	scen := filepath.Join(out, "wrongly-safe.shrink", rundir.ShrinkScenarioFile)
	if _, err := os.Stat(scen); err != nil || !strings.Contains(stderr, "shrink wrongly-safe: ") {
		t.Fatalf("no shrink of the mismatch (%v)\n%s\n%s", err, stdout, stderr)
	}
	index, _ := os.ReadFile(filepath.Join(out, "index.html"))
	if !strings.Contains(string(index), `href="wrongly-safe.shrink/minimal.yaml"`) {
		t.Errorf("index.html does not link the shrink")
	}
}
