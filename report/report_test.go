package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/checker/explain"
	"github.com/lockchaos/lockchaos/rundir"
)

func TestExplainNamesTheClientsTheKeyAndThePausePastTheTTL(t *testing.T) {
	res := pausedPastTTL().write(t, t.TempDir())
	if res.Verdict != checker.Violation {
		t.Fatalf("the hand-written history should be a violation: %s", res.Summary)
	}
	got := explain.Headline(res, 500)
	want := "Clients 2 and 4 both held lock:0 for 300 ms from t=3.60 s; client 2 was paused for 1.2 s from t=3.10 s, past its 500 ms TTL; " +
		"client 2's release then found its lease already gone; 1 update of the protected counter was lost."
	if got != want {
		t.Errorf("Explain:\n got %q\nwant %q", got, want)
	}
}

func TestExplainSafeAndDeadlockAndInconclusive(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  checker.Result
		want []string
	}{
		{"safe", checker.Result{Verdict: checker.Safe, Mutex: checker.MutexResult{Holds: 12, Porcupine: "Ok"}},
			[]string{"No two clients held the same lock at once: 12 holds checked", "with no fault injected"}},
		{"safe with faults and a deadlock", checker.Result{Verdict: checker.Safe, Mutex: checker.MutexResult{Holds: 3},
			Faults:   []checker.FaultWindow{{ID: 1, Name: "kill-client"}, {ID: 2, Name: "kill-client"}},
			Liveness: checker.LivenessResult{DeadlockedKeys: []string{"lock:0"}}},
			[]string{"through 2 faults (kill-client ×2)", "lock:0 was left with no expiry", "deadlock"}},
		{"inconclusive", checker.Result{Verdict: checker.Inconclusive, Reasons: []string{"the checker timed out"}},
			[]string{"Inconclusive", "the checker timed out"}},
		{"violation without overlap", checker.Result{Verdict: checker.Violation, Resource: checker.ResourceResult{Summary: "2 increments were lost"}},
			[]string{"No two holds overlapped", "2 increments were lost"}},
		{"hold outlives the TTL", checker.Result{Verdict: checker.Violation, Mutex: checker.MutexResult{OverlapCount: 1, Overlaps: []checker.Overlap{{
			Key: "lock:1", Clients: [2]int{0, 3}, StartMs: 700, EndMs: 900,
			Holds: [2]checker.HoldSpan{{Client: 0, StartMs: 100, EndMs: 900, End: "release-not-held"}, {Client: 3, StartMs: 700, EndMs: 1000, End: "release"}},
		}}}}, []string{"Clients 0 and 3 both held lock:1 for 200 ms from t=0.70 s", "no fault was active: client 0 held for 800 ms, longer than the 300 ms TTL"}},
	} {
		got := explain.Headline(tc.res, 300)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not say %q", tc.name, got, w)
			}
		}
	}
}

func TestHoldsAreTheCheckers(t *testing.T) {
	dir := t.TempDir()
	pausedPastTTL().write(t, dir)
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []checker.Hold{
		{Key: "lock:0", HoldSpan: checker.HoldSpan{Client: 0, StartMs: 100.5, EndMs: 400, End: "release"}},
		{Key: "lock:0", HoldSpan: checker.HoldSpan{Client: 2, StartMs: 3000.5, EndMs: 4320, End: "release-not-held"}},
		{Key: "lock:0", HoldSpan: checker.HoldSpan{Client: 4, StartMs: 3600.5, EndMs: 3901, End: "release"}},
	}
	if len(r.Holds) != len(want) {
		t.Fatalf("holds %+v, want %+v", r.Holds, want)
	}
	for i, h := range r.Holds {
		if h.Key != want[i].Key || h.Client != want[i].Client || h.End != want[i].End || !near(h.StartMs, want[i].StartMs) || !near(h.EndMs, want[i].EndMs) {
			t.Errorf("hold %d: %+v, want %+v", i, h, want[i])
		}
	}
	if strings.Join(r.Keys, ",") != "lock:0" || len(r.Clients) != 5 {
		t.Errorf("keys %v clients %v; want lock:0 and the run's 5 clients", r.Keys, r.Clients)
	}
}

func near(a, b float64) bool { return a-b < 0.01 && b-a < 0.01 }

// TestRunPageIsSelfContained reads the files a run's report writes: they
// must open offline, so nothing may be fetched from anywhere.
func TestRunPageIsSelfContained(t *testing.T) {
	dir := t.TempDir()
	pausedPastTTL().write(t, dir)
	page, err := WriteRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{page, filepath.Join(dir, rundir.PorcupineFile)} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).Find(b); m != nil {
			t.Errorf("%s fetches something: %s", filepath.Base(f), m)
		}
		if m := regexp.MustCompile(`(?i)@import|url\(\s*["']?https?:`).Find(b); m != nil {
			t.Errorf("%s loads CSS from elsewhere: %s", filepath.Base(f), m)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, rundir.PorcupineFile))
	for _, want := range []string{`"Tag":"faults"`, `"Tag":"overlaps"`, `pause-client client 2`, `id="back-to-report" href="report.html"`, `id="fault-labels"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("porcupine.html lacks the annotation %s", want)
		}
	}
}
