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
	"github.com/lockchaos/lockchaos/grid"
	"github.com/lockchaos/lockchaos/settings"
)

// evidence builds a result with a verdict, how many of how many faults
// landed, and its overlaps by cause (fault overlaps are caused by a landed
// fault).
func evidence(v checker.Verdict, landed, faults int, byCause map[string]int) checker.Result {
	r := checker.Result{Verdict: v, Summary: string(v), Resource: checker.ResourceResult{Safe: true, State: checker.ResourceIntact}}
	r.Evidence = checker.Evidence{Faults: faults, Landed: landed, Overlaps: byCause, LandedFaultOverlaps: byCause[checker.CauseFault]}
	for _, n := range byCause {
		r.Mutex.OverlapCount += n
	}
	if byCause[checker.CauseStall] > 0 {
		r.Mutex.Overlaps = []checker.Overlap{{Cause: checker.CauseStall, Stall: &checker.StallNote{Client: 2, Text: "client 2 could not run for 260 ms"}}}
	}
	return r
}

func TestClassifyComparesEveryPartOfTheExpectation(t *testing.T) {
	yes, no := true, false
	byFault := map[string]int{checker.CauseFault: 3}
	byStall := map[string]int{checker.CauseStall: 2}
	byLock := map[string]int{checker.CauseNone: 2}
	violation := evidence(checker.Violation, 1, 2, byFault)
	safe := evidence(checker.Safe, 1, 1, nil)
	safe.Evidence.LeasesKept = 1 // the fault hit a lease, which survived
	deadlocked := safe
	deadlocked.Liveness.DeadlockedKeys = []string{"lock:0"}
	fenced := violation
	fenced.Resource = checker.ResourceResult{Safe: true, StaleRejected: 2, State: checker.ResourceFenced}
	damaged := violation
	damaged.Resource = checker.ResourceResult{LostUpdates: 3, State: checker.ResourceDamaged}
	reused := violation
	reused.Resource = checker.ResourceResult{FenceReused: 1, State: checker.ResourceDamaged}
	lostLease := safe
	lostLease.Evidence.LeasesLost = 1
	stuck := safe
	stuck.Liveness.Stuck = []checker.StuckKey{{Key: "lock:0", FromMs: 2000, ToMs: 8000, OutsideFaultsMs: 5000, Faults: []int{1}}}
	cutShort := safe // nobody held it from the fault to the run's end, 1.3 s of 3 s
	cutShort.Liveness.Unfinished = []checker.StuckKey{{Key: "lock:0", FromMs: 4600, ToMs: 8900, OutsideFaultsMs: 1300, Faults: []int{1}}}
	stalled := safe // 3.4 s without a holder outside faults, 3.1 s of it measured stalls: stuck after 3 s
	stalled.Liveness.StuckAfterMs = 3000
	stalled.Liveness.Stalled = []checker.StuckKey{{Key: "lock:0", FromMs: 2000, ToMs: 5400, OutsideFaultsMs: 3400, StalledMs: 3100}}
	for _, tc := range []struct {
		name    string
		expect  Expectation
		faulty  bool
		res     checker.Result
		err     error
		status  Status
		got     string
		spoiled bool
	}{
		{"a landed fault broke it", Expectation{Verdict: checker.Violation}, true, violation, nil, StatusMatch, "violation", false},
		{"safe lock broke by a fault", Expectation{Verdict: checker.Safe}, true, violation, nil, StatusMismatch, "violation", false},
		{"known failure not reproduced although the fault landed", Expectation{Verdict: checker.Violation}, true, safe, nil, StatusMismatch, "safe", false},
		{"faults never landed: no evidence", Expectation{Verdict: checker.Violation}, true, evidence(checker.Safe, 0, 3, nil), nil, StatusInconclusive, "safe", true},
		{"no fault injected: no evidence", Expectation{Verdict: checker.Violation}, true, evidence(checker.Safe, 0, 0, nil), nil, StatusInconclusive, "safe", true},
		{"a lost lease nobody came for: no evidence", Expectation{Verdict: checker.Violation}, true, lostLease, nil, StatusInconclusive, "safe", true},
		{"only a fault aimed at no lease landed: no evidence", Expectation{Verdict: checker.Violation}, true, evidence(checker.Safe, 1, 2, nil), nil, StatusInconclusive, "safe", true},
		{"safe needs a landed fault", Expectation{Verdict: checker.Safe}, true, evidence(checker.Safe, 0, 2, nil), nil, StatusInconclusive, "safe", true},
		{"safe without faults needs none", Expectation{Verdict: checker.Safe}, false, evidence(checker.Safe, 0, 0, nil), nil, StatusMatch, "safe", false},
		{"a stall broke a safe lock", Expectation{Verdict: checker.Safe}, true, evidence(checker.Violation, 1, 1, byStall), nil, StatusInconclusive, "violation", true},
		{"a stall is no fault's violation", Expectation{Verdict: checker.Violation}, true, evidence(checker.Violation, 1, 1, byStall), nil, StatusInconclusive, "violation", true},
		{"overlaps without the faults landing", Expectation{Verdict: checker.Violation}, true, evidence(checker.Violation, 0, 2, byLock), nil, StatusInconclusive, "violation", true},
		{"the lock broke on its own, no faults", Expectation{Verdict: checker.Violation}, false, evidence(checker.Violation, 0, 0, byLock), nil, StatusMatch, "violation", false},
		{"only stalls, no faults", Expectation{Verdict: checker.Violation}, false, evidence(checker.Violation, 0, 0, byStall), nil, StatusInconclusive, "violation", true},
		{"inconclusive", Expectation{Verdict: checker.Safe}, true, checker.Result{Verdict: checker.Inconclusive}, nil, StatusInconclusive, "inconclusive", true},
		{"deadlock expected and found", Expectation{Verdict: checker.Safe, Deadlock: &yes}, true, deadlocked, nil, StatusMatch, "safe+deadlock", false},
		{"deadlock expected, none", Expectation{Verdict: checker.Safe, Deadlock: &yes}, true, safe, nil, StatusMismatch, "safe", false},
		{"no deadlock expected, found", Expectation{Verdict: checker.Safe, Deadlock: &no}, true, deadlocked, nil, StatusMismatch, "safe+deadlock", false},
		{"deadlock not looked at", Expectation{Verdict: checker.Safe}, true, deadlocked, nil, StatusMatch, "safe", false},
		{"fenced", Expectation{Verdict: checker.Violation, Resource: checker.ResourceFenced}, true, fenced, nil, StatusMatch, "violation, resource fenced", false},
		{"fencing did not work", Expectation{Verdict: checker.Violation, Resource: checker.ResourceFenced}, true, damaged, nil, StatusMismatch, "violation, resource damaged", false},
		{"a reused token is damage", Expectation{Verdict: checker.Violation, Resource: checker.ResourceDamaged}, true, reused, nil, StatusMatch, "violation, resource damaged", false},
		{"intact accepts fenced", Expectation{Verdict: checker.Violation, Resource: checker.ResourceIntact}, true, fenced, nil, StatusMatch, "violation, resource fenced", false},
		{"stuck as expected", Expectation{Verdict: checker.Safe, Liveness: LivenessStuck}, true, stuck, nil, StatusMatch, "safe+stuck", false},
		{"stuck expected, the run ended too soon after the fault to tell", Expectation{Verdict: checker.Safe, Liveness: LivenessStuck}, true, cutShort, nil, StatusInconclusive, "safe", true},
		{"stuck expected, a violation instead", Expectation{Verdict: checker.Safe, Liveness: LivenessStuck}, true, func() checker.Result { r := violation; r.Liveness = cutShort.Liveness; return r }(), nil, StatusMismatch, "violation", false},
		{"stuck and a deadlock expected, cut short without the deadlock", Expectation{Verdict: checker.Safe, Liveness: LivenessStuck, Deadlock: &yes}, true, cutShort, nil, StatusMismatch, "safe", false},
		{"stuck expected, available", Expectation{Verdict: checker.Safe, Liveness: LivenessStuck}, true, safe, nil, StatusMismatch, "safe", false},
		{"available expected, stuck", Expectation{Verdict: checker.Safe, Liveness: LivenessAvailable}, true, stuck, nil, StatusMismatch, "safe+stuck", false},
		{"available expected, stuck but for measured stalls: no evidence", Expectation{Verdict: checker.Safe, Liveness: LivenessAvailable}, true, stalled, nil, StatusInconclusive, "safe", true},
		{"stuck expected, stuck but for measured stalls: no evidence", Expectation{Verdict: checker.Safe, Liveness: LivenessStuck}, true, stalled, nil, StatusInconclusive, "safe", true},
		{"stuck expected, stuck beyond measured stalls", Expectation{Verdict: checker.Safe, Liveness: LivenessStuck}, true, func() checker.Result { r := stuck; r.Liveness.Stalled = stalled.Liveness.Stalled; return r }(), nil, StatusMatch, "safe+stuck", false},
		{"available expected, a violation and stalls", Expectation{Verdict: checker.Safe, Liveness: LivenessAvailable}, true, func() checker.Result { r := violation; r.Liveness = stalled.Liveness; return r }(), nil, StatusMismatch, "violation", false},
		{"liveness not judged, stuck but for measured stalls", Expectation{Verdict: checker.Safe}, true, stalled, nil, StatusMatch, "safe", false},
		{"setup error", Expectation{Verdict: checker.Safe}, true, checker.Result{}, errors.New("no redis"), StatusError, "error", false},
	} {
		c := Cell{Name: tc.name, Expect: tc.expect}
		if tc.faulty {
			c.Config.Nemeses = []string{"pause-client"}
		}
		r, spoiled := classify(c, tc.res, tc.err, false)
		if r.Status != tc.status || r.Got != tc.got || spoiled != tc.spoiled {
			t.Errorf("%s: status %s, got %q, spoiled %v; want %s, %q, %v (%s)", tc.name, r.Status, r.Got, spoiled, tc.status, tc.got, tc.spoiled, r.Detail)
		}
	}
	if r, _ := classify(Cell{Expect: Expectation{Verdict: checker.Safe}}, safe, nil, true); r.Status != StatusNotRun {
		t.Errorf("an interrupted safe run is %s, want not-run: a cut history proves no safety", r.Status)
	}
	if r, _ := classify(Cell{Expect: Expectation{Verdict: checker.Violation}, Config: settings.Run{Nemeses: []string{"x"}}}, violation, nil, true); r.Status != StatusMatch {
		t.Errorf("an interrupted run with a violation is %s, want match: the violation is real", r.Status)
	}
	if r, _ := classify(Cell{Expect: Expectation{Verdict: checker.Safe, Liveness: LivenessAvailable}}, stalled, nil, false); !strings.Contains(r.Detail, "liveness is no evidence — nobody held lock:0 for 3.4 s from t=2.00 s") {
		t.Errorf("a run stuck but for stalls says %q", r.Detail)
	}
	r, _ := classify(Cell{Expect: Expectation{Verdict: checker.Safe}, Config: settings.Run{Nemeses: []string{"x"}}}, evidence(checker.Violation, 1, 1, byStall), nil, false)
	if !strings.Contains(r.Detail, "client 2 could not run for 260 ms") {
		t.Errorf("a stall's run says %q, not which stall", r.Detail)
	}
}

// A matrix in which no cell ran (all skipped or n/a) proves nothing: it
// does not pass.
func TestAMatrixWhereNothingRanDoesNotPass(t *testing.T) {
	s := Summary{Cells: []CellResult{{Name: "a", Status: StatusSkipped}, {Name: "b", Status: StatusNA}}}
	s.tally()
	if s.Passed || s.Ran() != 0 {
		t.Errorf("passed %v with %d cells run, want a failed matrix", s.Passed, s.Ran())
	}
	s.Cells = append(s.Cells, CellResult{Name: "c", Status: StatusMatch})
	s.tally()
	if !s.Passed || s.Ran() != 1 {
		t.Errorf("passed %v with %d cells run, want passed", s.Passed, s.Ran())
	}
}

func TestStatusFails(t *testing.T) {
	for st, fails := range map[Status]bool{
		StatusMatch: false, StatusNA: false, StatusSkipped: false,
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
		Config: settings.Run{Lock: "token-lua", Duration: d, Seed: 1}}
}

func TestExecuteRunsInParallelAndSummarises(t *testing.T) {
	cells := []Cell{
		fakeCell("short-safe", checker.Safe, time.Second),
		fakeCell("long-broken", checker.Safe, 5*time.Second),
		fakeCell("retried", checker.Safe, 2*time.Second),
		fakeCell("unsure", checker.Safe, 2*time.Second),
		{Name: "later", Kind: KindCatalogue, Skip: StatusSkipped, Why: "lock redlock not available"},
	}
	results := map[string]checker.Result{
		"short-safe": evidence(checker.Safe, 0, 0, nil), "long-broken": evidence(checker.Violation, 0, 0, map[string]int{checker.CauseNone: 1}),
		"unsure": {Verdict: checker.Inconclusive},
		// A stall spoils the first run; the second is evidence.
		"retried": evidence(checker.Violation, 0, 0, map[string]int{checker.CauseStall: 1}), "retried.attempt2": evidence(checker.Safe, 0, 0, nil),
	}
	var mu sync.Mutex
	var started []string
	out := t.TempDir()
	var reported []string
	sum := Execute(context.Background(), cells, ExecOptions{
		Out: out, Parallel: 1,
		Run: func(_ context.Context, cfg settings.Run) (checker.Result, error) {
			name := filepath.Base(cfg.Out)
			mu.Lock()
			started = append(started, name)
			mu.Unlock()
			r := results[name]
			if r.Verdict == "" {
				r = results[strings.Split(name, ".")[0]] // every attempt of unsure
			}
			r.Summary = "summary of " + name
			return r, nil
		},
		AfterRun: func(dir string) error { reported = append(reported, filepath.Base(dir)); return nil },
	})
	if started[0] != "long-broken" {
		t.Errorf("runs started in order %v; want the longest first", started)
	}
	// Every attempt: unsure three times, retried twice.
	if len(reported) != 7 {
		t.Errorf("AfterRun saw %v, want every run", reported)
	}
	want := map[string]Status{"short-safe": StatusMatch, "long-broken": StatusMismatch, "retried": StatusMatch, "unsure": StatusInconclusive, "later": StatusSkipped}
	attempts := map[string]int{"short-safe": 1, "long-broken": 1, "retried": 2, "unsure": grid.MaxAttempts}
	for _, c := range sum.Cells {
		if c.Status != want[c.Name] || c.Attempts != attempts[c.Name] {
			t.Errorf("%s: %s after %d runs, want %s after %d", c.Name, c.Status, c.Attempts, want[c.Name], attempts[c.Name])
		}
	}
	if c, _ := sum.Cell("retried"); c.Dir != "retried.attempt2" || !strings.Contains(c.Detail, "after 2 runs") {
		t.Errorf("retried: dir %s, detail %q", c.Dir, c.Detail)
	}
	if sum.Cells[0].Name != "short-safe" {
		t.Errorf("the summary must list cells in plan order, not run order: %s first", sum.Cells[0].Name)
	}
	if sum.Passed || len(sum.Failed()) != 2 || sum.Counts[StatusMatch] != 2 {
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
	if err := sum.JUnit(path, out); err != nil {
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
		Run: func(context.Context, settings.Run) (checker.Result, error) {
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

// TestAServerThatDidNotStartIsRunAgain: a run whose store did not start
// (settings.StartError: an etcd member that did not answer in time on a
// busy machine) says nothing about the lock and runs again; one that
// keeps failing ends as the error it is, after grid.MaxAttempts runs; any
// other error is not run again.
func TestAServerThatDidNotStartIsRunAgain(t *testing.T) {
	cells := []Cell{fakeCell("slow-start", checker.Safe, time.Second), fakeCell("never-starts", checker.Safe, time.Second), fakeCell("bad-setting", checker.Safe, time.Second)}
	var mu sync.Mutex
	runs := map[string]int{}
	sum := Execute(context.Background(), cells, ExecOptions{Out: t.TempDir(), Parallel: 1,
		Run: func(_ context.Context, cfg settings.Run) (checker.Result, error) {
			cell := strings.Split(filepath.Base(cfg.Out), ".")[0]
			mu.Lock()
			runs[cell]++
			n := runs[cell]
			mu.Unlock()
			switch {
			case cell == "bad-setting":
				return checker.Result{}, errors.New("--clients 0: want 1 to 256")
			case cell == "never-starts" || n == 1:
				return checker.Result{}, settings.StartError{Err: errors.New("start the etcd ensemble: etcd member etcd1 did not answer")}
			}
			return evidence(checker.Safe, 0, 0, nil), nil
		}})
	want := map[string]struct {
		status Status
		runs   int
	}{"slow-start": {StatusMatch, 2}, "never-starts": {StatusError, grid.MaxAttempts}, "bad-setting": {StatusError, 1}}
	for _, c := range sum.Cells {
		if w := want[c.Name]; c.Status != w.status || c.Attempts != w.runs || runs[c.Name] != w.runs {
			t.Errorf("%s: %s after %d runs (%d seen), want %s after %d", c.Name, c.Status, c.Attempts, runs[c.Name], w.status, w.runs)
		}
	}
	if c, _ := sum.Cell("never-starts"); !strings.Contains(c.Detail, "etcd member etcd1 did not answer") {
		t.Errorf("the error that kept a cell from running is not said: %q", c.Detail)
	}
}
