package scenarios

import (
	"context"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner"
)

func TestClassifyComparesEveryPartOfTheExpectation(t *testing.T) {
	yes, no := true, false
	violation := checker.Result{Verdict: checker.Violation, Summary: "overlap"}
	safe := checker.Result{Verdict: checker.Safe, Resource: checker.ResourceResult{Safe: true}}
	deadlocked := safe
	deadlocked.Liveness.DeadlockedKeys = []string{"lock:0"}
	fenced := violation
	fenced.Resource = checker.ResourceResult{Safe: true, StaleRejected: 2}
	damaged := violation
	damaged.Resource = checker.ResourceResult{LostUpdates: 3}
	for _, tc := range []struct {
		name   string
		expect Expectation
		res    checker.Result
		err    error
		status Status
		got    string
	}{
		{"match", Expectation{Verdict: checker.Violation}, violation, nil, StatusMatch, "violation"},
		{"safe lock broke", Expectation{Verdict: checker.Safe}, violation, nil, StatusMismatch, "violation"},
		{"known failure not reproduced", Expectation{Verdict: checker.Violation}, safe, nil, StatusMismatch, "safe"},
		{"no expectation", Expectation{}, violation, nil, StatusObserved, "violation"},
		{"inconclusive", Expectation{Verdict: checker.Safe}, checker.Result{Verdict: checker.Inconclusive}, nil, StatusInconclusive, "inconclusive"},
		{"inconclusive without expectation", Expectation{}, checker.Result{Verdict: checker.Inconclusive}, nil, StatusInconclusive, "inconclusive"},
		{"deadlock expected and found", Expectation{Verdict: checker.Safe, Deadlock: &yes}, deadlocked, nil, StatusMatch, "safe+deadlock"},
		{"deadlock expected, none", Expectation{Verdict: checker.Safe, Deadlock: &yes}, safe, nil, StatusMismatch, "safe"},
		{"no deadlock expected, found", Expectation{Verdict: checker.Safe, Deadlock: &no}, deadlocked, nil, StatusMismatch, "safe+deadlock"},
		{"deadlock not looked at", Expectation{Verdict: checker.Safe}, deadlocked, nil, StatusMatch, "safe+deadlock"},
		{"fenced", Expectation{Verdict: checker.Violation, Resource: ResourceFenced}, fenced, nil, StatusMatch, "violation, resource fenced"},
		{"fencing did not work", Expectation{Verdict: checker.Violation, Resource: ResourceFenced}, damaged, nil, StatusMismatch, "violation, resource damaged"},
		{"intact accepts fenced", Expectation{Verdict: checker.Violation, Resource: ResourceIntact}, fenced, nil, StatusMatch, "violation, resource fenced"},
		{"setup error", Expectation{Verdict: checker.Safe}, checker.Result{}, errors.New("no redis"), StatusError, "error"},
	} {
		r := classify(Cell{Name: tc.name, Expect: tc.expect}, tc.res, tc.err, false)
		if r.Status != tc.status || r.Got != tc.got {
			t.Errorf("%s: status %s, got %q; want %s, %q", tc.name, r.Status, r.Got, tc.status, tc.got)
		}
	}
	if r := classify(Cell{Expect: Expectation{Verdict: checker.Safe}}, safe, nil, true); r.Status != StatusNotRun {
		t.Errorf("an interrupted safe run is %s, want not-run: a cut history proves no safety", r.Status)
	}
	if r := classify(Cell{Expect: Expectation{Verdict: checker.Violation}}, violation, nil, true); r.Status != StatusMatch {
		t.Errorf("an interrupted run with a violation is %s, want match: the violation is real", r.Status)
	}
}

func TestStatusFails(t *testing.T) {
	for st, fails := range map[Status]bool{
		StatusMatch: false, StatusObserved: false, StatusNA: false, StatusSkipped: false,
		StatusMismatch: true, StatusError: true, StatusNotRun: true, StatusInconclusive: true,
	} {
		if st.Fails(false) != fails {
			t.Errorf("%s.Fails(false) = %v", st, !fails)
		}
	}
	if StatusInconclusive.Fails(true) {
		t.Error("inconclusive fails although allowed")
	}
}

// fakeCell is a cell for a fake runner.
func fakeCell(name string, expect checker.Verdict, d time.Duration) Cell {
	return Cell{Name: name, Kind: KindCatalogue, Lock: "token-lua", Nemesis: "none", Expect: Expectation{Verdict: expect},
		Config: runner.Config{Lock: "token-lua", Duration: d, Seed: 1}}
}

func TestExecuteRunsInParallelAndSummarises(t *testing.T) {
	cells := []Cell{
		fakeCell("short-safe", checker.Safe, time.Second),
		fakeCell("long-broken", checker.Safe, 5*time.Second),
		fakeCell("observed", "", 2*time.Second),
		fakeCell("unsure", checker.Safe, 2*time.Second),
		{Name: "later", Kind: KindCatalogue, Skip: StatusSkipped, Why: "lock redlock not available"},
	}
	verdicts := map[string]checker.Verdict{"short-safe": checker.Safe, "long-broken": checker.Violation, "observed": checker.Violation, "unsure": checker.Inconclusive}
	var mu sync.Mutex
	var started []string
	out := t.TempDir()
	var reported []string
	sum := Execute(context.Background(), cells, ExecOptions{
		Out: out, Parallel: 1,
		Run: func(_ context.Context, cfg runner.Config) (checker.Result, error) {
			name := filepath.Base(cfg.Out)
			mu.Lock()
			started = append(started, name)
			mu.Unlock()
			return checker.Result{Verdict: verdicts[name], Summary: "summary of " + name}, nil
		},
		AfterRun: func(dir string) error { reported = append(reported, filepath.Base(dir)); return nil },
	})
	if started[0] != "long-broken" {
		t.Errorf("runs started in order %v; want the longest first", started)
	}
	if len(reported) != 4 {
		t.Errorf("AfterRun saw %v, want every run", reported)
	}
	want := map[string]Status{"short-safe": StatusMatch, "long-broken": StatusMismatch, "observed": StatusObserved, "unsure": StatusInconclusive, "later": StatusSkipped}
	for _, c := range sum.Cells {
		if c.Status != want[c.Name] {
			t.Errorf("%s: %s, want %s", c.Name, c.Status, want[c.Name])
		}
	}
	if sum.Cells[0].Name != "short-safe" {
		t.Errorf("the summary must list cells in plan order, not run order: %s first", sum.Cells[0].Name)
	}
	if sum.Passed || len(sum.Failed()) != 2 || sum.Counts[StatusMatch] != 1 {
		t.Errorf("passed %v, failed %v, counts %v; want failed by long-broken and unsure", sum.Passed, sum.Failed(), sum.Counts)
	}

	// The baseline keeps outcomes only, and a change shows up against it.
	stable := sum.Stable()
	if stable.Started != "" || stable.Cells[0].Detail != "" || stable.Cells[0].Dir != "" {
		t.Errorf("the baseline keeps what changes from run to run: %+v", stable.Cells[0])
	}
	base := stable
	base.Cells = append([]CellResult(nil), stable.Cells...)
	base.Cells[0].Got, base.Cells[0].Status = "violation", StatusMismatch
	if ch := sum.Changes(base); len(ch) != 1 || !strings.Contains(ch[0], "short-safe: violation (mismatch) → safe (match)") {
		t.Errorf("changes %v", ch)
	}

	bpath := filepath.Join(out, "baseline", "summary.json")
	if err := sum.WriteBaseline(bpath); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummary(bpath)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, stable) {
		t.Errorf("the baseline read back differs:\n%+v\n%+v", back, stable)
	}
	if b, _ := os.ReadFile(bpath); strings.Count(string(b), `{"name":`) != len(sum.Cells) {
		t.Errorf("the baseline does not hold one cell per line:\n%s", b)
	}

	path := filepath.Join(out, "junit.xml")
	if err := sum.JUnit(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Skipped  int    `xml:"skipped,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, b)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Tests != 5 || doc.Suites[0].Failures != 2 || doc.Suites[0].Skipped != 1 {
		t.Errorf("junit suites %+v", doc.Suites)
	}
}

func TestExecuteInterruptedLeavesTheRestNotRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cells := []Cell{fakeCell("a", checker.Safe, time.Second), fakeCell("b", checker.Safe, time.Second)}
	sum := Execute(ctx, cells, ExecOptions{Out: t.TempDir(), Parallel: 1,
		Run: func(context.Context, runner.Config) (checker.Result, error) {
			cancel() // Ctrl-C during the first run
			return checker.Result{Verdict: checker.Inconclusive}, nil
		}})
	for _, c := range sum.Cells {
		if c.Status != StatusNotRun {
			t.Errorf("%s: %s, want not-run", c.Name, c.Status)
		}
	}
	if sum.Passed {
		t.Error("an interrupted matrix passed")
	}
}
