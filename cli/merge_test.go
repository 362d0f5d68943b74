package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/scenarios"
)

// outcomes is what must agree between a sharded and an unsharded matrix:
// every cell, in order, with its expectation and outcome.
func outcomes(s scenarios.Summary) []string {
	var out []string
	for _, c := range s.Cells {
		out = append(out, c.Name+" expect="+c.Expect+" got="+c.Got+" status="+string(c.Status))
	}
	return out
}

// matrixOutput is what chaos --json and merge --json print.
type matrixOutput struct {
	scenarios.Summary
	Exit            int      `json:"exit"`
	Out             string   `json:"out"`
	Index           string   `json:"index"`
	JUnit           string   `json:"junit"`
	BaselineChanges []string `json:"baseline_changes"`
	MissingShards   []string `json:"missing_shards"`
}

func parseJSON(t *testing.T, stdout string) matrixOutput {
	t.Helper()
	var m matrixOutput
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("--json printed no JSON document on stdout (%v):\n%s", err, stdout)
	}
	return m
}

// TestChaosShardsMergeIntoTheUnshardedMatrix runs a small matrix on real
// Redis whole and in two shards, merges the shards, and compares: the same
// cells, the same outcomes, the same exit code, and pages and JUnit that
// point at runs that are there.
func TestChaosShardsMergeIntoTheUnshardedMatrix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tinyScenario(t, dir, "safe-ok", "token-lua", "20ms", "safe")
	tinyScenario(t, dir, "broken-ok", "set-nx-px", "2ttl", "violation")
	tinyScenario(t, dir, "wrongly-safe", "token-lua", "2ttl", "safe")
	os.WriteFile(filepath.Join(dir, "later.yaml"), []byte("shows: x\nexpect:\n  verdict: safe\nlock:\n  name: node-redlock\n"), 0o644)
	glob := filepath.Join(dir, "*.yaml")
	// No adapters here: node-redlock, a lock lockchaos ships, cannot run
	// (a name no build knows would be a usage error, not a skip).
	noAdapters := []string{locks.AdaptersEnv + "=" + t.TempDir()}

	stdout, stderr, code := lockchaosIn(t, "", noAdapters, "chaos", "--scenarios", glob, "--parallel", "3", "--json", "--out", filepath.Join(dir, "whole"))
	whole := parseJSON(t, stdout)
	if code != ExitMatrixMismatch || whole.Exit != code || whole.Outcome != scenarios.OutcomeMismatch || len(whole.Cells) != 4 {
		t.Fatalf("whole: exit %d, json exit %d, outcome %s, %d cells\n%s", code, whole.Exit, whole.Outcome, len(whole.Cells), stderr)
	}
	// --json leaves stdout to the document: the tables went to stderr, the
	// skipped cell with why, and counted in the last line.
	if !strings.Contains(stderr, "MISMATCH wrongly-safe: expected safe, got violation") ||
		!strings.Contains(stderr, "SKIPPED later: lock node-redlock not available") || !strings.Contains(stderr, "1 SKIPPED: 1 need what this build lacks") {
		t.Errorf("stderr:\n%s", stderr)
	}

	var shards []string
	var fromShards []string
	for _, sh := range []string{"1/2", "2/2"} {
		out := filepath.Join(dir, "shard"+sh[:1])
		shards = append(shards, out)
		stdout, stderr, code := lockchaosIn(t, "", noAdapters, "chaos", "--scenarios", glob, "--parallel", "3", "--shard", sh, "--out", out)
		if code != ExitMatrixPassed && code != ExitMatrixMismatch {
			t.Fatalf("shard %s: exit %d\n%s%s", sh, code, stdout, stderr)
		}
		if !strings.Contains(stderr, "shard "+sh+": ") || !strings.Contains(stdout, "[shard "+sh+"]") {
			t.Errorf("shard %s does not say which shard it ran:\n%s%s", sh, stdout, stderr)
		}
		s, err := scenarios.ReadSummary(out)
		if err != nil {
			t.Fatal(err)
		}
		fromShards = append(fromShards, outcomes(s)...)
	}
	merged := filepath.Join(dir, "merged")
	junit := filepath.Join(dir, "merged.xml")
	stdout, stderr, code = lockchaos(t, "merge", "--json", "--junit", junit, "--out", merged, shards[1], shards[0])
	m := parseJSON(t, stdout)
	if code != matrixExit(m.Summary) || m.Exit != code || m.Outcome != scenarios.OutcomeMismatch {
		t.Errorf("merge: exit %d, outcome %s\n%s", code, m.Outcome, stderr)
	}
	// The same cells in the same order, with the shards' outcomes (real
	// runs: a shard's run need not reach the whole matrix's verdict, so the
	// outcomes are compared with the shards'; with runs that always reach
	// the same verdict, scenarios' TestMergeOfShardsEqualsTheUnshardedMatrix
	// compares with the whole matrix).
	var names, wholeNames []string
	for _, c := range m.Cells {
		names = append(names, c.Name+" expect="+c.Expect)
	}
	for _, c := range whole.Cells {
		wholeNames = append(wholeNames, c.Name+" expect="+c.Expect)
	}
	if !reflect.DeepEqual(names, wholeNames) || m.Plan != whole.Plan || m.Shard != nil || !reflect.DeepEqual(m.Locks, whole.Locks) {
		t.Errorf("the merged shards are not the whole matrix's cells:\n%v\nwant\n%v", names, wholeNames)
	}
	if got := outcomes(m.Summary); !sameOutcomes(got, fromShards) {
		t.Errorf("the merge changed the shards' outcomes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(fromShards, "\n"))
	}
	onDisk, err := scenarios.ReadSummary(merged)
	if err != nil || !reflect.DeepEqual(outcomes(onDisk), outcomes(m.Summary)) {
		t.Errorf("merged summary.json: %v", err)
	}
	index, err := os.ReadFile(filepath.Join(merged, "index.html"))
	if err != nil || !strings.Contains(string(index), `href="wrongly-safe/report.html"`) || !strings.Contains(string(index), "FAILED: ") {
		t.Errorf("merged index.html (%v)", err)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Hostname string `xml:"hostname,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Out string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("merged JUnit does not parse: %v", err)
	}
	if doc.Tests != 4 || doc.Failures != m.Counts[scenarios.StatusMismatch]+m.Counts[scenarios.StatusInconclusive] || doc.Skipped != 1 || len(doc.Suites) != 1 || doc.Suites[0].Hostname == "" {
		t.Errorf("merged JUnit: %d tests, %d failures, %d skipped\n%s", doc.Tests, doc.Failures, doc.Skipped, b)
	}
	for _, c := range doc.Suites[0].Cases {
		mc, _ := m.Cell(c.Name)
		if mc.Status == scenarios.StatusMismatch && (c.Failure == nil || !strings.HasPrefix(c.Failure.Message, "expected "+mc.Expect+", got "+mc.Got+": ")) {
			t.Errorf("%s's failure: %+v", c.Name, c.Failure)
		}
		for _, line := range strings.Split(c.Out, "\n") {
			if p, ok := strings.CutPrefix(line, "[[ATTACHMENT|"); ok {
				if _, err := os.Stat(strings.TrimSuffix(p, "]]")); err != nil {
					t.Errorf("%s: attachment %s: %v", c.Name, line, err)
				}
			}
		}
	}

	// One shard alone: the other's cells are not run, the matrix
	// incomplete — unless the one shard held the mismatch.
	stdout, stderr, code = lockchaos(t, "merge", "--json", "--out", filepath.Join(dir, "half"), shards[0])
	half := parseJSON(t, stdout)
	if !reflect.DeepEqual(half.MissingShards, []string{"2/2"}) || half.Counts[scenarios.StatusNotRun] == 0 || !strings.Contains(stderr, "shard 2/2 missing") {
		t.Errorf("merge of one of two shards: exit %d, missing %v, counts %v\n%s", code, half.MissingShards, half.Counts, stderr)
	}
	if want := map[bool]int{true: ExitMatrixMismatch, false: ExitMatrixIncomplete}[half.Counts[scenarios.StatusMismatch] > 0]; code != want {
		t.Errorf("merge of one of two shards: exit %d, want %d", code, want)
	}
}

// TestChaosExitCodes: passed with a skip it reports, incomplete when what
// was asked for by name could not run.
func TestChaosExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tinyScenario(t, dir, "safe-ok", "token-lua", "20ms", "safe")
	later := filepath.Join(dir, "later.yaml")
	os.WriteFile(later, []byte("shows: x\nexpect:\n  verdict: safe\nlock:\n  name: node-redlock\n"), 0o644)
	// No adapters here: node-redlock, a lock lockchaos ships, cannot run.
	noAdapters := []string{locks.AdaptersEnv + "=" + t.TempDir()}

	// A glob: the scenario this build cannot run is reported, counted, and
	// fails nothing.
	stdout, stderr, code := lockchaosIn(t, "", noAdapters, "chaos", "--scenarios", filepath.Join(dir, "*.yaml"), "--out", filepath.Join(dir, "glob"))
	if code != ExitMatrixPassed || !strings.Contains(stderr, "skipped later: lock node-redlock not available") ||
		!strings.Contains(stdout, "PASSED with cells skipped: every verdict that ran as expected (1 match, 1 skipped) — 1 SKIPPED: 1 need what this build lacks") ||
		!strings.Contains(stdout, "  SKIPPED later: lock node-redlock not available") {
		t.Errorf("exit %d, want %d\n%s%s", code, ExitMatrixPassed, stdout, stderr)
	}
	// Named: skipping it hides what was asked for.
	stdout, stderr, code = lockchaosIn(t, "", noAdapters, "chaos", "--scenarios", later, "--json", "--out", filepath.Join(dir, "named"))
	m := parseJSON(t, stdout)
	if code != ExitMatrixIncomplete || m.Exit != code || m.Outcome != scenarios.OutcomeIncomplete ||
		!strings.Contains(stderr, "later (asked for by name: the matrix is incomplete): lock node-redlock not available") {
		t.Errorf("exit %d, want %d (%s)\n%s%s", code, ExitMatrixIncomplete, m.Outcome, stdout, stderr)
	}
	if c, _ := m.Cell("later"); !c.Asked || c.SkipReason != scenarios.SkipMissingFeature {
		t.Errorf("later: %+v", c)
	}
	// A lua lock whose script is not there, beside a scenario that runs.
	sub := filepath.Join(dir, "sub")
	os.MkdirAll(sub, 0o755)
	tinyScenario(t, sub, "safe-ok", "token-lua", "20ms", "safe")
	os.WriteFile(filepath.Join(sub, "lua-missing.yaml"), []byte("shows: x\nexpect:\n  verdict: safe\nlock:\n  name: lua\n  options:\n    file: no/such/script.lua\nduration: 1s\n"), 0o644)
	stdout, stderr, code = lockchaos(t, "chaos", "--scenarios", filepath.Join(sub, "*.yaml"), "--out", filepath.Join(dir, "lua"))
	if code != ExitMatrixIncomplete || !strings.Contains(stdout, "1 need a file that is not there") || !strings.Contains(stdout, "INCOMPLETE") {
		t.Errorf("a missing file: exit %d, want %d\n%s%s", code, ExitMatrixIncomplete, stdout, stderr)
	}
}

// sameOutcomes says whether a and b hold the same strings, counted.
func sameOutcomes(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func TestMatrixExit(t *testing.T) {
	t.Parallel()
	for o, want := range map[scenarios.Outcome]int{
		scenarios.OutcomePassed: 0, scenarios.OutcomeMismatch: 1, scenarios.OutcomeIncomplete: 2, scenarios.OutcomeError: ExitSetup,
	} {
		if got := matrixExit(scenarios.Summary{Outcome: o}); got != want {
			t.Errorf("%s: exit %d, want %d", o, got, want)
		}
	}
}

// TestShardAndMergeUsageErrors: bad input is one line on stderr and exit 3.
func TestShardAndMergeUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, s scenarios.Summary) string {
		d := filepath.Join(dir, name)
		os.MkdirAll(filepath.Join(d, "cell-of-"+name), 0o755)
		if err := s.Write(d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	planned := []string{"a", "b", "c"}
	shard := func(i int, plan string, cells ...string) scenarios.Summary {
		s := scenarios.Summary{Plan: plan, Shard: &scenarios.Shard{Index: i, Count: 2, Planned: planned}}
		for _, c := range cells {
			s.Cells = append(s.Cells, scenarios.CellResult{Name: c, Kind: scenarios.KindCatalogue, Status: scenarios.StatusMatch})
		}
		return s
	}
	one := write("one", shard(1, "p1", "a", "c"))
	two := write("two", shard(2, "p1", "b"))
	oneAgain := write("one-again", shard(1, "p1", "a", "c"))
	overlap := write("overlap", shard(2, "p1", "b", "c"))
	other := write("other", shard(2, "p2", "b"))
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	broken := filepath.Join(dir, "broken")
	os.MkdirAll(broken, 0o755)
	os.WriteFile(filepath.Join(broken, "summary.json"), []byte("{not json"), 0o644)
	sameDir := write("same-dir", shard(2, "p1", "b"))
	os.MkdirAll(filepath.Join(sameDir, "cell-of-one"), 0o755)

	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"chaos", "--shard", "0/3"}, "--shard \"0/3\": the shard index counts from 1 to 3"},
		{[]string{"chaos", "--shard", "4/3"}, "--shard \"4/3\": the shard index counts from 1 to 3"},
		{[]string{"chaos", "--shard", "x"}, "--shard \"x\": want I/N"},
		{[]string{"chaos", "--shard", "1/0"}, "want at least 1 shard"},
		{[]string{"chaos", "--shard", "1/2", "--update-baseline"}, "--update-baseline records the full matrix"},
		{[]string{"audit", "--lock", "token-lua", "--shard", "3/2"}, "lockchaos audit: --shard \"3/2\": the shard index counts from 1 to 2"},
		{[]string{"compare", "--locks", "token-lua", "--shard", "2"}, "lockchaos compare: --shard \"2\": want I/N"},
		{[]string{"merge"}, "give the shards' folders"},
		{[]string{"merge", "--out", out, empty}, empty + " is not a chaos, audit or compare output: it holds no summary.json, audit.json or compare.json"},
		{[]string{"merge", empty, "--out", out}, empty + " is not a chaos, audit or compare output: it holds no summary.json, audit.json or compare.json"}, // flags after the folders too
		{[]string{"merge", "--out", out, broken}, broken + " is not a chaos output"},
		{[]string{"merge", "--out", out, one, oneAgain}, "both hold shard 1/2"},
		{[]string{"merge", "--out", out, one, overlap}, "both hold cell c: the shards overlap"},
		{[]string{"merge", "--out", out, one, other}, "are shards of different configurations"},
		{[]string{"merge", "--out", out, one, one}, "is given twice"},
		{[]string{"merge", "--out", two, one, two}, "is one of the shards"},
		{[]string{"merge", "--out", out, one, sameDir}, "both hold cell-of-one: the shards overlap"},
	} {
		_, stderr, code := lockchaos(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("lockchaos %v: exit %d, stderr %q; want exit %d and one line saying %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err == nil {
		t.Error("a refused merge wrote a summary")
	}
	// The good pair merges.
	stdout, stderr, code := lockchaos(t, "merge", "--out", out, one, two)
	if code != ExitMatrixPassed || !strings.Contains(stdout, "PASSED: every verdict as expected (3 match)") {
		t.Errorf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, d := range []string{"cell-of-one", "cell-of-two"} {
		if _, err := os.Stat(filepath.Join(out, d)); err != nil {
			t.Errorf("the merge did not bring the shards' runs: %v", err)
		}
	}
}

// chaos -h documents the exit codes.
func TestChaosUsageDocumentsExitCodes(t *testing.T) {
	t.Parallel()
	_, stderr, _ := lockchaos(t, "chaos", "-h")
	stdout, _, _ := lockchaos(t, "help", "chaos")
	for _, want := range []string{"1  a verdict differed", "2  evidence was missing", "3  usage error", "4  setup error", "--shard I/N", "-json"} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("chaos -h does not say %q", want)
		}
	}
}
