package checker

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

const k0 = "lock:0"

// verdictCase is one hand-written history and what the checker must say.
type verdictCase struct {
	name     string
	history  *hist
	verdict  Verdict
	overlaps int
	// reason, when set, must be a substring of one of the reasons.
	reason string
	// check inspects the rest of the result.
	check func(t *testing.T, r Result)
}

func verdictCases() []verdictCase {
	return []verdictCase{
		{
			name: "clean alternating holds are safe",
			history: new(hist).start().
				hold(0, k0, 10, 50).hold(1, k0, 60, 90).hold(0, k0, 100, 120).hold(1, k0, 130, 150).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				if r.Mutex.Holds != 4 || r.Mutex.Ops != 8 || !r.Complete || !r.Mutex.Agree || r.Mutex.Linearizable == nil || !*r.Mutex.Linearizable {
					t.Errorf("mutex %+v complete %v", r.Mutex, r.Complete)
				}
				if r.Summary != "safe: 4 holds on 1 key, no two overlapped; the resource was never written" {
					t.Errorf("summary %q", r.Summary)
				}
				if r.Lock != "redlock" || r.Seed != 7 || !slices.Equal(r.Nemesis, []string{}) || r.DurationMs != 210 {
					t.Errorf("run info %q %d %v %v", r.Lock, r.Seed, r.Nemesis, r.DurationMs)
				}
				if r.Acquire.Attempted != 4 || r.Acquire.OK != 4 || r.Acquire.P50ms != 1 || r.Acquire.Maxms != 1 {
					t.Errorf("acquire %+v", r.Acquire)
				}
				if r.Release.Attempted != 4 || r.Release.OK != 4 || r.Release.P99ms != 1 {
					t.Errorf("release %+v", r.Release)
				}
				if r.FirstViolationMs != nil {
					t.Errorf("first violation %v", *r.FirstViolationMs)
				}
			},
		},
		{
			name: "overlap names the clients, key, times and active faults",
			history: new(hist).start().
				fault(1, "pause-client", []int{0}, 15, 45).
				fault(2, "delay", nil, 100, 110).
				acquire(0, k0, 5, 10).acquire(1, k0, 20, 30).
				release(0, k0, 50, 51).release(1, k0, 70, 71).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict:  Violation,
			overlaps: 1,
			reason:   "1 pair of holds of different clients overlapped",
			check: func(t *testing.T, r Result) {
				want := Overlap{Key: k0, Clients: [2]int{0, 1}, StartMs: 30, EndMs: 50,
					Holds:  [2]HoldSpan{{Client: 0, AcquireMs: 5, StartMs: 10, EndMs: 50, End: "release"}, {Client: 1, AcquireMs: 20, StartMs: 30, EndMs: 70, End: "release"}},
					Faults: []int{1}, Cause: CauseFault}
				if !reflect.DeepEqual(r.Mutex.Overlaps, []Overlap{want}) {
					t.Errorf("overlaps %+v", r.Mutex.Overlaps)
				}
				if r.FirstViolationMs == nil || *r.FirstViolationMs != 15 {
					t.Errorf("first violation %v", r.FirstViolationMs)
				}
				if r.Summary != "clients 0 and 1 both held lock:0 for 20 ms from t=0.03 s; caused by fault pause-client (client 0) (1 of 2 faults landed)" {
					t.Errorf("summary %q", r.Summary)
				}
				if len(r.Faults) != 2 || r.Faults[1].EndMs == nil || *r.Faults[1].EndMs != 110 {
					t.Errorf("faults %+v", r.Faults)
				}
				if r.Mutex.Porcupine != "Illegal" || !r.Mutex.Agree || *r.Mutex.Linearizable {
					t.Errorf("mutex %+v", r.Mutex)
				}
			},
		},
		{
			name: "release not-held after the lease expired while another held",
			history: new(hist).start().
				fault(1, "pause-client", []int{0}, 20, 70).
				acquire(0, k0, 5, 10).
				acquire(1, k0, 30, 40).release(1, k0, 60, 61).
				releaseNotHeld(0, k0, 80, 81).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict:  Violation,
			overlaps: 1,
			check: func(t *testing.T, r Result) {
				o := r.Mutex.Overlaps[0]
				if o.Holds[0].End != "release-not-held" || o.StartMs != 40 || o.EndMs != 60 || !slices.Equal(o.Faults, []int{1}) {
					t.Errorf("overlap %+v", o)
				}
				if r.Release.NotHeld != 1 || r.Release.OK != 1 || r.Release.Attempted != 2 {
					t.Errorf("release %+v", r.Release)
				}
			},
		},
		{
			name: "an indeterminate acquire never entered the critical section",
			history: new(hist).start().
				acquire(0, k0, 5, 10).
				acquireAnswer(1, k0, 20, 30, history.Info).
				acquireAnswer(1, k0, 31, 32, history.Fail).
				release(0, k0, 50, 51).
				acquire(1, k0, 60, 65).release(1, k0, 70, 71).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				if r.Acquire != (AcquireStats{Attempted: 4, OK: 2, Failed: 1, Unknown: 1, P50ms: 5, P99ms: 5, Maxms: 5}) {
					t.Errorf("acquire %+v", r.Acquire)
				}
				if r.Mutex.Ops != 4 || r.Mutex.Holds != 2 {
					t.Errorf("mutex %+v", r.Mutex)
				}
			},
		},
		{
			name: "an acquire pending when its worker was killed on purpose",
			history: new(hist).start().
				fault(1, "kill", []int{1}, 30, 30).
				acquire(0, k0, 5, 10).
				op(1, history.Invoke, history.Acquire, k0, 20).
				exit(1, 30, true).
				release(0, k0, 50, 51).
				exit(0, 200, true).end(210),
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				if r.Acquire.Unknown != 1 || !r.Complete {
					t.Errorf("acquire %+v complete %v", r.Acquire, r.Complete)
				}
			},
		},
		{
			name: "an unexpected worker exit leaves the evidence incomplete",
			history: new(hist).start().
				hold(0, k0, 10, 50).
				acquire(1, k0, 55, 60).
				add(history.Event{Time: ms(70), Kind: history.WorkerExit, Client: 1, Message: "signal: segmentation fault"}).
				hold(0, k0, 80, 90).
				exit(0, 200, true).end(210),
			verdict: Inconclusive,
			reason:  "worker 1 exited unexpectedly at t=0.07 s (signal: segmentation fault)",
			check: func(t *testing.T, r Result) {
				if r.Complete || r.Mutex.Holds != 3 {
					t.Errorf("complete %v holds %d", r.Complete, r.Mutex.Holds)
				}
				if !strings.HasPrefix(r.Summary, "inconclusive: worker 1 exited unexpectedly") {
					t.Errorf("summary %q", r.Summary)
				}
			},
		},
		{
			name: "an unexpected exit with nothing open is still incomplete",
			history: new(hist).start().
				hold(0, k0, 10, 50).exit(1, 20, false).hold(0, k0, 60, 70).
				exit(0, 200, true).end(210),
			verdict: Inconclusive,
			reason:  "worker 1 exited unexpectedly",
		},
		{
			name: "no run-end: cut short",
			history: new(hist).start().
				hold(0, k0, 10, 50).hold(1, k0, 60, 90),
			verdict: Inconclusive,
			reason:  "history incomplete: no run-end event",
			check: func(t *testing.T, r Result) {
				if r.Complete {
					t.Error("complete")
				}
			},
		},
		{
			name: "a violation inside a cut-short history is still a violation",
			history: new(hist).start().
				hold(0, k0, 10, 50).hold(1, k0, 40, 90),
			verdict:  Violation,
			overlaps: 1,
			reason:   "history incomplete: no run-end event",
			check: func(t *testing.T, r Result) {
				if r.Complete {
					t.Error("complete")
				}
			},
		},
		{
			name: "a cut-short open hold ends at its client's last event",
			history: new(hist).start().
				acquire(0, k0, 5, 10).read(0, "res:0", 15, 20, 0, 0).
				acquire(1, k0, 25, 30).read(1, "res:0", 35, 40, 0, 0),
			verdict: Inconclusive,
			check: func(t *testing.T, r Result) {
				if r.Mutex.Holds != 2 || *r.Mutex.Linearizable != true {
					t.Errorf("mutex %+v", r.Mutex)
				}
			},
		},
		{
			name: "a cut-short history proves the overlap up to the later client's last event",
			history: new(hist).start().
				acquire(0, k0, 5, 10).read(0, "res:0", 15, 40, 0, 0).
				acquire(1, k0, 25, 30),
			verdict:  Violation,
			overlaps: 1,
			check: func(t *testing.T, r Result) {
				o := r.Mutex.Overlaps[0]
				if o.StartMs != 30 || o.EndMs != 30 || o.Holds[0].End != "open" || o.Holds[1].EndMs != 30 {
					t.Errorf("overlap %+v", o)
				}
			},
		},
		{
			name: "legal reentry",
			history: new(hist).start().
				acquire(0, k0, 5, 10).acquire(0, k0, 15, 20).release(0, k0, 30, 31).release(0, k0, 40, 41).
				acquire(1, k0, 35, 45).release(1, k0, 50, 51).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				if r.Mutex.Holds != 2 || r.Mutex.Ops != 6 {
					t.Errorf("mutex %+v", r.Mutex)
				}
			},
		},
		{
			name: "reentry interleaved with another owner",
			history: new(hist).start().
				acquire(0, k0, 5, 10).acquire(0, k0, 15, 20).release(0, k0, 30, 31).
				acquire(1, k0, 32, 35).
				release(0, k0, 40, 41).release(1, k0, 50, 51).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict:  Violation,
			overlaps: 1,
			check: func(t *testing.T, r Result) {
				o := r.Mutex.Overlaps[0]
				if o.StartMs != 35 || o.EndMs != 40 || o.Holds[0].StartMs != 10 {
					t.Errorf("overlap %+v", o)
				}
			},
		},
		{
			// Porcupine may swap two operations of one client that touch at
			// one instant; swapping the inner release before the inner
			// acquire would free the lock at t=20, exactly when client 1
			// holds it for zero time. The depth in MutexInput forbids it.
			name: "a zero-length hold inside a reentrant hold at a tie",
			history: new(hist).start().
				acquire(0, k0, 0, 10).acquire(0, k0, 15, 20).release(0, k0, 20, 25).
				acquire(1, k0, 18, 20).release(1, k0, 20, 22).
				release(0, k0, 30, 31).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict:  Violation,
			overlaps: 1,
			check: func(t *testing.T, r Result) {
				if !r.Mutex.Agree || r.Mutex.Porcupine != "Illegal" {
					t.Errorf("mutex %+v", r.Mutex)
				}
			},
		},
		{
			name: "a lost event ends the hold",
			history: new(hist).start().
				acquire(0, k0, 5, 10).acquire(0, k0, 12, 14).lost(0, k0, 30).
				acquire(1, k0, 20, 35).
				releaseNotHeld(0, k0, 40, 41).
				release(1, k0, 50, 51).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				if r.Release != (ReleaseStats{Attempted: 2, OK: 1, NotHeld: 1, P50ms: 1, P99ms: 1, Maxms: 1}) {
					t.Errorf("release %+v", r.Release)
				}
				if r.Mutex.Ops != 5 { // 3 acquires, 1 drop, 1 release
					t.Errorf("ops %d", r.Mutex.Ops)
				}
			},
		},
		{
			name: "an acquire before the lost event overlaps",
			history: new(hist).start().
				acquire(0, k0, 5, 10).lost(0, k0, 30).
				acquire(1, k0, 20, 25).release(1, k0, 50, 51).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict:  Violation,
			overlaps: 1,
			check: func(t *testing.T, r Result) {
				if o := r.Mutex.Overlaps[0]; o.Holds[0].End != "lost" || o.EndMs != 30 {
					t.Errorf("overlap %+v", o)
				}
			},
		},
		{
			name: "touching endpoints are a hand-over",
			history: new(hist).start().
				acquire(0, k0, 5, 10).release(0, k0, 30, 40).
				acquire(1, k0, 20, 30).release(1, k0, 50, 51).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				if r.Mutex.Porcupine != "Ok" {
					t.Errorf("porcupine %s", r.Mutex.Porcupine)
				}
			},
		},
		{
			name: "holds ended by an exit, and holds still open at run-end",
			history: new(hist).start().
				acquire(0, k0, 5, 10).exit(0, 30, true).
				acquire(1, k0, 25, 30).
				acquire(2, k0, 100, 110).
				end(210),
			verdict:  Violation,
			overlaps: 1,
			check: func(t *testing.T, r Result) {
				o := r.Mutex.Overlaps[0]
				if o.Clients != [2]int{1, 2} || o.Holds[0].End != "open" || o.Holds[0].EndMs != 210 || o.EndMs != 210 {
					t.Errorf("overlap %+v", o)
				}
				if r.Acquire.Unknown != 0 || r.Mutex.Holds != 3 {
					t.Errorf("acquire %+v holds %d", r.Acquire, r.Mutex.Holds)
				}
			},
		},
		{
			name: "lost updates are a violation even without overlapping holds",
			history: new(hist).start().
				hold(0, k0, 10, 20).write(0, "res:0", 15, 16, history.OK, 1, 0).
				hold(1, k0, 30, 40).write(1, "res:0", 35, 36, history.OK, 2, 0).
				hold(0, k0, 50, 60).write(0, "res:0", 55, 56, history.OK, 3, 0).
				write(1, "res:0", 70, 71, history.Info, 4, 0).
				probeResource("res:0", 205, 2).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Violation,
			reason:  "1 increment was lost",
			check: func(t *testing.T, r Result) {
				if r.Resource.LostUpdates != 1 || r.Resource.Holds != 3 || r.Resource.Safe {
					t.Errorf("resource %+v", r.Resource)
				}
				if r.Resource.Summary != "1 increment was lost: overlapping holds overwrote each other's writes" {
					t.Errorf("summary %q", r.Resource.Summary)
				}
				if r.Summary != "violation: 1 increment was lost: the final counters are below the accepted writes" {
					t.Errorf("summary %q", r.Summary)
				}
			},
		},
		{
			name: "a counter above the accepted writes is no loss",
			history: new(hist).start().
				hold(0, k0, 10, 20).write(0, "res:0", 15, 16, history.OK, 1, 0).
				hold(1, k0, 30, 40).write(1, "res:0", 35, 36, history.Info, 2, 0).
				probeResource("res:0", 205, 2).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				if !r.Resource.Safe || r.Resource.Summary != "the resource stayed correct: 1 accepted write, none lost" {
					t.Errorf("resource %+v", r.Resource)
				}
			},
		},
		{
			name: "a stale read",
			history: new(hist).start().
				hold(0, k0, 10, 25).write(0, "res:0", 15, 20, history.OK, 5, 0).
				hold(1, k0, 26, 40).
				read(1, "res:0", 20, 30, 5, 0). // invoked when the write was acknowledged: not stale
				read(1, "res:0", 31, 32, 4, 0).
				probeResource("res:0", 205, 5).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Violation,
			reason:  "1 read of the resource returned a value older",
			check: func(t *testing.T, r Result) {
				if r.Resource.StaleReads != 1 {
					t.Errorf("resource %+v", r.Resource)
				}
			},
		},
		{
			name: "a stale fenced write accepted",
			history: new(hist).start().
				hold(0, k0, 10, 25).write(0, "res:0", 15, 20, history.OK, 1, 5).
				write(1, "res:0", 30, 31, history.OK, 2, 3).
				write(1, "res:0", 32, 33, history.Fail, 2, 4).
				probeResource("res:0", 205, 2).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Violation,
			reason:  "1 stale fenced operation was accepted by the resource",
			check: func(t *testing.T, r Result) {
				if r.Resource.StaleAccepted != 1 || r.Resource.StaleRejected != 1 {
					t.Errorf("resource %+v", r.Resource)
				}
			},
		},
		{
			name: "stale fenced writes rejected keep the resource safe",
			history: new(hist).start().
				hold(0, k0, 10, 25).write(0, "res:0", 15, 20, history.OK, 1, 5).
				read(1, "res:0", 21, 22, 1, 6).
				write(0, "res:0", 23, 24, history.Fail, 2, 5).
				write(1, "res:0", 26, 27, history.OK, 2, 6).
				write(1, "res:0", 28, 29, history.Fail, 3, 4).
				hold(1, k0, 100, 110).
				probeResource("res:0", 205, 2).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				if r.Resource.StaleRejected != 2 || r.Resource.StaleAccepted != 0 || !r.Resource.Safe {
					t.Errorf("resource %+v", r.Resource)
				}
				if r.Resource.Summary != "the resource stayed correct thanks to fencing: it rejected 2 operations with stale fencing tokens (0 reads, 2 writes) and accepted none, so no update was lost" {
					t.Errorf("summary %q", r.Resource.Summary)
				}
			},
		},
		{
			name: "a written key without its final counter",
			history: new(hist).start().
				hold(0, k0, 10, 25).write(0, "res:0", 15, 20, history.OK, 1, 0).
				exit(0, 200, true).end(210),
			verdict: Inconclusive,
			reason:  "the final counter of res:0 was never read",
			check: func(t *testing.T, r Result) {
				if r.Resource.Safe {
					t.Errorf("resource %+v", r.Resource)
				}
			},
		},
		{
			name: "a deadlocked key is reported, separate from safety",
			history: new(hist).start().
				hold(0, k0, 10, 25).hold(1, k0, 100, 110).
				probeLock("lock:1", 205, 1000, -1, -2).probeLock(k0, 205, -2, -2).probeLock("lock:1", 206, -1).
				exit(0, 200, true).exit(1, 200, true).end(210),
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				if !slices.Equal(r.Liveness.DeadlockedKeys, []string{"lock:1"}) {
					t.Errorf("deadlocked %v", r.Liveness.DeadlockedKeys)
				}
			},
		},
		{
			// Without faults, a run is evidence only when its clients
			// contended: a key no second client ever got (its write and
			// release timed out, the others' acquires refused or cut
			// off) excluded nobody.
			name: "a run without faults in which no key passed between clients tests nothing",
			history: new(hist).start().
				hold(0, k0, 10, 250).acquireAnswer(1, k0, 20, 30, history.Fail).acquireAnswer(1, k0, 40, 140, history.Info).
				hold(0, k0, 260, 270).
				exit(0, 300, true).exit(1, 300, true).end(310),
			verdict: Inconclusive,
			check: func(t *testing.T, r Result) {
				if !slices.ContainsFunc(r.Reasons, func(s string) bool {
					return strings.Contains(s, "no key ever passed from one client to another (2 holds, all by one client of 2)")
				}) {
					t.Errorf("reasons %q", r.Reasons)
				}
			},
		},
		{
			name: "no hold at all tests nothing",
			history: new(hist).start().
				acquireAnswer(0, k0, 5, 10, history.Fail).acquireAnswer(1, k0, 5, 1000, history.Info).
				exit(0, 2000, true).exit(1, 2000, true).end(2010),
			verdict: Inconclusive,
			reason:  "no client ever held a lock: nothing was tested",
		},
		{
			name:    "an empty history",
			history: new(hist),
			verdict: Inconclusive,
			reason:  "no client ever held a lock",
		},
		{
			name: "a run-end carrying an error",
			history: new(hist).start().hold(0, k0, 10, 25).exit(0, 200, true).
				add(history.Event{Time: ms(210), Kind: history.RunEnd, Client: history.NoClient, Error: "3 history writes lost"}),
			verdict: Inconclusive,
			reason:  "the coordinator recorded a problem: 3 history writes lost",
		},
		{
			name: "a completion without its invoke is a hole",
			history: new(hist).start().hold(0, k0, 10, 25).
				op(1, history.OK, history.Acquire, k0, 30).
				exit(0, 200, true).end(210),
			verdict: Inconclusive,
			reason:  "history malformed: 1 completions without an invoke",
		},
		{
			name: "a hold begun after the run-end is not evidence of safety",
			history: new(hist).start().hold(0, k0, 10, 25).
				exit(0, 200, true).end(210).
				acquire(1, k0, 211, 212),
			verdict: Inconclusive,
			reason:  "history malformed: 2 client events after the run-end",
		},
	}
}

func TestVerdicts(t *testing.T) {
	for _, tc := range verdictCases() {
		t.Run(tc.name, func(t *testing.T) {
			events := tc.history.events
			before := slices.Clone(events)
			r := Check(events, Options{})
			if !reflect.DeepEqual(events, before) {
				t.Fatal("Check modified its input")
			}
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s; reasons %q", r.Verdict, tc.verdict, r.Reasons)
			}
			if r.Mutex.OverlapCount != tc.overlaps || len(r.Mutex.Overlaps) != tc.overlaps {
				t.Errorf("overlaps %d (%d listed), want %d", r.Mutex.OverlapCount, len(r.Mutex.Overlaps), tc.overlaps)
			}
			if lin := r.Mutex.Linearizable; lin == nil || *lin != (tc.overlaps == 0) || !r.Mutex.Agree {
				t.Errorf("porcupine %s agree %v, want linearizable=%v", r.Mutex.Porcupine, r.Mutex.Agree, tc.overlaps == 0)
			}
			if tc.reason != "" && !slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.Contains(s, tc.reason) }) {
				t.Errorf("no reason contains %q: %q", tc.reason, r.Reasons)
			}
			if (r.Verdict == Safe) != (len(r.Reasons) == 0) {
				t.Errorf("verdict %s with reasons %q", r.Verdict, r.Reasons)
			}
			if !strings.HasPrefix(r.Summary, string(r.Verdict)) && r.Verdict != Violation {
				t.Errorf("summary %q does not open with the verdict", r.Summary)
			}
			assertNoNullLists(t, r)
			if tc.check != nil {
				tc.check(t, r)
			}
			// The file holds events in order of arrival: any arrival order a
			// real file could have must give the same result.
			for seed := range uint64(20) {
				shuffled := shuffle(events, randomPick(seed))
				if got := Check(shuffled, Options{}); !reflect.DeepEqual(comparable(got), comparable(r)) {
					t.Fatalf("arrival order %d changed the result:\n got %+v\nwant %+v", seed, got, r)
				}
			}
		})
	}
}

// assertNoNullLists checks that result.json never holds null for a list.
func assertNoNullLists(t *testing.T, r Result) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, path := range [][]string{{"reasons"}, {"nemesis"}, {"faults"}, {"mutex", "overlaps"}, {"liveness", "deadlocked_keys"}} {
		var v any = m
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		if _, ok := v.([]any); !ok {
			t.Errorf("%s is %v, want a list", strings.Join(path, "."), v)
		}
	}
	for _, o := range r.Mutex.Overlaps {
		if o.Faults == nil {
			t.Errorf("overlap %+v has null faults", o)
		}
	}
}

func TestOverlapsAreListedInTimeOrderAcrossKeys(t *testing.T) {
	h := new(hist).start()
	// lock:b overlaps first, lock:a later; and more overlaps than are listed.
	h.hold(0, "lock:b", 10, 20).hold(1, "lock:b", 15, 25)
	h.hold(0, "lock:a", 30, 40).hold(1, "lock:a", 35, 45)
	for i := range 2 * MaxOverlaps {
		at := 100 + float64(i)*10
		h.hold(2, "lock:c", at, at+8).hold(3, "lock:c", at+2, at+9)
	}
	h.exit(0, 5000, true).exit(1, 5000, true).exit(2, 5000, true).exit(3, 5000, true).end(5010)
	r := Check(h.events, Options{})
	if r.Mutex.OverlapCount != 2+2*MaxOverlaps || len(r.Mutex.Overlaps) != MaxOverlaps {
		t.Fatalf("count %d listed %d", r.Mutex.OverlapCount, len(r.Mutex.Overlaps))
	}
	if r.Mutex.Overlaps[0].Key != "lock:b" || r.Mutex.Overlaps[1].Key != "lock:a" || r.Mutex.Overlaps[2].Key != "lock:c" {
		t.Errorf("first keys %s %s %s", r.Mutex.Overlaps[0].Key, r.Mutex.Overlaps[1].Key, r.Mutex.Overlaps[2].Key)
	}
	if !slices.IsSortedFunc(r.Mutex.Overlaps, func(a, b Overlap) int { return int(a.StartMs - b.StartMs) }) {
		t.Error("overlaps not in time order")
	}
	if r.Verdict != Violation || !strings.HasSuffix(r.Summary, "no fault was active; in all two or more clients held a key at once for 1.21 s, in 202 incidents and 202 overlapping pairs of holds") {
		t.Errorf("%s: %s", r.Verdict, r.Summary)
	}
}

func TestOverlapFaults(t *testing.T) {
	h := new(hist).start().
		fault(1, "before", nil, 1, 5).         // healed before the earlier hold began
		fault(2, "during-first", nil, 12, 14). // inside the earlier hold only
		fault(3, "touching", []int{0, 1}, 5, 10).
		fault(4, "never-healed", nil, 35, -1).
		fault(5, "after", nil, 41, 45). // after the overlap ended
		hold(0, k0, 10, 40).hold(1, k0, 30, 50).
		exit(0, 200, true).exit(1, 200, true).end(210)
	r := Check(h.events, Options{})
	o := r.Mutex.Overlaps[0]
	// never-healed began after the overlap did: it cannot have caused it.
	if !slices.Equal(o.Faults, []int{2, 3}) || o.Cause != CauseFault {
		t.Errorf("faults %v, cause %s", o.Faults, o.Cause)
	}
	if r.Faults[4].ID != 5 || r.Faults[3].EndMs != nil {
		t.Errorf("windows %+v", r.Faults)
	}
	// From the start of the earliest fault that caused it.
	if *r.FirstViolationMs != 25 || r.FirstViolationCause != CauseFault {
		t.Errorf("first violation %v (%s)", *r.FirstViolationMs, r.FirstViolationCause)
	}
	// A fault aimed at no hold landed when a hold of a client it acted on
	// was in progress during it: not before (1), not in touching's window,
	// which closed as client 0's hold began (3).
	var landed []int
	for _, f := range r.Faults {
		if f.Landed {
			landed = append(landed, f.ID)
		}
	}
	if !slices.Equal(landed, []int{2, 4, 5}) || r.Evidence.Faults != 5 || r.Evidence.Landed != 3 || r.Evidence.LandedFaultOverlaps != 1 {
		t.Errorf("landed %v, evidence %+v", landed, r.Evidence)
	}
	want := "clients 0 and 1 both held lock:0 for 10 ms from t=0.03 s; caused by faults during-first (worker) and touching (clients 0, 1) (3 of 5 faults landed)"
	if r.Summary != want {
		t.Errorf("summary %q", r.Summary)
	}
}

func TestOriginWithoutRunStart(t *testing.T) {
	h := new(hist).hold(0, k0, 1010, 1020).hold(1, k0, 1015, 1030).exit(0, 1100, true).exit(1, 1100, true).end(1200)
	r := Check(h.events, Options{})
	if o := r.Mutex.Overlaps[0]; o.StartMs != 6 || r.DurationMs != 191 || *r.FirstViolationMs != 6 {
		t.Errorf("overlap %+v duration %v", o, r.DurationMs)
	}
}

// A history file whose last line was cut off is not whole, even when a
// run-end came before the cut: such a run is never safe, though a violation
// in what was recorded stays a violation.
func TestCutOffHistoryIsNeverSafe(t *testing.T) {
	safe := new(hist).start().hold(0, k0, 10, 25).hold(1, k0, 30, 40).exit(0, 200, true).exit(1, 200, true).end(210)
	if r := Check(safe.events, Options{}); r.Verdict != Safe {
		t.Fatalf("whole: %s, want safe", r.Summary)
	}
	r := Check(safe.events, Options{CutOff: true})
	if r.Verdict != Inconclusive || r.Complete || !strings.Contains(r.Summary, "last line was cut off") {
		t.Errorf("cut off: %s (complete %v), want inconclusive and not complete", r.Summary, r.Complete)
	}
	broken := new(hist).start().hold(0, k0, 10, 25).hold(1, k0, 20, 40).exit(0, 200, true).exit(1, 200, true).end(210)
	if r := Check(broken.events, Options{CutOff: true}); r.Verdict != Violation {
		t.Errorf("cut off after an overlap: %s, want violation", r.Summary)
	}
}

// TestAvailabilityDuringFaults counts the acquires invoked while a fault
// window was open, and those of them that returned the lock; an acquire
// invoked before the fault or after it healed does not count.
func TestAvailabilityDuringFaults(t *testing.T) {
	h := (&hist{}).start()
	h.hold(0, "lock:0", 10, 20)                             // before the fault
	h.fault(1, "pause-client", []int{1}, 100, 300)          // 100–300 ms
	h.hold(0, "lock:0", 150, 160)                           // during: ok
	h.acquireAnswer(1, "lock:0", 199, 400, history.Fail)    // during: failed
	h.op(0, history.Invoke, history.Acquire, "lock:0", 250) // during: never answered
	h.op(0, history.Info, history.Acquire, "lock:0", 260)   //
	h.hold(1, "lock:0", 500, 510)                           // after
	r := Check(h.end(600).events, Options{})
	if got, want := r.Acquire.DuringFaults, (Availability{Attempted: 3, OK: 1}); got != want {
		t.Errorf("during faults: %+v, want %+v (all acquires: %+v)", got, want, r.Acquire)
	}
}

// TestChainOfReleasesInheritsTheCauseOfItsFirstLink: with a release that
// deletes whoever holds the key (set-nx-px's DEL), one hold that a stall of
// the harness stretched past its lease starts a chain — its late release
// deletes the next holder's lease, a third client takes the key from under
// that one — and every link of the chain is the stall's, not the lock's
// own failure on a machine without faults.
func TestChainOfReleasesInheritsTheCauseOfItsFirstLink(t *testing.T) {
	h := &hist{}
	h.add(history.Event{Time: 0, Kind: history.RunStart, Client: history.NoClient,
		Run: &history.RunInfo{Lock: "set-nx-px", Seed: 7, Clients: 3, TTLms: 300}})
	h.hold(0, "lock:0", 10, 400) // lease until 310; a 290 ms stall holds it to 400
	h.stall(0, 100, 390)
	h.hold(2, "lock:0", 320, 450) // takes the expired key; lease until 620
	h.hold(1, "lock:0", 410, 470) // client 0's late DEL at 400 freed client 2's key
	r := Check(h.end(600).events, Options{})
	if r.Mutex.OverlapCount != 2 || r.Evidence.Overlaps[CauseStall] != 2 || !r.StallOnly() {
		t.Fatalf("overlaps %d by cause %v, want 2, both the stall's:\n%+v", r.Mutex.OverlapCount, r.Evidence.Overlaps, r.Mutex.Overlaps)
	}
	second := r.Mutex.Overlaps[1]
	if second.Clients != [2]int{2, 1} || second.Stall == nil || !strings.Contains(second.Stall.Text, "client 0's release, after another client had taken its key, deleted client 2's lease") {
		t.Errorf("second link: %+v (stall %+v)", second, second.Stall)
	}

	// Without the stall, the same chain is the lock's own.
	h = &hist{}
	h.add(history.Event{Time: 0, Kind: history.RunStart, Client: history.NoClient,
		Run: &history.RunInfo{Lock: "set-nx-px", Seed: 7, Clients: 3, TTLms: 300}})
	h.hold(0, "lock:0", 10, 400).hold(2, "lock:0", 320, 450).hold(1, "lock:0", 410, 470)
	r = Check(h.end(600).events, Options{})
	if r.Evidence.Overlaps[CauseNone] != 2 {
		t.Errorf("without a stall: overlaps by cause %v, want 2 of the lock's own", r.Evidence.Overlaps)
	}
}
