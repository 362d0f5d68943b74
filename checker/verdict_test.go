package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockchaos/lockchaos/history"
)

func TestMutexAnswer(t *testing.T) {
	tests := []struct {
		answer       porcupine.CheckResult
		overlaps     int
		lin          *bool
		agree        bool
		violation    string
		gap          string
		nonViolation bool
	}{
		{answer: porcupine.Ok, overlaps: 0, lin: ptr(true), agree: true},
		{answer: porcupine.Illegal, overlaps: 2, lin: ptr(false), agree: true, violation: "not linearizable"},
		{answer: porcupine.Ok, overlaps: 3, lin: ptr(true), violation: "checker disagreement: porcupine says Ok, the sweep found 3 overlaps"},
		{answer: porcupine.Illegal, overlaps: 0, lin: ptr(false), violation: "checker disagreement: porcupine says Illegal, the sweep found 0 overlaps"},
		{answer: porcupine.Unknown, overlaps: 0, gap: "checker timed out after 2s"},
		{answer: porcupine.Unknown, overlaps: 1, gap: "checker timed out after 2s"},
	}
	for _, tc := range tests {
		m, violations, gaps := mutexAnswer(tc.answer, tc.overlaps, 2*time.Second)
		if (m.Linearizable == nil) != (tc.lin == nil) || (m.Linearizable != nil && *m.Linearizable != *tc.lin) || m.Agree != tc.agree {
			t.Errorf("%v/%d: linearizable %v agree %v", tc.answer, tc.overlaps, m.Linearizable, m.Agree)
		}
		if tc.violation != "" && !strings.Contains(strings.Join(violations, "|"), tc.violation) {
			t.Errorf("%v/%d: violations %q", tc.answer, tc.overlaps, violations)
		}
		if tc.violation == "" && len(violations) > 0 {
			t.Errorf("%v/%d: violations %q", tc.answer, tc.overlaps, violations)
		}
		if tc.gap != "" && (len(gaps) != 1 || !strings.HasPrefix(gaps[0], tc.gap)) {
			t.Errorf("%v/%d: gaps %q", tc.answer, tc.overlaps, gaps)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// bigHistory has many short holds handed over between clients on one key.
func bigHistory(holds int, overlap bool) *hist {
	h := new(hist).start()
	for i := range holds {
		at := 10 + float64(i)*2
		h.hold(i%5, k0, at, at+1.5)
	}
	if overlap {
		h.hold(7, k0, 11, 10+float64(holds)*2)
	}
	for c := range 8 {
		h.exit(c, 10+float64(holds)*2+10, true)
	}
	return h.end(10 + float64(holds)*2 + 20)
}

func TestPorcupineTimeoutIsInconclusive(t *testing.T) {
	// A nanosecond runs out before porcupine has read a history this long.
	r := Check(bigHistory(20000, false).events, Options{Timeout: time.Nanosecond})
	if r.Mutex.Porcupine != "Unknown" || r.Mutex.Linearizable != nil || r.Mutex.Agree {
		t.Fatalf("mutex %+v", r.Mutex)
	}
	if r.Verdict != Inconclusive || !strings.HasPrefix(r.Summary, "inconclusive: checker timed out after 1ns") {
		t.Errorf("%s: %s", r.Verdict, r.Summary)
	}
	if r.Mutex.OverlapCount != 0 || !r.Complete {
		t.Errorf("overlaps %d complete %v", r.Mutex.OverlapCount, r.Complete)
	}

	// The sweep still proves an overlap when porcupine could not answer.
	r = Check(bigHistory(20000, true).events, Options{Timeout: time.Nanosecond})
	if r.Verdict != Violation || r.Mutex.OverlapCount == 0 {
		t.Errorf("%s with %d overlaps: %q", r.Verdict, r.Mutex.OverlapCount, r.Reasons)
	}
}

func TestBigHistory(t *testing.T) {
	start := time.Now()
	r := Check(bigHistory(20000, false).events, Options{})
	if r.Verdict != Safe || r.Mutex.Holds != 20000 {
		t.Fatalf("%s: %q", r.Verdict, r.Reasons)
	}
	r = Check(bigHistory(20000, true).events, Options{})
	if r.Verdict != Violation || r.Mutex.OverlapCount != 20000 || r.Mutex.Porcupine != "Illegal" {
		t.Fatalf("%s: %d overlaps, porcupine %s", r.Verdict, r.Mutex.OverlapCount, r.Mutex.Porcupine)
	}
	t.Logf("two checks of 20000 holds in %v", time.Since(start))
}

func TestNilProbeValueIsNoReading(t *testing.T) {
	h := new(hist).start().hold(0, k0, 10, 25).write(0, "res:0", 15, 20, history.OK, 1, 0).
		add(history.Event{Time: ms(205), Kind: history.Probe, Client: history.NoClient, F: "resource", Key: "res:0"}).
		exit(0, 200, true).end(210)
	r := Check(h.events, Options{})
	if r.Verdict != Inconclusive || !strings.Contains(r.Summary, "the resource probe of res:0 has no value") {
		t.Errorf("%s: %s", r.Verdict, r.Summary)
	}
}

// A run is evidence about the lock unless it says something only about the
// machine: no fault landed, every overlap was a stall, or a fault took a
// lease away and nobody came for the key (safe, but the race never ran).
func TestNoEvidence(t *testing.T) {
	faulty := []string{"crash-restart"}
	for _, tc := range []struct {
		name string
		res  Result
		want string // a part of the reason; "" for evidence
	}{
		{"no faults planned", Result{Verdict: Safe}, ""},
		{"none landed", Result{Verdict: Safe, Nemesis: faulty, Evidence: Evidence{Faults: 2}}, "none of the 2 faults landed"},
		{"landed, lease kept", Result{Verdict: Safe, Nemesis: faulty, Evidence: Evidence{Faults: 2, Landed: 1, LeasesKept: 1}}, ""},
		{"landed, lease lost, nobody came", Result{Verdict: Safe, Nemesis: faulty, Evidence: Evidence{Faults: 2, Landed: 1, LeasesLost: 1}},
			"1 of 2 faults took a live lease away, but no other client acquired the key"},
		{"landed, lease lost, taken", Result{Verdict: Violation, Nemesis: faulty, Mutex: MutexResult{OverlapCount: 1},
			Evidence: Evidence{Faults: 1, Landed: 1, LeasesLost: 1, LandedFaultOverlaps: 1, Overlaps: map[string]int{CauseFault: 1}}}, ""},
		{"only stalls overlapped", Result{Verdict: Violation, Mutex: MutexResult{OverlapCount: 2}, Evidence: Evidence{Overlaps: map[string]int{CauseStall: 2}}},
			"stall of the harness"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.res.NoEvidence()
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("NoEvidence() = %q, want %q", got, tc.want)
			}
		})
	}
}

// An overlap of 1 ns is told as what it is, not as one of "0.000 ms"; the
// one formatter of spans says so everywhere.
func TestATinyOverlapIsToldInNanoseconds(t *testing.T) {
	var h hist
	h.start().acquire(0, "k", 9, 10).acquire(1, "k", 18, 19.999999).release(0, "k", 20, 21).release(1, "k", 30, 31).end(40)
	res := Check(h.events, Options{})
	if res.Verdict != Violation || !strings.Contains(res.Summary, "both held k for 1 ns from") {
		t.Errorf("verdict %s, summary %q; want a violation of 1 ns", res.Verdict, res.Summary)
	}
	for ms, want := range map[float64]string{1e-6: "1 ns", 0.0004: "400 ns", 0.412: "0.412 ms", 4.2: "4.2 ms", 312: "312 ms", 1200: "1.2 s"} {
		if got := Millis(ms); got != want {
			t.Errorf("Millis(%v) = %q, want %q", ms, got, want)
		}
	}
}
