package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lockchaos/lockchaos/history"
)

// An overlap is the harness's own doing when the harness stalled the
// earlier holder at least as long as the overlap lasted: its own process,
// or the coordinator while its acquire's reply waited in the proxies. A
// stall that a fault caused on purpose (a SIGSTOP) is the fault; a stall
// shorter than the overlap explains nothing.
func TestOverlapCauses(t *testing.T) {
	for _, tc := range []overlapCase{
		{
			name: "descheduled holder",
			// Client 0 meant to hold 20 ms; it could not run from 15 to 300,
			// its lease ran out, client 1 took the lock at 280.
			h:       new(hist).start().stall(0, 15, 300).hold(0, k0, 10, 305).hold(1, k0, 280, 320),
			cause:   CauseStall,
			summary: "no fault explains it: client 0 could not run for 285 ms, as long as the overlap lasted (a stall of the harness, not a fault)",
		},
		{
			name: "paused on purpose",
			h: new(hist).start().add(history.Event{Time: ms(12), Kind: history.FaultStart, Client: history.NoClient,
				Fault: &history.Fault{ID: 1, Name: "pause-client", Clients: []int{0}, Stopped: []int{0}}}).
				add(history.Event{Time: ms(301), Kind: history.FaultEnd, Client: history.NoClient,
					Fault: &history.Fault{ID: 1, Name: "pause-client", Clients: []int{0}, Stopped: []int{0}}}).
				stall(0, 15, 300).hold(0, k0, 10, 305).hold(1, k0, 280, 320),
			cause:  CauseFault,
			faults: 1,
		},
		{
			name: "late reply through a stalled coordinator",
			// The coordinator forwards every request: while it could not
			// run, client 0's OK waited, and its hold began late.
			h:     new(hist).start().stall(-1, 5, 250).acquire(0, k0, 2, 255).release(0, k0, 310, 311).hold(1, k0, 303, 330),
			cause: CauseStall,
		},
		{
			name: "a reply late with no fault and no stall measured is the lock's own time",
			// The other holds' acquires took 1 ms, this one 270 ms, and no
			// process of the run was measured to wait: a lock that opens
			// its session on its first acquire, or retries, takes that
			// long on its own. Slower than typical blames nobody.
			h: new(hist).start().hold(1, k0, 5, 8).hold(1, k0, 12, 15).hold(0, k0, 20, 25).
				acquire(0, k0, 30, 300).release(0, k0, 320, 321).hold(1, k0, 310, 330),
			cause:   CauseNone,
			summary: "; no fault was active",
		},
		{
			name: "a reply late while a lock node waited for a CPU is a stall of the harness",
			h: new(hist).start().hold(1, k0, 5, 8).hold(1, k0, 12, 15).hold(0, k0, 20, 25).
				nodeStall("n0", 40, 290).acquire(0, k0, 30, 300).release(0, k0, 320, 321).hold(1, k0, 310, 330),
			cause:   CauseStall,
			summary: "lock node n0 was ready to run but waited 250 ms for a CPU",
		},
		// A lock whose release ends whoever's lock (ShedLock's JDBC
		// unlock; 2026-11-30): client 2 holds from 3 and releases at 50;
		// its client gives up on the release at 400, not knowing whether
		// it ran. Its lease ran out at 300; client 0 takes the key at 320,
		// client 1 at 331 while client 0's lease lives: client 2's release
		// reached the store between the two and ended client 0's lease.
		// What delayed it is the cause.
		{
			name: "a blind release the lock's server delayed past the next grant is a stall of the harness",
			h: new(hist).start().ttl(300).blind().acquire(2, k0, 2, 3).nodeStall("n0", 60, 330).releaseTimedOut(2, k0, 50, 400).
				hold(0, k0, 321, 500).hold(1, k0, 331, 520),
			cause:   CauseStall,
			summary: "client 2's release, invoked at 0.05 s, may have reached the store only after client 0's key was set",
		},
		{
			name: "a blind release a fault delayed past the next grant is the fault's",
			h: new(hist).start().ttl(300).blind().linkFault(1, "jitter", 40, 200).acquire(2, k0, 2, 3).releaseTimedOut(2, k0, 50, 400).
				hold(0, k0, 321, 500).hold(1, k0, 331, 520),
			cause:  CauseFault,
			faults: 1,
		},
		{
			name: "a blind release late with nothing measured to delay it is the lock's own",
			h: new(hist).start().ttl(300).blind().acquire(2, k0, 2, 3).releaseTimedOut(2, k0, 50, 400).
				hold(0, k0, 321, 500).hold(1, k0, 331, 520),
			cause: CauseNone,
		},
		{
			name: "a release that checks its owner ends nobody's lease, however late",
			h: new(hist).start().ttl(300).acquire(2, k0, 2, 3).nodeStall("n0", 60, 330).releaseTimedOut(2, k0, 50, 400).
				hold(0, k0, 321, 500).hold(1, k0, 331, 520),
			cause: CauseNone,
		},
		{
			name: "a blind release answered before the next key was set ended nothing of it",
			h: new(hist).start().ttl(300).blind().acquire(2, k0, 2, 3).nodeStall("n0", 60, 330).release(2, k0, 50, 310).
				hold(0, k0, 321, 500).hold(1, k0, 331, 520),
			cause: CauseNone,
		},
		{
			name: "a stall shorter than from the next key's set to the overlap explains nothing",
			// Client 0's key set no sooner than 320, client 1's ok at 331:
			// a release delayed 5 ms less would still have come after 320.
			h: new(hist).start().ttl(300).blind().acquire(2, k0, 2, 3).nodeStall("n0", 60, 65).releaseTimedOut(2, k0, 50, 400).
				hold(0, k0, 321, 500).hold(1, k0, 331, 520),
			cause: CauseNone,
		},
		{
			name: "a lock without a lease: a late reply explains nothing",
			// The same history from a lock whose grant has no lease (a
			// PostgreSQL session lock): a grant that arrives late still
			// lasts until it is released, so no stall can make two holds
			// overlap; the lock (or a fault) did.
			h: new(hist).leaseless().hold(1, k0, 5, 8).hold(1, k0, 12, 15).hold(0, k0, 20, 25).
				acquire(0, k0, 30, 300).release(0, k0, 320, 321).hold(1, k0, 310, 330),
			cause: CauseNone,
		},
		{
			name: "a reply late under a fault is the fault's",
			h: new(hist).start().fault(1, "slow-reply", []int{0}, 25, 400).hold(1, k0, 5, 8).hold(1, k0, 12, 15).hold(0, k0, 20, 22).
				acquire(0, k0, 30, 300).release(0, k0, 320, 321).hold(1, k0, 310, 330),
			cause:  CauseFault,
			faults: 1,
		},
		{
			name: "a lock node's wait after it answered a reply the fault held back explains nothing",
			// slow-reply held client 0's reply in the proxies from 45, when
			// the server answered (its nemesis measured it): the server's
			// wait for a CPU from 50 delayed nothing of that acquire.
			// (Beside CPU hogs a PostgreSQL primary waited so, in the 1.9 s
			// a reply to ShedLock's acquire was held back, in 3 of 3 runs
			// of shedlock-jdbc+slow-reply, 2026-11-30: each was called a
			// stall of the harness.)
			h: new(hist).start().slowReply(1, 0, k0, 300, 25, 400, 45).hold(1, k0, 5, 8).hold(1, k0, 12, 15).hold(0, k0, 20, 22).
				nodeStall("n0", 50, 290).acquire(0, k0, 30, 300).release(0, k0, 320, 321).hold(1, k0, 310, 330),
			cause:  CauseFault,
			faults: 1,
		},
		{
			name: "a lock node's wait before it answered still explains the overlap",
			// The same, the server waiting 32..44, before it answered at
			// 45: had it run on time, the grant would have come 12 ms
			// sooner, and the 11 ms overlap would not have been.
			h: new(hist).start().slowReply(1, 0, k0, 300, 25, 400, 45).hold(1, k0, 5, 8).hold(1, k0, 12, 15).hold(0, k0, 20, 22).
				nodeStall("n0", 32, 44).acquire(0, k0, 30, 300).release(0, k0, 320, 321).hold(1, k0, 310, 330),
			cause:   CauseStall,
			faults:  1,
			summary: "lock node n0 was ready to run but waited 12 ms for a CPU",
		},
		{
			name: "an answer measured for another hold shortens nothing",
			// The fault aimed at a hold of client 1: client 0's acquire
			// is not the one whose answer it measured.
			h: new(hist).start().slowReply(1, 1, k0, 330, 25, 400, 45).hold(1, k0, 5, 8).hold(1, k0, 12, 15).hold(0, k0, 20, 22).
				nodeStall("n0", 50, 290).acquire(0, k0, 30, 300).release(0, k0, 320, 321).hold(1, k0, 310, 330),
			cause:  CauseStall,
			faults: 1,
		},
		{
			name: "a stall shorter than the overlap explains nothing",
			// A hold far longer than the lease: the lock's own failure.
			h:       new(hist).start().stall(0, 50, 70).hold(0, k0, 10, 600).hold(1, k0, 310, 620),
			cause:   CauseNone,
			summary: "no fault was active (client 0 could not run for 20 ms, shorter than the overlap)",
		},
		{
			name: "the harness's resource node answered late",
			// Client 0's write took 260 ms where writes take 1 ms: its
			// hold outlived its lease by the harness's doing, not the lock's.
			h: new(hist).start().hold(1, k0, 1, 4).write(1, k0, 2, 3, history.OK, 1, 0).hold(1, k0, 5, 8).write(1, k0, 6, 7, history.OK, 2, 0).
				hold(0, k0, 10, 305).write(0, k0, 20, 280, history.OK, 3, 0).hold(1, k0, 290, 320).write(1, k0, 295, 296, history.OK, 4, 0),
			cause:   CauseStall,
			summary: "client 0's write of the protected counter took 260 ms (the run's typical: 1.0 ms): the harness's own resource node, which no fault touches, answered late",
		},
		{
			name: "a slow resource op beside a fault on the lock is still the harness's",
			// A fault on the lock's nodes or links (a paused lock node, a
			// slow link) does not reach the resource: a 300 ms read that
			// answered after 2.3 s beside pause-node, the reader's lease
			// run out meanwhile, was once called the lock's own failure.
			h: new(hist).start().fault(1, "latency", nil, 15, 400).hold(1, k0, 1, 4).write(1, k0, 2, 3, history.OK, 1, 0).hold(1, k0, 5, 8).write(1, k0, 6, 7, history.OK, 2, 0).
				hold(0, k0, 10, 305).write(0, k0, 20, 280, history.OK, 3, 0).hold(1, k0, 290, 320).write(1, k0, 295, 296, history.OK, 4, 0),
			cause:   CauseStall,
			faults:  1,
			summary: "client 0's write of the protected counter took 260 ms",
		},
		{
			name: "a slow resource op of a client a fault stopped is the fault's",
			h: new(hist).start().add(history.Event{Time: ms(15), Kind: history.FaultStart, Client: history.NoClient,
				Fault: &history.Fault{ID: 1, Name: "pause-client", Clients: []int{0}, Stopped: []int{0}}}).
				add(history.Event{Time: ms(282), Kind: history.FaultEnd, Client: history.NoClient,
					Fault: &history.Fault{ID: 1, Name: "pause-client", Clients: []int{0}, Stopped: []int{0}}}).
				hold(1, k0, 1, 4).write(1, k0, 2, 3, history.OK, 1, 0).hold(1, k0, 5, 8).write(1, k0, 6, 7, history.OK, 2, 0).
				hold(0, k0, 10, 305).write(0, k0, 20, 280, history.OK, 3, 0).hold(1, k0, 290, 320).write(1, k0, 295, 296, history.OK, 4, 0),
			cause:  CauseFault,
			faults: 1,
		},
		{
			name: "a stall while a fault kept the holder inside is the fault's",
			// A failover keeps client 0 inside (a stretch) until client 1
			// takes the key on the promoted node, then lets it go: its
			// process's stall while it waited there delayed nothing (its
			// JVM adapter waiting for a CPU beside the hogs made every
			// Redisson failover cell inconclusive).
			h: new(hist).start().aimed(1, "failover", 0, k0, 10, 5, 400, &history.Effect{Landed: true, Lease: history.LeaseLost}).
				stretch(0, "on", 8).
				stall(0, 12, 60).
				stretch(0, "holding", 30).
				stall(0, 80, 250).
				stretch(0, "off", 300).
				hold(0, k0, 10, 305).hold(1, k0, 290, 320),
			cause:  CauseFault,
			faults: 1,
		},
		{
			name: "a stall while a fault kept the holder inside, its lease not taken by the fault, is the harness's",
			// The same, but the fault did not take the lease away (its
			// nemesis saw it kept): a watchdog that could not run while
			// the hold was kept may have lost it.
			h: new(hist).start().aimed(1, "failover", 0, k0, 10, 5, 400, &history.Effect{Landed: true, Lease: history.LeaseKept}).
				stretch(0, "on", 8).
				stretch(0, "holding", 30).
				stall(0, 80, 250).
				stretch(0, "off", 300).
				hold(0, k0, 10, 305).hold(1, k0, 290, 320),
			cause:  CauseStall,
			faults: 1,
		},
		{
			name: "a stretch that kept no hold waiting spares no stall",
			// The request was taken, but the hold ended on its own before
			// it reached the end of its work: the stall may have delayed it.
			h: new(hist).start().fault(1, "failover", []int{0}, 5, 400).
				stretch(0, "on", 8).
				stall(0, 15, 300).
				stretch(0, "off", 306).
				hold(0, k0, 10, 305).hold(1, k0, 280, 320),
			cause:  CauseStall,
			faults: 1,
		},
		{
			name: "a stall after the fault let the holder go is still the harness's",
			h: new(hist).start().fault(1, "failover", []int{0}, 5, 400).
				stretch(0, "on", 8).
				stretch(0, "holding", 30).
				stretch(0, "off", 291).
				stall(0, 200, 305).
				hold(0, k0, 10, 305).hold(1, k0, 300, 320),
			cause:  CauseStall,
			faults: 1,
		},
		{
			name:  "another client's stall is not the earlier holder's",
			h:     new(hist).start().stall(1, 15, 300).hold(0, k0, 10, 305).hold(1, k0, 280, 320),
			cause: CauseNone,
		},
		{
			name: "fault active before the overlap, stall shorter than it",
			h: new(hist).start().fault(1, "latency", nil, 5, 400).stall(-1, 20, 30).
				hold(0, k0, 10, 350).hold(1, k0, 300, 360),
			cause:  CauseFault,
			faults: 1,
		},
	} {
		t.Run(tc.name, tc.check)
	}
}

// overlapCase is a history with one overlap, and what caused it.
type overlapCase struct {
	name    string
	h       *hist
	cause   string
	faults  int
	summary string // "" or what the run's summary must say
}

func (tc overlapCase) check(t *testing.T) {
	r := Check(tc.h.exit(0, 900, true).exit(1, 900, true).exit(2, 900, true).end(910).events, Options{})
	if r.Verdict != Violation || len(r.Mutex.Overlaps) != 1 {
		t.Fatalf("%s: %s", r.Verdict, r.Summary)
	}
	o := r.Mutex.Overlaps[0]
	if o.Cause != tc.cause || len(o.Faults) != tc.faults || r.Evidence.Overlaps[tc.cause] != 1 {
		t.Errorf("cause %s, faults %v, by cause %v; want %s with %d faults (%s)", o.Cause, o.Faults, r.Evidence.Overlaps, tc.cause, tc.faults, r.Summary)
	}
	if tc.summary != "" && !strings.Contains(r.Summary, tc.summary) {
		t.Errorf("summary %q\nwant it to say %q", r.Summary, tc.summary)
	}
	if r.FirstViolationMs == nil || *r.FirstViolationMs < 0 || r.FirstViolationCause != tc.cause {
		t.Errorf("first violation %v (%s)", r.FirstViolationMs, r.FirstViolationCause)
	}
}

// A fault aimed at a hold landed when its nemesis says so and the history
// has that hold, still going when the fault began; what became of the
// lease comes from the history first, then from the nemesis, then from the
// holder's release.
func TestAimedFaultsLandAndTheirLeasesFate(t *testing.T) {
	landed := &history.Effect{Landed: true, Note: "the node lost the key"}
	for _, tc := range []struct {
		name   string
		h      *hist
		landed bool
		lease  string
		effect string
	}{
		{
			name:   "lost: another client held the key meanwhile",
			h:      new(hist).start().hold(0, k0, 10, 100).aimed(1, "crash-restart", 0, k0, 10, 12, 60, landed).hold(1, k0, 50, 120),
			landed: true, lease: history.LeaseLost, effect: "the node lost the key",
		},
		{
			name:   "lost: its release found the lease gone",
			h:      new(hist).start().acquire(0, k0, 9, 10).aimed(1, "clock-jump", 0, k0, 10, 12, 60, landed).releaseNotHeld(0, k0, 100, 101),
			landed: true, lease: history.LeaseLost,
		},
		{
			name:   "kept: the nemesis saw it survive",
			h:      new(hist).start().hold(0, k0, 10, 100).aimed(1, "crash-restart", 0, k0, 10, 12, 60, &history.Effect{Landed: true, Lease: history.LeaseKept}),
			landed: true, lease: history.LeaseKept,
		},
		{
			name:   "kept: released ok, nobody else held it",
			h:      new(hist).start().hold(0, k0, 10, 100).aimed(1, "latency", 0, k0, 10, 12, 60, &history.Effect{Landed: true}),
			landed: true, lease: history.LeaseKept,
		},
		{
			name: "unknown: the release got no answer",
			h: new(hist).start().acquire(0, k0, 9, 10).aimed(1, "pause-node", 0, k0, 10, 12, 60, &history.Effect{Landed: true}).
				op(0, history.Invoke, history.Release, k0, 100).op(0, history.Info, history.Release, k0, 101),
			landed: true, lease: history.LeaseUnknown,
		},
		{
			name:   "the nemesis says it did not land",
			h:      new(hist).start().hold(0, k0, 10, 100).aimed(1, "crash-restart", 0, k0, 10, 12, 60, &history.Effect{Landed: false, Note: "restarted too late"}),
			landed: false, effect: "restarted too late",
		},
		{
			name:   "the aimed hold had ended before the fault began",
			h:      new(hist).start().hold(0, k0, 10, 20).aimed(1, "crash-restart", 0, k0, 10, 30, 60, landed),
			landed: false, effect: "client 0's hold of lock:0 had ended at t=0.02 s, before the fault began",
		},
		{
			name:   "the history has no such hold",
			h:      new(hist).start().hold(0, k0, 10, 20).aimed(1, "crash-restart", 1, k0, 10, 12, 60, landed),
			landed: false, effect: "the history has no hold of lock:0 by client 1 from t=0.01 s",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h.exit(0, 900, true).exit(1, 900, true).end(910).events, Options{})
			f := r.Faults[0]
			if f.Landed != tc.landed || f.Lease != tc.lease || !strings.Contains(f.Effect, tc.effect) {
				t.Errorf("landed %v, lease %q, effect %q; want %v, %q, %q", f.Landed, f.Lease, f.Effect, tc.landed, tc.lease, tc.effect)
			}
			if f.Aim == nil || f.Aim.Key != k0 || f.Aim.SinceMs != 10 {
				t.Errorf("aim %+v", f.Aim)
			}
			n := 0
			if tc.landed {
				n = 1
			}
			if r.Evidence.Landed != n {
				t.Errorf("evidence %+v", r.Evidence)
			}
		})
	}
}

// A run that asked for a nemesis and in which no fault landed tested
// nothing of what it asked for: inconclusive, never safe, with the reason;
// a step that became no fault says why. With two nemeses, each must land.
func TestNoFaultLandedIsInconclusive(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *hist
		want string
	}{
		{
			name: "a fault that did not land",
			h:    new(hist).asked("latency").hold(0, k0, 10, 20).fault(1, "latency", nil, 100, 200).hold(1, k0, 30, 40),
			want: "inconclusive: nemesis latency was asked for, but none of its 1 fault landed",
		},
		{
			name: "no fault at all: every step missed",
			h: new(hist).asked("pause-client").hold(0, k0, 10, 20).hold(1, k0, 30, 40).
				add(history.Event{Time: ms(50), Kind: history.FaultMissed, Client: history.NoClient,
					Fault: &history.Fault{Name: "pause-client", Step: 1}, Message: "no target: client 3 has exited"}),
			want: "inconclusive: nemesis pause-client was asked for, but no fault was injected: 1 step missed (the first: no target: client 3 has exited)",
		},
		{
			// Each nemesis counts on its own: a failover that landed does
			// not stand for the pause the workload's end cut short.
			name: "one of two nemeses landed nothing",
			h: new(hist).asked("failover", "pause-client").hold(0, k0, 10, 100).
				aimed(1, "failover", 0, k0, 10, 12, 60, &history.Effect{Landed: true, Lease: history.LeaseKept, Note: "the new leader kept it"}).
				hold(1, k0, 110, 200).
				aimed(2, "pause-client", 1, k0, 110, 150, 190, &history.Effect{Landed: false, Note: "the workload ended"}),
			want: "inconclusive: nemesis pause-client (beside failover) was asked for, but none of its 1 fault landed (pause-client (lock node 0): the workload ended)",
		},
		{
			// The same nemesis asked for twice (two option sets) is one
			// pool of faults, named once.
			name: "a nemesis asked for twice landed nothing",
			h:    new(hist).asked("latency", "latency").hold(0, k0, 10, 20).fault(1, "latency", nil, 100, 200).hold(1, k0, 30, 40),
			want: "inconclusive: nemesis latency was asked for, but none of its 1 fault landed: nothing was tested of what it does",
		},
		{
			name: "one of two nemeses injected nothing",
			h: new(hist).asked("failover", "pause-client").hold(0, k0, 10, 100).
				aimed(1, "failover", 0, k0, 10, 12, 60, &history.Effect{Landed: true, Lease: history.LeaseKept, Note: "the new leader kept it"}).
				hold(1, k0, 110, 200).
				add(history.Event{Time: ms(250), Kind: history.FaultMissed, Client: history.NoClient,
					Fault: &history.Fault{Name: "pause-client", Step: 1}, Message: "the workload ended before the step's time"}),
			want: "inconclusive: nemesis pause-client (beside failover) was asked for, but no fault was injected: 1 step missed (the first: the workload ended before the step's time)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h.exit(0, 900, true).exit(1, 900, true).end(910).events, Options{})
			if r.Verdict != Inconclusive || !strings.HasPrefix(r.Summary, tc.want) {
				t.Errorf("%s: %s\nwant it to begin %q", r.Verdict, r.Summary, tc.want)
			}
		})
	}
	// The same history without a nemesis asked for is a plain, safe run.
	h := new(hist).start().hold(0, k0, 10, 20).hold(1, k0, 30, 40).exit(0, 900, true).exit(1, 900, true).end(910)
	if r := Check(h.events, Options{}); r.Verdict != Safe {
		t.Errorf("no nemesis: %s: %s", r.Verdict, r.Summary)
	}
	// A proven overlap stays a violation.
	h = new(hist).asked("latency").fault(1, "latency", nil, 5, 8).hold(0, k0, 10, 50).hold(1, k0, 30, 60).exit(0, 900, true).exit(1, 900, true).end(910)
	if r := Check(h.events, Options{}); r.Verdict != Violation {
		t.Errorf("overlap: %s: %s", r.Verdict, r.Summary)
	}
}

// A fault that took a lease away opened a race only if the holder could
// still be inside when the lease ran out: a holder that left before (its
// lock told it, as a Redlock whose validity ran out tells it, or it
// released) settled it, and a safe run is evidence. The history can tell
// only for a lease of known length under a fault that cannot end a lease
// early; everywhere else a safe run in which nobody came for the key stays
// no evidence.
func TestALeaseLostAfterItsHolderLeftOpenedNoRace(t *testing.T) {
	lostLease := &history.Effect{Landed: true, Lease: history.LeaseLost, Note: "the holder stayed past its lease"}
	// The grant's acquire is invoked at t=9; the lease is 100 ms: it can
	// run out on a node from t=109 on.
	run := func(action history.Action, keepsAlive bool, end func(h *hist) *hist) Result {
		h := new(hist).start()
		h.events[0].Run.TTLms, h.events[0].Run.KeepsAlive = 100, keepsAlive
		h.acquire(0, k0, 9, 10)
		f := &history.Fault{ID: 1, Name: "a fault", Action: action, Target: "worker", Aim: &history.Aim{Client: 0, Key: k0, Since: ms(10)}}
		h.add(history.Event{Time: ms(12), Kind: history.FaultStart, Client: history.NoClient, Fault: f})
		end(h)
		h.add(history.Event{Time: ms(300), Kind: history.FaultEnd, Client: history.NoClient, Fault: f, Effect: lostLease})
		return Check(h.exit(0, 900, true).exit(1, 900, true).end(910).events, Options{})
	}
	lostAt := func(t float64) func(h *hist) *hist { return func(h *hist) *hist { return h.lost(0, k0, t) } }
	for _, tc := range []struct {
		name       string
		r          Result
		leftInTime bool
	}{
		{"told at 80 ms, under a slow hold", run(history.ActionSlow, false, lostAt(80)), true},
		{"told at 80 ms, under a network fault", run(history.ActionNetwork, false, lostAt(80)), true},
		{"released at 50 ms, the answer not_held", run(history.ActionNetwork, false, func(h *hist) *hist { return h.releaseNotHeld(0, k0, 50, 200) }), true},
		{"told at 150 ms, after the lease could have run out", run(history.ActionSlow, false, lostAt(150)), false},
		{"told at 80 ms, under a clock fault (a node's lease may end early)", run(history.ActionClock, false, lostAt(80)), false},
		{"told at 80 ms, under a crash (a node may forget at once)", run(history.ActionCrash, false, lostAt(80)), false},
		{"told at 80 ms, the fault's kind not recorded (an older history)", run("", false, lostAt(80)), false},
		// Not even a lease from the acquire: etcd's session lease is
		// granted before the acquire, which does not renew it, and may
		// have been about to run out when the key was put under it.
		{"told at 80 ms, a lease kept alive (its end unknown)", run(history.ActionSlow, true, lostAt(80)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.r.Faults[0]
			if !f.Landed || f.Lease != history.LeaseLost || f.LeftInTime != tc.leftInTime {
				t.Fatalf("landed %v, lease %q, left in time %v; want landed, lost, %v (%s)", f.Landed, f.Lease, f.LeftInTime, tc.leftInTime, tc.r.Summary)
			}
			why := tc.r.RaceNotRun()
			if tc.r.Verdict != Safe || (why == "") != tc.leftInTime {
				t.Errorf("verdict %s, race not run %q; want safe, and no evidence unless the holder left in time", tc.r.Verdict, why)
			}
			if tc.leftInTime && tc.r.NoEvidence() != "" {
				t.Errorf("no evidence: %s", tc.r.NoEvidence())
			}
		})
	}
}

// A lock that reported its lease lost while the nodes still held it (a
// ZooKeeper session outlives a failover; zk-lock and Curator give the lock
// up when their connection drops) kept the lease: the nemesis asked the
// nodes, and the checker takes their word over the lost event. Such a run
// is evidence: the store kept what the fault was to take. When the nodes
// forgot it, the lease is lost and, under a failover, the race was not run.
func TestALostEventOnALeaseTheNodesKeptIsAKeptLease(t *testing.T) {
	run := func(effect *history.Effect) Result {
		h := new(hist).start()
		h.events[0].Run.TTLms, h.events[0].Run.KeepsAlive = 3000, true
		h.acquire(0, k0, 9, 10)
		f := &history.Fault{ID: 1, Name: "failover", Action: history.ActionFailover, Target: "zookeeper", Aim: &history.Aim{Client: 0, Key: k0, Since: ms(10)}}
		h.add(history.Event{Time: ms(12), Kind: history.FaultStart, Client: history.NoClient, Fault: f})
		h.lost(0, k0, 40)
		h.add(history.Event{Time: ms(300), Kind: history.FaultEnd, Client: history.NoClient, Fault: f, Effect: effect})
		return Check(h.exit(0, 900, true).exit(1, 900, true).end(910).events, Options{})
	}
	kept := run(&history.Effect{Landed: true, Lease: history.LeaseKept, Note: "the nodes kept the lease"})
	if f := kept.Faults[0]; !f.Landed || f.Lease != history.LeaseKept || kept.Verdict != Safe || kept.NoEvidence() != "" {
		t.Errorf("nodes kept it: landed %v, lease %q, verdict %s, no evidence %q; want landed, kept, safe, evidence (%s)", f.Landed, f.Lease, kept.Verdict, kept.NoEvidence(), kept.Summary)
	}
	lost := run(&history.Effect{Landed: true, Lease: history.LeaseLost, Note: "the nodes forgot the lease"})
	if f := lost.Faults[0]; !f.Landed || f.Lease != history.LeaseLost || lost.RaceNotRun() == "" {
		t.Errorf("nodes forgot it: landed %v, lease %q, race not run %q; want landed, lost, race not run (%s)", f.Landed, f.Lease, lost.RaceNotRun(), lost.Summary)
	}
}

// A stall explains an overlap only when a lease may have run out before
// the other grant: the earlier holder's, counted by the run's TTL from the
// earliest its key could have been set (after the key's previous holder
// released it or its lease ran out: a blocking acquire's retries are not
// in the history), or the later holder's, whose answer waited unread.
// When the two grants came less than a lease apart, one came while the
// other's lease lived: the lock (or an active fault) did it, whatever
// stalled. The stall named is the one of the side it explains.
func TestAStallExplainsOnlyWhatNoLiveLeaseDoes(t *testing.T) {
	for _, tc := range []overlapCase{
		{
			name: "the second grant came while the first lease lived",
			// Client 0's lease (300 ms from its acquire's invoke at 9)
			// lived until at least t=309; client 1 was granted by t=200.
			// Client 0 could not run for 285 ms, but no stall makes a
			// lock grant a key whose lease lives.
			h:       new(hist).start().ttl(300).stall(0, 15, 300).hold(0, k0, 10, 305).hold(1, k0, 200, 320),
			cause:   CauseNone,
			summary: "no fault was active (client 0 could not run for 285 ms, but client 0's lease still lived when client 1's acquire returned: no stall explains it)",
		},
		{
			name:   "the second grant came while the first lease lived, under a fault",
			h:      new(hist).start().ttl(300).linkFault(1, "slow-reply", 5, 400).stall(0, 15, 300).hold(0, k0, 10, 305).hold(1, k0, 200, 320),
			cause:  CauseFault,
			faults: 1,
		},
		{
			name: "the first lease may have run out: the stall stands",
			// The same stall, client 1 granted at 280, past t=259 when
			// a 250 ms lease counted from client 0's invoke ran out.
			h:       new(hist).start().ttl(250).stall(0, 15, 300).hold(0, k0, 10, 305).hold(1, k0, 280, 320),
			cause:   CauseStall,
			summary: "no fault explains it: client 0 could not run for 285 ms",
		},
		{
			name: "the later holder's answer waited unread past its lease",
			// Client 0's acquire (invoked at 10) set the key, then client
			// 0 could not run until 600: its lease ran out at ~310 and
			// client 1 took the key at 401. Client 0 read its ok at 601,
			// when client 1 held. Client 1's own 80 ms stall is not what
			// made them overlap: client 0's is.
			h: new(hist).start().ttl(300).stall(0, 12, 600).acquire(0, k0, 10, 601).release(0, k0, 650, 651).
				acquire(1, k0, 400, 401).stall(1, 500, 580).release(1, k0, 700, 701),
			cause:   CauseStall,
			summary: "no fault explains it: client 0 could not run for 588 ms",
		},
		{
			name: "a blocking acquire's lease counts from when the key could be set, not from its invoke",
			// Client 1 waits in a blocking acquire from t=5; it could set
			// the key only once client 0's lease (300 ms from t=0) ran out
			// or its release (invoked at 250) arrived: not before 250.
			// It got the key by 310. Client 0's release, slowed by the
			// link, deleted client 1's live key; client 2 took it at 400,
			// while client 1's lease still lived (from 250 at the
			// earliest, until 550). Client 1's 200 ms stall while it
			// waited, before its key could be set, shortened nothing.
			h: new(hist).start().ttl(300).linkFault(1, "latency", 0, 700).
				acquire(0, k0, 0, 1).release(0, k0, 250, 400).
				stall(1, 50, 250).acquire(1, k0, 5, 310).release(1, k0, 600, 601).
				acquire(2, k0, 395, 400).release(2, k0, 500, 501),
			cause:  CauseFault,
			faults: 1,
		},
		{
			name: "a hold granted after the acquire's own key ran out bounds nothing",
			// Client 0's acquire (invoked at 10) set the key at once; then
			// client 0 could not run until 700. Its lease ran out at ~310;
			// client 1 took the key at 401 and let it go at 500; client 0
			// read its ok at 701, its lease long gone, and client 2 took the
			// key at 761. Client 1's hold, granted a lease after client 0's
			// invoke, does not say client 0's key was set after it.
			h: new(hist).start().ttl(300).stall(0, 12, 700).acquire(0, k0, 10, 701).release(0, k0, 900, 901).
				hold(1, k0, 401, 500).hold(2, k0, 761, 850),
			cause:   CauseStall,
			summary: "no fault explains it: client 0 could not run for 688 ms",
		},
		{
			name: "a stall of the later holder after it read its ok explains nothing",
			// Client 1's acquire (invoked at 0) may have set the key at
			// once, and client 0 was granted by 400, past t=300 when that
			// lease may have run out: only if client 1's answer waited
			// unread for a lease. It waited 100 ms (300–400). Client 1
			// then could not run from 451 to 800, inside its hold: that
			// stall came after its grant, and does not say client 0 was
			// granted while client 1's lease lived no more.
			h: new(hist).start().ttl(300).acquire(0, k0, 200, 400).release(0, k0, 800, 801).
				stall(1, 300, 400).acquire(1, k0, 0, 450).stall(1, 451, 800).release(1, k0, 850, 851),
			cause:   CauseNone,
			summary: "no fault was active (client 1 could not run for 100 ms",
		},
		{
			name: "the later holder's answer waited unread past its lease, however long the overlap",
			// Client 1's acquire set the key at 0; client 1 could not run
			// until 350, its lease gone at 300; client 0 took the key at
			// 310. Both then stalled inside their holds (500–840,
			// 411–880), and the overlap lasted 500 ms, longer than client
			// 1's stall: that stall still began it.
			h: new(hist).start().ttl(300).stall(1, 0, 350).acquire(1, k0, 0, 350).stall(1, 500, 840).release(1, k0, 850, 851).
				acquire(0, k0, 310, 311).stall(0, 411, 880).release(0, k0, 880, 881),
			cause:   CauseStall,
			summary: "no fault explains it: client 1 could not run for 350 ms",
		},
	} {
		t.Run(tc.name, tc.check)
	}
}

// However the stalls fall, an overlap whose two grants came less than a
// lease apart (as the history bounds them) is never a stall's; nor one
// granted to the later holder while the earlier one's lease lived, unless
// the later holder's answer waited unread for a lease: its stalls (and the
// coordinator's) between its invoke and its ok lasted that long. What it
// stalled once it held says nothing of when it was granted.
func TestPropertyNoStallOverALiveLease(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const lease = 300
		h := new(hist).start().ttl(lease)
		aInv := rapid.Float64Range(300, 400).Draw(t, "aInv")
		aOK := aInv + rapid.Float64Range(0.5, 400).Draw(t, "aLat")
		bInv := rapid.Float64Range(0, aOK+400).Draw(t, "bInv")
		bOK := max(bInv+rapid.Float64Range(0.5, 400).Draw(t, "bLat"), aOK+0.5)
		aEnd := bOK + rapid.Float64Range(0.5, 300).Draw(t, "aPast")
		bEnd := bOK + rapid.Float64Range(0.5, 300).Draw(t, "bHold")
		var unread [][2]int64 // client 1's and the coordinator's stalls while its acquire was in flight
		for i := range rapid.IntRange(0, 4).Draw(t, "stalls") {
			c := rapid.IntRange(-1, 1).Draw(t, fmt.Sprint("who", i))
			from := rapid.Float64Range(0, 1500).Draw(t, fmt.Sprint("from", i))
			to := from + rapid.Float64Range(1, 800).Draw(t, fmt.Sprint("len", i))
			h.stall(c, from, to)
			if lo, hi := max(from, bInv), min(to, bOK); c != 0 && lo < hi {
				unread = append(unread, [2]int64{ms(lo), ms(hi)})
			}
		}
		h.acquire(0, k0, aInv, aOK).release(0, k0, aEnd, aEnd+1).acquire(1, k0, bInv, bOK).release(1, k0, bEnd, bEnd+1)
		slices.SortStableFunc(h.events, func(x, y history.Event) int { return cmp.Compare(x.Time, y.Time) })
		r := Check(h.exit(0, 3000, true).exit(1, 3000, true).end(3010).events, Options{})
		if len(r.Mutex.Overlaps) != 1 {
			t.Fatalf("%d overlaps: %s", len(r.Mutex.Overlaps), r.Summary)
		}
		o := r.Mutex.Overlaps[0]
		aLived := bOK-aInv < lease
		if live := aLived && (aOK-bInv < lease || union(unread) < ms(lease)); live && o.Cause == CauseStall {
			t.Fatalf("the later grant came while the earlier lease lived, and no stall kept its answer unread for a lease, yet %s: %s", o.Cause, r.Summary)
		}
	})
}

// A lock that keeps its leases (a key set at the server's instant, lasting
// the TTL, released only by its owner) makes two holds overlap only by a
// stall of the harness: its clients' answers unread while they could not
// run, their holds stretched past their leases. When every such delay is
// measured, however the clients wait (blocking acquires that retry unseen
// included), no overlap is the lock's own.
func TestPropertyAKeptLeaseOverlapsOnlyByAStall(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const lease, clients = 300.0, 3
		h := new(hist).start().ttl(lease)
		type client struct {
			next     float64 // when it acts next
			invoked  float64 // its acquire in flight since, or -1
			holding  bool    // next, it releases
			blocking bool
		}
		var cs [clients]*client
		for c := range cs {
			cs[c] = &client{next: rapid.Float64Range(0, 50).Draw(t, "t0"), invoked: -1}
		}
		owner, expires := -1, 0.0
		for step := 0; step < 60; step++ {
			c := 0
			for i := range cs {
				if cs[i].next < cs[c].next {
					c = i
				}
			}
			cl, now := cs[c], cs[c].next
			if cl.holding {
				h.op(c, history.Invoke, history.Release, k0, now)
				if owner == c && now < expires {
					owner = -1 // its own key, still set: deleted
				}
				h.op(c, history.OK, history.Release, k0, now+1)
				cl.holding, cl.next = false, now+1+rapid.Float64Range(5, 60).Draw(t, "think")
				continue
			}
			if cl.invoked < 0 {
				cl.invoked, cl.blocking = now, rapid.Bool().Draw(t, "blocking")
				h.op(c, history.Invoke, history.Acquire, k0, now)
			}
			if owner >= 0 && now < expires {
				if cl.blocking && now-cl.invoked < 4*lease {
					cl.next = now + rapid.Float64Range(5, 60).Draw(t, "retry")
					continue
				}
				h.op(c, history.Fail, history.Acquire, k0, now+1)
				cl.invoked, cl.next = -1, now+1+rapid.Float64Range(5, 60).Draw(t, "think")
				continue
			}
			// The key is set now; the answer is read after a stall, if any.
			owner, expires = c, now+lease
			ok := now + 1
			if rapid.IntRange(0, 3).Draw(t, "stallsBeforeOK") == 0 {
				d := rapid.Float64Range(20, 3*lease).Draw(t, "unread")
				h.stall(c, now, now+d)
				ok = now + d
			}
			h.op(c, history.OK, history.Acquire, k0, ok)
			end := ok + rapid.Float64Range(5, lease/2).Draw(t, "hold")
			if rapid.IntRange(0, 3).Draw(t, "stallsInHold") == 0 {
				d := rapid.Float64Range(20, 2*lease).Draw(t, "stretched")
				h.stall(c, end, end+d)
				end += d
			}
			cl.invoked, cl.holding, cl.next = -1, true, end
		}
		for c, cl := range cs {
			if cl.holding {
				h.op(c, history.Invoke, history.Release, k0, cl.next).op(c, history.OK, history.Release, k0, cl.next+1)
			}
		}
		slices.SortStableFunc(h.events, func(x, y history.Event) int { return cmp.Compare(x.Time, y.Time) })
		last := h.events[len(h.events)-1].Time
		for c := range clients {
			h.exit(c, float64(last)/1e6+10, true)
		}
		r := Check(h.end(float64(last)/1e6+20).events, Options{})
		if n := r.Evidence.Overlaps[CauseNone]; n > 0 {
			t.Fatalf("%d of %d overlaps the lock's own: %s", n, r.Mutex.OverlapCount, r.Summary)
		}
	})
}
