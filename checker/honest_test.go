package checker

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// The tests of issue 26: a run never looks cleaner than it was.

// A lock's errors reach the summary (so the terminal line and the report)
// and result.json, by kind, the most frequent first: errors that differ
// only in their numbers are one kind.
func TestLockErrorsAreSaid(t *testing.T) {
	h := new(hist).start()
	infoAcquire := func(c int, at float64, text string) {
		h.op(c, history.Invoke, history.Acquire, k0, at)
		h.add(history.Event{Time: ms(at + 1), Kind: history.Info, Client: c, F: history.Acquire, Key: k0, Error: text})
	}
	for i := range 5 {
		infoAcquire(0, float64(10+10*i), "ERR syntax error at line 1")
	}
	infoAcquire(1, 200, "dial tcp 127.0.0.1:7001: connect: connection refused")
	infoAcquire(1, 210, "dial tcp 127.0.0.1:7002: connect: connection refused")
	r := Check(h.exit(0, 900, true).exit(1, 900, true).end(910).events, Options{})
	if r.Verdict != Inconclusive {
		t.Fatalf("%s: %s", r.Verdict, r.Summary)
	}
	if len(r.Errors) != 2 || r.Errors[0].Count != 5 || r.Errors[0].Error != "ERR syntax error at line 1" || r.Errors[0].Op != "acquire" ||
		r.Errors[1].Count != 2 || r.Errors[1].Client != 1 || r.Errors[1].FirstMs != 201 {
		t.Errorf("errors %+v", r.Errors)
	}
	for _, want := range []string{"no client ever held a lock", `lock errors: 5 acquires ended in an error, "ERR syntax error at line 1" (first at t=0.01 s, client 0)`} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("summary %q\nwant it to say %q", r.Summary, want)
		}
	}
}

// A problem the coordinator recorded is said beside a violation, not only
// in the reasons.
func TestDegradedViolationSaysSo(t *testing.T) {
	h := new(hist).start().hold(0, k0, 10, 50).hold(1, k0, 30, 60).exit(0, 900, true).exit(1, 900, true)
	h.add(history.Event{Time: ms(910), Kind: history.RunEnd, Client: history.NoClient, Error: "nemesis failover: no standby left to promote"})
	r := Check(h.events, Options{})
	if r.Verdict != Violation || !strings.Contains(r.Summary, "; degraded: the coordinator recorded a problem: nemesis failover: no standby left to promote") {
		t.Errorf("%s: %s", r.Verdict, r.Summary)
	}
}

// A stall a client records while a fault stopped it is the fault: it is
// not counted among the harness's stalls. One outside any pause is.
func TestPauseIsNoStallOfTheHarness(t *testing.T) {
	pause := func(h *hist) *hist {
		f := &history.Fault{ID: 1, Name: "pause-client", Action: history.ActionPause, Clients: []int{0}, Stopped: []int{0}}
		h.add(history.Event{Time: ms(100), Kind: history.FaultStart, Client: history.NoClient, Fault: f})
		return h.add(history.Event{Time: ms(1600), Kind: history.FaultEnd, Client: history.NoClient, Fault: f})
	}
	h := pause(new(hist).start()).hold(1, k0, 10, 20).stall(0, 100, 1600.2)
	r := Check(h.exit(0, 2000, true).exit(1, 2000, true).end(2010).events, Options{})
	if r.Stalls.Count != 0 || r.Stalls.MaxMs != 0 {
		t.Errorf("the pause counted as a stall of the harness: %+v", r.Stalls)
	}
	h = pause(new(hist).start()).hold(1, k0, 10, 20).stall(0, 100, 1600.2).stall(1, 1700, 1760)
	r = Check(h.exit(0, 2000, true).exit(1, 2000, true).end(2010).events, Options{})
	if r.Stalls.Count != 1 || r.Stalls.MaxMs != 60 || r.Stalls.Worst != 1 {
		t.Errorf("stalls %+v, want client 1's 60 ms alone", r.Stalls)
	}
}

// When most overlaps have another cause than the first, the headline says
// what most of them were: here the first is a stall of the harness, and
// the three after it the lock's own.
func TestHeadlineTellsTheMainCause(t *testing.T) {
	h := new(hist).start().
		stall(0, 20, 200).hold(0, k0, 10, 210).hold(1, k0, 100, 150)
	for i := range 3 {
		at := 400 + 100*float64(i)
		h.hold(0, k0, at, at+60).hold(1, k0, at+20, at+70)
	}
	r := Check(h.exit(0, 900, true).exit(1, 900, true).end(910).events, Options{})
	if r.Verdict != Violation || r.Mutex.Overlaps[0].Cause != CauseStall {
		t.Fatalf("%s, first cause %s: %s", r.Verdict, r.Mutex.Overlaps[0].Cause, r.Summary)
	}
	if !strings.HasPrefix(r.Summary, "3 of 4 overlaps had no fault and no stall of the harness behind them: the lock broke on its own. The first: clients 0 and 1") {
		t.Errorf("summary %q", r.Summary)
	}
}

// A fault that did not land but under which the lock granted a second
// holder is said in one sentence that does not contradict itself.
func TestUnlandedFaultThatCausedOverlaps(t *testing.T) {
	h := new(hist).asked("slow-reply").
		aimed(1, "slow-reply", 0, k0, 10, 20, 400, &history.Effect{Landed: false, Note: "the delay did not outlast client 0's lease"}).
		hold(0, k0, 10, 300).hold(1, k0, 100, 200)
	r := Check(h.exit(0, 900, true).exit(1, 900, true).end(910).events, Options{})
	if r.Verdict != Violation || r.Evidence.Overlaps[CauseFault] != 1 || r.Evidence.LandedFaultOverlaps != 0 {
		t.Fatalf("%s %+v: %s", r.Verdict, r.Evidence, r.Summary)
	}
	want := "(none of the 1 faults landed; 1 overlap came under fault slow-reply (lock node 0) (the delay did not outlast client 0's lease) that did not land, yet the lock granted a second holder during it: the lock's own check failed, or the fault reached a hold it did not aim at)"
	if !strings.HasSuffix(r.Summary, want) {
		t.Errorf("summary %q\nwant it to end %q", r.Summary, want)
	}
}

// The lease in force, when it is not the TTL asked for, is said.
func TestLeaseInForceIsSaid(t *testing.T) {
	h := new(hist).start().hold(0, k0, 10, 20).hold(1, k0, 30, 40)
	h.events[0].Run.TTLms, h.events[0].Run.LeaseMs = 500, 1000
	r := Check(h.exit(0, 900, true).exit(1, 900, true).end(910).events, Options{})
	if !strings.Contains(r.Summary, "the lease in force was 1 s, not the --ttl of 500 ms") {
		t.Errorf("summary %q", r.Summary)
	}
}

// A key nobody could take from the start was not made unavailable by a
// fault that came later: the key is stuck, and the fault did not land.
func TestAKeyStuckBeforeTheFaultIsNotTheFaultsDoing(t *testing.T) {
	h := new(hist).asked("pause-client").fault(1, "pause-client", []int{0}, 1000, 1900)
	for at := 20.0; at < 2900; at += 100 {
		h.acquireAnswer(1, k0, at, at+5, history.Fail)
	}
	h.events[0].Run.TTLms = 300
	r := Check(h.exit(0, 3000, true).exit(1, 3000, true).end(3010).events, Options{})
	if len(r.Liveness.Stuck) != 1 {
		t.Fatalf("stuck %+v: %s", r.Liveness.Stuck, r.Summary)
	}
	if r.Faults[0].Landed || r.Evidence.Landed != 0 {
		t.Errorf("a fault landed on a key that was unavailable before it began: %+v", r.Faults[0])
	}
}

// A key nobody can take while clients keep trying is stuck, beside the
// verdict; a fault just before it landed (it broke the lock's liveness).
// The same unavailability inside a fault window is what the fault does.
func TestStuckKeyIsAFinding(t *testing.T) {
	tries := func(h *hist, from, to float64) *hist {
		for at := from; at < to; at += 100 {
			h.acquireAnswer(1, k0, at, at+5, history.Fail)
		}
		return h
	}
	// A lease of 300 ms (TTLms 300): stuck after 900 ms outside faults.
	h := new(hist).asked("reset-peer").hold(0, k0, 10, 100).fault(1, "reset-peer", []int{0}, 150, 200)
	tries(h, 120, 2500)
	h.hold(1, k0, 2600, 2650)
	h.events[0].Run.TTLms = 300
	r := Check(h.exit(0, 3000, true).exit(1, 3000, true).end(3010).events, Options{})
	if r.Verdict != Safe || len(r.Liveness.Stuck) != 1 {
		t.Fatalf("%s, stuck %+v: %s", r.Verdict, r.Liveness.Stuck, r.Summary)
	}
	st := r.Liveness.Stuck[0]
	if st.Key != k0 || st.FromMs != 120 || st.ToMs != 2600 || st.OutsideFaultsMs != 2430 || st.Tries != 25 || len(st.Faults) != 1 {
		t.Errorf("stuck %+v", st)
	}
	if !r.Faults[0].Landed || !strings.Contains(r.Faults[0].Effect, "the fault broke the lock's liveness") || r.Evidence.Landed != 1 {
		t.Errorf("the fault before the stuck span did not land: %+v", r.Faults[0])
	}
	if !strings.Contains(r.Summary, "liveness: stuck — nobody held lock:0 for 2.48 s from t=0.12 s (2.43 s of it outside faults) while clients tried 25 acquires; a key is stuck after 900 ms") {
		t.Errorf("summary %q", r.Summary)
	}
	// Inside a fault window (a partition that lasts as long) it is not.
	h = new(hist).asked("partition").hold(0, k0, 10, 100).fault(1, "partition", []int{1}, 100, 2550)
	tries(h, 120, 2500)
	h.hold(1, k0, 2600, 2650)
	h.events[0].Run.TTLms = 300
	r = Check(h.exit(0, 3000, true).exit(1, 3000, true).end(3010).events, Options{})
	if len(r.Liveness.Stuck) != 0 || len(r.Liveness.Keys) != 1 || r.Liveness.Keys[0].LongestMs != 2480 || r.Liveness.Keys[0].OutsideFaultsMs != 50 {
		t.Errorf("unavailable inside a fault: stuck %+v, keys %+v", r.Liveness.Stuck, r.Liveness.Keys)
	}
}

// A key nobody held from a fault to the end of a run too short to call it
// stuck is neither stuck nor shown available: the run cannot tell, and
// says so. The same span with no fault before it is plain contention.
func TestARunEndingSoonAfterAFaultCannotTellStuck(t *testing.T) {
	build := func(fault bool) Result {
		h := new(hist).asked("reset-peer").hold(0, k0, 10, 100)
		if fault {
			h.fault(1, "reset-peer", []int{0}, 150, 200)
		}
		for at := 120.0; at < 900; at += 100 {
			h.acquireAnswer(1, k0, at, at+5, history.Fail)
		}
		h.events[0].Run.TTLms = 300 // stuck after 900 ms outside faults
		return Check(h.exit(0, 1000, true).exit(1, 1000, true).end(1010).events, Options{})
	}
	r := build(true)
	if len(r.Liveness.Stuck) != 0 || len(r.Liveness.Unfinished) != 1 {
		t.Fatalf("stuck %+v, unfinished %+v", r.Liveness.Stuck, r.Liveness.Unfinished)
	}
	u := r.Liveness.Unfinished[0]
	if u.Key != k0 || u.FromMs != 120 || u.ToMs != 825 || u.OutsideFaultsMs != 655 || u.Tries != 8 || len(u.Faults) != 1 || u.Faults[0] != 1 {
		t.Errorf("unfinished %+v", u)
	}
	if want := "liveness: too soon to tell — nobody held lock:0 from t=0.12 s after fault 1 to the end of the run, 655 ms outside faults while clients tried 8 acquires; a key is stuck after 900 ms"; !strings.Contains(r.Summary, want) {
		t.Errorf("summary %q\nwant %q", r.Summary, want)
	}
	// A run that ends while the fault is still on cannot tell either; the
	// summary leaves it out (most runs end so), the result keeps it.
	h := new(hist).asked("reset-peer").hold(0, k0, 10, 100).fault(1, "reset-peer", []int{0}, 150, 1000)
	for at := 120.0; at < 900; at += 100 {
		h.acquireAnswer(1, k0, at, at+5, history.Fail)
	}
	h.events[0].Run.TTLms = 300
	if r := Check(h.exit(0, 1000, true).exit(1, 1000, true).end(1010).events, Options{}); len(r.Liveness.Unfinished) != 1 || strings.Contains(r.Summary, "too soon") {
		t.Errorf("a run ending in its fault: unfinished %+v, summary %q", r.Liveness.Unfinished, r.Summary)
	}
	if r := build(false); len(r.Liveness.Unfinished) != 0 {
		t.Errorf("without a fault the span is contention, not unfinished: %+v", r.Liveness.Unfinished)
	}
}

// A key the end-of-run probe finds on its node although its last holder
// released it is held by nobody the history knows; an acquire that got no
// answer after the release may be its holder, so then it is not said.
func TestOrphanKeyAtTheEnd(t *testing.T) {
	h := new(hist).start().hold(0, k0, 10, 100).hold(1, k0, 150, 200).probeLock(k0, 950, 412)
	r := Check(h.exit(0, 900, true).exit(1, 900, true).end(1000).events, Options{})
	want := "lock:0 was held by nobody the history knows at the end: its last holder, client 1, had released it, yet it was on 1 of 1 nodes (412 ms left)"
	if len(r.Liveness.Orphans) != 1 || r.Liveness.Orphans[0] != want || !strings.Contains(r.Summary, "liveness: "+want) {
		t.Errorf("orphans %q: %s", r.Liveness.Orphans, r.Summary)
	}
	h = new(hist).start().hold(0, k0, 10, 100).hold(1, k0, 150, 200).acquireAnswer(0, k0, 300, 310, history.Info).probeLock(k0, 950, 412)
	if r := Check(h.exit(0, 900, true).exit(1, 900, true).end(1000).events, Options{}); len(r.Liveness.Orphans) != 0 {
		t.Errorf("an acquire without an answer may hold it: %q", r.Liveness.Orphans)
	}
}

// A key is unavailable only while clients try: once the last client that
// tried is gone, nobody is kept from the key, and the span ends with its
// last answered acquire.
func TestUnavailabilityEndsWhenNobodyTries(t *testing.T) {
	h := new(hist).start().hold(0, k0, 10, 100)
	for at := 120.0; at < 500; at += 100 {
		h.acquireAnswer(1, k0, at, at+5, history.Fail)
	}
	h.exit(1, 600, true).exit(0, 600, true)
	h.events[0].Run.TTLms = 300
	r := Check(h.end(3000).events, Options{})
	if len(r.Liveness.Stuck) != 0 || len(r.Liveness.Keys) != 1 || r.Liveness.Keys[0].LongestMs != 305 {
		t.Errorf("stuck %+v, keys %+v; want the span 120–425 ms and nothing stuck", r.Liveness.Stuck, r.Liveness.Keys)
	}
}

// Unavailability the harness measured itself causing is no evidence
// against the lock: a span counts for its time outside faults and outside
// the stalls that may have kept the key from its clients (a lock node
// waiting for a CPU, the coordinator, a client unable to run with its
// acquire in flight, unless that acquire was refused in the end: it held
// nothing), each for the time it was measured. Stuck but for
// them is no evidence either way: neither stuck nor shown available, and
// no fault broke anything. Beyond them, the key is stuck as before.
func TestLivenessDiscountsMeasuredStalls(t *testing.T) {
	// As TestStuckKeyIsAFinding: nobody held lock:0 from 120 to 2600 ms,
	// 2430 ms of it outside the fault (150–200); stuck after 900 ms.
	build := func(more func(h *hist)) Result {
		h := new(hist).asked("crash-restart").hold(0, k0, 10, 100).fault(1, "crash-restart", []int{0}, 150, 200)
		more(h)
		h.hold(1, k0, 2600, 2650)
		h.events[0].Run.TTLms = 300
		slices.SortStableFunc(h.events, func(x, y history.Event) int { return cmp.Compare(x.Time, y.Time) })
		return Check(h.exit(0, 3000, true).exit(1, 3000, true).end(3010).events, Options{})
	}
	tries := func(h *hist, from, to float64) {
		for at := from; at < to; at += 100 {
			h.acquireAnswer(1, k0, at, at+5, history.Fail)
		}
	}
	// A lock node waited 1.7 s for a CPU: 730 ms left, not stuck.
	r := build(func(h *hist) { tries(h, 120, 2500); h.nodeStall("n0", 300, 2000) })
	if len(r.Liveness.Stuck) != 0 || len(r.Liveness.Stalled) != 1 {
		t.Fatalf("stuck %+v, stalled %+v: %s", r.Liveness.Stuck, r.Liveness.Stalled, r.Summary)
	}
	if st := r.Liveness.Stalled[0]; st.FromMs != 120 || st.ToMs != 2600 || st.OutsideFaultsMs != 2430 || st.StalledMs != 1700 {
		t.Errorf("stalled %+v", st)
	}
	if r.Faults[0].Landed {
		t.Errorf("a span only the stalls kept from being stuck landed the fault: %+v", r.Faults[0])
	}
	if want := "liveness: no evidence — nobody held lock:0 for 2.48 s from t=0.12 s while clients tried 25 acquires, 2.43 s of it outside faults, but measured stalls of the harness cover 1.7 s of that, and the 730 ms left is under the 900 ms after which a key is stuck"; !strings.Contains(r.Summary, want) {
		t.Errorf("summary %q\nwant %q", r.Summary, want)
	}
	// A stall discounts only the time it was measured, outside the fault
	// (which already does): 130–1000 ms covers 820 ms of the span outside
	// it, and 1.61 s is left: stuck, and the fault before it landed.
	r = build(func(h *hist) { tries(h, 120, 2500); h.nodeStall("n0", 130, 1000) })
	if len(r.Liveness.Stuck) != 1 || len(r.Liveness.Stalled) != 0 || r.Liveness.Stuck[0].StalledMs != 820 || !r.Faults[0].Landed {
		t.Fatalf("stuck %+v, stalled %+v, fault %+v", r.Liveness.Stuck, r.Liveness.Stalled, r.Faults[0])
	}
	if want := "(2.43 s of it outside faults, 1.61 s outside measured stalls of the harness too)"; !strings.Contains(r.Summary, want) {
		t.Errorf("summary %q\nwant %q", r.Summary, want)
	}
	// A client that could not run with nothing of the key in flight kept
	// nobody from it: still stuck.
	r = build(func(h *hist) { tries(h, 120, 2500); h.stall(0, 300, 2000) })
	if len(r.Liveness.Stuck) != 1 || r.Liveness.Stuck[0].StalledMs != 0 {
		t.Errorf("an idle client's stall: stuck %+v, stalled %+v", r.Liveness.Stuck, r.Liveness.Stalled)
	}
	// A client that could not run while its acquire of the key was in
	// flight, an acquire that got no answer, may have held it unseen:
	// 1.76 s of its stall counts.
	r = build(func(h *hist) {
		tries(h, 120, 300)
		h.acquireAnswer(1, k0, 300, 2100, history.Info).stall(1, 320, 2080)
		tries(h, 2100, 2500)
	})
	if len(r.Liveness.Stuck) != 0 || len(r.Liveness.Stalled) != 1 || r.Liveness.Stalled[0].StalledMs != 1760 {
		t.Errorf("a client's stall with its acquire in flight: stuck %+v, stalled %+v", r.Liveness.Stuck, r.Liveness.Stalled)
	}
	// An acquire refused in the end held nothing, and its client's stall
	// meanwhile kept nobody out, while another client tried all along:
	// still stuck.
	r = build(func(h *hist) {
		tries(h, 120, 2500)
		h.acquireAnswer(0, k0, 300, 2100, history.Fail).stall(0, 320, 2080)
	})
	if len(r.Liveness.Stuck) != 1 || r.Liveness.Stuck[0].StalledMs != 0 || len(r.Liveness.Stalled) != 0 {
		t.Errorf("a client's stall in an acquire refused: stuck %+v, stalled %+v", r.Liveness.Stuck, r.Liveness.Stalled)
	}
	// Nor does a stall in a refused acquire count once the client tries
	// again: the stall ended (it ran again) with the refused one in
	// flight.
	r = build(func(h *hist) {
		tries(h, 120, 2500)
		h.acquireAnswer(0, k0, 300, 2081, history.Fail).stall(0, 320, 2080).acquireAnswer(0, k0, 2090, 2095, history.Info)
	})
	if len(r.Liveness.Stuck) != 1 || r.Liveness.Stuck[0].StalledMs != 0 {
		t.Errorf("a client's stall in an acquire refused, then another: stuck %+v, stalled %+v", r.Liveness.Stuck, r.Liveness.Stalled)
	}
}

// A wait the kernel counted on the run queue is the machine's even inside
// a fault that stops and starts the client (starve-client's short runs): a
// stopped process is not on the run queue. Beside CPU hogs a starved
// holder's renewal waited there past its lease: that overlap is a stall of
// the harness, not the fault's. The same stall timed by the client's own
// timer (it includes the stops) is the fault's.
func TestRunQueueWaitInsideAStopIsTheMachines(t *testing.T) {
	starved := func(queued bool) Result {
		f := &history.Fault{ID: 1, Name: "starve-client", Action: history.ActionPause, Clients: []int{0}, Stopped: []int{0}}
		h := new(hist).asked("starve-client")
		h.add(history.Event{Time: ms(100), Kind: history.FaultStart, Client: history.NoClient, Fault: f})
		h.hold(0, k0, 10, 1300).hold(1, k0, 1100, 1200)
		h.add(history.Event{Time: ms(1250), Kind: history.Stall, Client: 0, StallNs: ms(350), Queued: queued,
			Message: "its adapter process was ready to run but waited for a CPU"})
		h.add(history.Event{Time: ms(1600), Kind: history.FaultEnd, Client: history.NoClient, Fault: f})
		h.ttl(1000)
		return Check(h.exit(0, 2000, true).exit(1, 2000, true).end(2010).events, Options{})
	}
	r := starved(true)
	if r.Verdict != Violation || len(r.Mutex.Overlaps) != 1 || r.Mutex.Overlaps[0].Cause != CauseStall {
		t.Fatalf("queued: %s %+v: %s", r.Verdict, r.Mutex.Overlaps, r.Summary)
	}
	if r.Stalls.Count != 1 || r.Stalls.MaxMs != 350 || r.Stalls.Worst != 0 {
		t.Errorf("queued: stalls %+v, want client 0's 350 ms", r.Stalls)
	}
	r = starved(false)
	if r.Verdict != Violation || len(r.Mutex.Overlaps) != 1 || r.Mutex.Overlaps[0].Cause != CauseFault {
		t.Fatalf("self-timed: %s %+v: %s", r.Verdict, r.Mutex.Overlaps, r.Summary)
	}
	if r.Stalls.Count != 0 {
		t.Errorf("self-timed: stalls %+v, want none (the fault's)", r.Stalls)
	}
}
