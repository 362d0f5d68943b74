package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/lockchaos/lockchaos/history"
)

// HoldEnd is how a hold ended (HoldSpan.End).
type HoldEnd string

const (
	EndRelease        HoldEnd = "release"          // its release answered ok
	EndReleaseNotHeld HoldEnd = "release-not-held" // its release found the lease gone
	EndReleaseUnknown HoldEnd = "release-unknown"  // its release failed or got no answer
	EndLost           HoldEnd = "lost"             // the client learned it lost the lock
	EndExit           HoldEnd = "exit"             // the process died
	EndOpen           HoldEnd = "open"             // still held when the history ends
)

// hold is one critical section in nanoseconds of the monotonic clock.
type hold struct {
	key     string
	client  int
	invoked int64 // the outermost acquire's invoke
	start   int64 // the outermost acquire's ok
	end     int64 // release invoke, lost, exit, or the end of the history
	how     HoldEnd
	// granted and grantedOK are the invoke and the ok of the hold's latest
	// successful acquire (a reentrant one sets the lease again): the lock's
	// nodes set the lease between the two.
	granted, grantedOK int64
}

// resourceOp is one completed or abandoned read or write of the resource.
type resourceOp struct {
	f       string
	key     string
	client  int
	invoke  int64
	done    int64        // completion time; meaningless when outcome is ""
	outcome history.Kind // OK, Fail, Info, or "" when it never completed
	value   *int64       // read: the value read; write: the value written
	fence   int64
}

// trace is what one pass over the time-ordered events reconstructs.
type trace struct {
	cutOff bool // the file's last line was cut off (Options.CutOff)
	holds  []hold
	ops    []porcupine.Operation // the mutex history given to porcupine

	acquire      AcquireStats
	release      ReleaseStats
	acquireLatNs []int64
	releaseLatNs []int64
	// attempts are every acquire and how it ended, in order of completion.
	attempts        []attempt
	resourceOps     []resourceOp
	runStart        *history.Event
	runEnd          *history.Event // the last run-end in time
	runEndErrors    []string
	unexpectedExits []history.Event
	malformed       malformed
	// stalls are the times a process of the run could not run (a worker's,
	// or the coordinator's with client -1), in time order.
	stalls []stall
	// workloadNs is how long the workload ran, from the run-end.
	workloadNs int64
}

// stall is one [start, end] during which a process could not run, or
// (why set) during which the harness held a client up otherwise.
type stall struct {
	client     int
	start, end int64
	why        string // "" for a process that could not run
}

// malformed counts events that break the history's own rules. Each one is a
// hole in the evidence (a lost line, a client that was not sequential), so
// any of them makes the history incomplete.
type malformed struct {
	orphanCompletions int // an ok, fail or info with no pending invoke
	superseded        int // an invoke while the same client had one pending
	mismatched        int // a completion naming another op or key than its invoke
	unknownOps        int // an invoke of an op the checker does not know
	noClient          int // a client event without a client, or a worker-exit without one
	afterRunEnd       int // a client operation after the run-end: the run went on unrecorded
	unknownKinds      int
}

func (m malformed) reason() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(m.orphanCompletions, "completions without an invoke")
	add(m.superseded, "invokes while the same client had one pending")
	add(m.mismatched, "completions that do not match their invoke")
	add(m.unknownOps, "invokes of an unknown operation")
	add(m.noClient, "client events without a client")
	add(m.afterRunEnd, "client events after the run-end")
	add(m.unknownKinds, "events of an unknown kind")
	if len(parts) == 0 {
		return ""
	}
	return "history malformed: " + strings.Join(parts, ", ") + "; holds may be missing"
}

type pendingOp struct {
	inv  history.Event
	op   int // index in trace.ops of the release this invoke started, or -1
	hold int // index in trace.holds of the hold this release ended, or -1
}

type openHold struct {
	depth int
	hold  int // index in trace.holds
}

type clientState struct {
	pending *pendingOp
	open    map[string]*openHold
	last    int64 // time of the client's latest event
}

// replay walks events (sorted by time) as each client lived them. Clients are
// sequential, so a completion belongs to the client's pending invoke.
func replay(events []history.Event) *trace {
	tr := &trace{}
	clients := map[int]*clientState{}
	state := func(c int) *clientState {
		cs := clients[c]
		if cs == nil {
			cs = &clientState{open: map[string]*openHold{}}
			clients[c] = cs
		}
		return cs
	}
	for i := range events {
		e := events[i]
		switch e.Kind {
		case history.RunStart:
			if tr.runStart == nil {
				tr.runStart = &events[i]
			}
			continue
		case history.RunEnd:
			tr.runEnd = &events[i]
			tr.workloadNs = e.WorkloadNs
			if e.Error != "" {
				tr.runEndErrors = append(tr.runEndErrors, e.Error)
			}
			continue
		case history.FaultStart, history.FaultEnd, history.Probe, history.Stretch:
			continue
		case history.Stall:
			if e.StallNs > 0 {
				tr.stalls = append(tr.stalls, stall{client: e.Client, start: e.Time - e.StallNs, end: e.Time})
			}
			continue
		case history.Invoke, history.OK, history.Fail, history.Info, history.Lost, history.WorkerExit:
		default:
			tr.malformed.unknownKinds++
			continue
		}
		if e.Client < 0 {
			tr.malformed.noClient++
			continue
		}
		if tr.runEnd != nil && e.Kind != history.WorkerExit {
			tr.malformed.afterRunEnd++ // later in time: ties sort before the run-end
		}
		cs := state(e.Client)
		cs.last = max(cs.last, e.Time)
		switch e.Kind {
		case history.Invoke:
			tr.invoke(cs, e)
		case history.OK, history.Fail, history.Info:
			tr.complete(cs, e)
		case history.Lost:
			if oh := cs.open[e.Key]; oh != nil {
				tr.drop(cs, e.Key, oh, e.Time, EndLost)
			}
		case history.WorkerExit:
			// A dead process touches nothing: its holds end here, and its
			// pending operation will never complete.
			for _, k := range sortedKeys(cs.open) {
				tr.drop(cs, k, cs.open[k], e.Time, EndExit)
			}
			tr.abandon(cs)
			if !e.Expected {
				tr.unexpectedExits = append(tr.unexpectedExits, e)
			}
		}
	}
	// Close what the history left open. Without a run-end the history was cut
	// short: a client is only known to have held until its last event, so
	// only overlaps proven up to there are claimed.
	for _, c := range sortedKeys(clients) {
		cs := clients[c]
		tr.abandon(cs)
		end := cs.last
		if tr.runEnd != nil {
			end = tr.runEnd.Time
		}
		for _, k := range sortedKeys(cs.open) {
			oh := cs.open[k]
			tr.drop(cs, k, oh, max(end, tr.holds[oh.hold].start), EndOpen)
		}
	}
	return tr
}

func (tr *trace) invoke(cs *clientState, e history.Event) {
	if cs.pending != nil {
		tr.malformed.superseded++
		tr.abandon(cs)
	}
	p := &pendingOp{inv: e, op: -1, hold: -1}
	switch e.F {
	case history.Acquire:
		tr.acquire.Attempted++
	case history.Release:
		tr.release.Attempted++
		// The client stops touching the resource when it decides to
		// release, so the hold ends at the invoke whatever the answer. A
		// release with nothing held (after a loss) ends nothing.
		if oh := cs.open[e.Key]; oh != nil {
			p.op = tr.addOp(OpRelease, e, oh.depth, e.Time, nil)
			oh.depth--
			if oh.depth == 0 {
				h := &tr.holds[oh.hold]
				h.end, h.how = e.Time, EndReleaseUnknown
				p.hold = oh.hold
				delete(cs.open, e.Key)
			}
		}
	case history.Read, history.Write:
	default:
		tr.malformed.unknownOps++ // still pending: its completion is no orphan
	}
	cs.pending = p
}

func (tr *trace) complete(cs *clientState, e history.Event) {
	p := cs.pending
	if p == nil {
		tr.malformed.orphanCompletions++
		return
	}
	cs.pending = nil
	inv := p.inv
	if (e.F != "" && e.F != inv.F) || (e.Key != "" && e.Key != inv.Key) {
		tr.malformed.mismatched++
	}
	switch inv.F {
	case history.Acquire:
		switch e.Kind {
		case history.OK:
			tr.acquire.OK++
			tr.acquireLatNs = append(tr.acquireLatNs, e.Time-inv.Time)
			tr.attempts = append(tr.attempts, attempt{inv: inv, done: e.Time, outcome: AttemptOK})
			// The client enters its critical section only once the acquire
			// has returned: the hold starts at the ok.
			oh := cs.open[inv.Key]
			if oh == nil {
				tr.holds = append(tr.holds, hold{key: inv.Key, client: inv.Client, invoked: inv.Time, start: e.Time, end: -1})
				oh = &openHold{hold: len(tr.holds) - 1}
				cs.open[inv.Key] = oh
			}
			tr.holds[oh.hold].granted, tr.holds[oh.hold].grantedOK = inv.Time, e.Time
			tr.addOp(OpAcquire, inv, oh.depth, e.Time, "ok")
			oh.depth++
		case history.Fail:
			tr.acquire.Failed++
			tr.attempts = append(tr.attempts, attempt{inv: inv, done: e.Time, outcome: AttemptFailed})
		default:
			tr.acquire.Unknown++
			tr.attempts = append(tr.attempts, attempt{inv: inv, done: e.Time, outcome: AttemptUnknown})
		}
	case history.Release:
		how := EndReleaseUnknown
		switch {
		case e.Kind == history.OK:
			tr.release.OK++
			how = EndRelease
		case e.Kind == history.Fail && e.Error == history.ErrNotHeld:
			tr.release.NotHeld++
			how = EndReleaseNotHeld
		default:
			tr.release.Unknown++
		}
		if e.Kind != history.Info {
			tr.releaseLatNs = append(tr.releaseLatNs, e.Time-inv.Time)
		}
		if p.op >= 0 {
			tr.ops[p.op].Return = e.Time
			tr.ops[p.op].Output = outputOf(e)
		}
		if p.hold >= 0 {
			tr.holds[p.hold].how = how
		}
	case history.Read, history.Write:
		tr.resourceOps = append(tr.resourceOps, resourceOpOf(inv, &e))
	}
}

// abandon settles a client's pending operation that will never complete.
func (tr *trace) abandon(cs *clientState) {
	p := cs.pending
	if p == nil {
		return
	}
	cs.pending = nil
	switch p.inv.F {
	case history.Acquire:
		tr.acquire.Unknown++ // never completed: the client never entered
		tr.attempts = append(tr.attempts, attempt{inv: p.inv, done: -1, outcome: AttemptUnknown})
	case history.Release:
		tr.release.Unknown++ // its op stays [invoke, invoke]; the hold ended at the invoke
		if p.op >= 0 {
			tr.ops[p.op].Output = "unknown"
		}
	case history.Read, history.Write:
		tr.resourceOps = append(tr.resourceOps, resourceOpOf(p.inv, nil))
	}
}

// drop ends an open hold at t, however deep, as a point operation.
func (tr *trace) drop(cs *clientState, key string, oh *openHold, t int64, how HoldEnd) {
	h := &tr.holds[oh.hold]
	h.end, h.how = t, how
	tr.ops = append(tr.ops, porcupine.Operation{
		ClientId: h.client,
		Input:    MutexInput{Op: OpDrop, Client: h.client, Key: key, Depth: oh.depth},
		Call:     t,
		Output:   how,
		Return:   t,
	})
	delete(cs.open, key)
}

func (tr *trace) addOp(op string, inv history.Event, depth int, ret int64, out any) int {
	tr.ops = append(tr.ops, porcupine.Operation{
		ClientId: inv.Client,
		Input:    MutexInput{Op: op, Client: inv.Client, Key: inv.Key, Depth: depth},
		Call:     inv.Time,
		Output:   out,
		Return:   ret,
	})
	return len(tr.ops) - 1
}

func outputOf(e history.Event) string {
	switch {
	case e.Kind == history.OK:
		return "ok"
	case e.Error != "":
		return string(e.Kind) + ": " + e.Error
	}
	return string(e.Kind)
}

func resourceOpOf(inv history.Event, done *history.Event) resourceOp {
	r := resourceOp{f: inv.F, key: inv.Key, client: inv.Client, invoke: inv.Time, value: inv.Value, fence: inv.Fence}
	if done == nil {
		return r
	}
	r.done, r.outcome = done.Time, done.Kind
	if inv.F == history.Read {
		r.value = done.Value
	}
	if done.Fence != 0 && (inv.F == history.Read || r.fence == 0) {
		r.fence = done.Fence
	}
	return r
}

func sortedKeys[K interface{ ~int | ~string }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
