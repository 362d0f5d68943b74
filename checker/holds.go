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
	id      int // 1, 2, … in order of start
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
	// freed is no sooner than the key could have been free for this hold's
	// acquire to set it: an earlier hold of the key, its lease set by
	// freedSince and its ok less than a lease after this acquire's invoke
	// (so set before this acquire could have set the key), kept it until
	// its release or its lease's end, whichever came first (Stream.freedFor);
	// 0 when no earlier hold says more than the acquire's invoke. freedLate
	// is the same from any earlier hold, set by freedLateSince: one granted
	// later may have come after this acquire's own key ran out, unread
	// (setFrom). A blocking acquire (--wait) retries unseen, so its invoke
	// alone says little.
	freed, freedSince, freedLate, freedLateSince int64
	// overlapped: another client's hold of the key overlapped it.
	overlapped bool
	// released is when the hold's release answered ok (0: it failed, got
	// no answer, or the hold did not end by a release): its effect on the
	// store came between end and released, or, unanswered, at any time
	// after end.
	released int64
	// before are the key's holds that had ended when this one began, kept
	// when it began while another client held the key (lateRelease).
	before []*hold
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
	// holds, ops (the mutex history given to porcupine), attempts (every
	// acquire and how it ended, in order of completion) and resourceOps
	// are kept only by a whole replay (replay); the streaming checker
	// consumes them as they come.
	holds       []hold
	ops         []porcupine.Operation
	attempts    []attempt
	resourceOps []resourceOp
	opCount     int // mutex operations

	acquire  AcquireStats
	release  ReleaseStats
	resource ResourceResult // the counts the streaming oracle keeps
	// rejectedReads is how many of resource.StaleRejected were reads.
	rejectedReads   int
	acquireLat      samples // of successful acquires
	releaseLat      samples // of answered releases
	runStart        *history.Event
	runEnd          *history.Event // the last run-end in time
	runEndErrors    []string
	unexpectedExits []history.Event
	malformed       malformed
	// stalls are the times a process of the run could not run (a worker's,
	// or the coordinator's with client -1), in time order.
	stalls []stall
	// kept are the stretches of the run, in time order: the times a fault
	// kept a client inside its critical section on purpose.
	kept []keptSpan
	// workloadNs is how long the workload ran, from the run-end.
	workloadNs int64
	// errors are the lock's errors by kind (info completions).
	errors errorLog
	// missed are the nemeses' steps that became no fault.
	missed []history.Event
}

// keptSpan is one stretch of client, [start, end] (end 0: not let go
// before the run ended); waited says a hold reached the end of its work
// in it and waited there to be let go.
type keptSpan struct {
	client     int
	start, end int64
	waited     bool
}

// stall is one [start, end] during which a process could not run, or
// (why set) during which the harness held a client up otherwise.
type stall struct {
	client     int
	start, end int64
	why        string // "" for a process that could not run
	node       string // a lock node's server that waited for a CPU
	// queued: the kernel counted it on the run queue (history's Queued): a
	// fault that stopped the process did not make it, wherever it falls.
	queued bool
	// key is the key of the client's acquire or release in flight when
	// it ran again, invoked at since ("": none, or an acquire that was
	// refused in the end: it held nothing and kept nobody out): a stall
	// that may have kept the key from its clients (liveness).
	key   string
	since int64
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
	op   *porcupine.Operation // the release op this invoke started, or nil
	hold *hold                // the hold this release ended, or nil
	// stalls are the client's stalls (indexes in trace.stalls) that ended
	// with this acquire in flight: its outcome says whether they may have
	// kept the key from its clients.
	stalls []int
}

type openHold struct {
	depth int
	hold  *hold
}

type clientState struct {
	pending *pendingOp // nil, or slot
	slot    pendingOp
	open    map[string]*openHold
	last    int64 // time of the client's latest event
}

// sink receives what the replay reconstructs, as it happens: the streaming
// checker consumes it and forgets, the batch replay (replay) keeps it.
type sink interface {
	// holdStarted: a hold began (its acquire returned ok); its fields
	// change until holdSettled.
	holdStarted(h *hold)
	// holdEnded: h.end is set (a release was invoked, or the hold was
	// dropped); h.how may still change until holdSettled.
	holdEnded(h *hold)
	// holdSettled: h.how is final.
	holdSettled(h *hold)
	// opAdded: a mutex operation for porcupine. A release's Return and
	// Output are final only at opReturned.
	opAdded(o *porcupine.Operation, key string)
	opReturned(o *porcupine.Operation, key string)
	attempted(a attempt)
	// acquireInvoked: an acquire of key was invoked at t (its completion
	// comes to attempted).
	acquireInvoked(key string, t int64)
	// resourceInvoked: a read or write of the resource was invoked at t.
	resourceInvoked(client int, key string, t int64)
	resourceDone(r resourceOp)
}

// replayer walks events (in time order) as each client lived them. Clients
// are sequential, so a completion belongs to the client's pending invoke.
type replayer struct {
	tr      *trace
	clients map[int]*clientState
	out     sink
	holdID  int
	live    bool // keep no stalls (Options.Live)
}

func newReplayer(out sink) *replayer {
	return &replayer{tr: &trace{}, clients: map[int]*clientState{}, out: out}
}

// replay is the whole replay of a time-ordered history, kept in a trace.
func replay(events []history.Event) *trace {
	c := &collector{}
	rp := newReplayer(c)
	for _, e := range events {
		rp.add(e)
	}
	rp.finish()
	tr := rp.tr
	tr.holds = make([]hold, len(c.holds))
	for i, h := range c.holds {
		tr.holds[i] = *h
	}
	tr.ops = make([]porcupine.Operation, len(c.ops))
	for i, o := range c.ops {
		tr.ops[i] = *o
	}
	tr.attempts, tr.resourceOps = c.attempts, c.resourceOps
	return tr
}

// collector keeps everything a replay reconstructs (replay).
type collector struct {
	holds       []*hold
	ops         []*porcupine.Operation
	attempts    []attempt
	resourceOps []resourceOp
}

func (c *collector) holdStarted(h *hold)                      { c.holds = append(c.holds, h) }
func (c *collector) holdEnded(*hold)                          {}
func (c *collector) holdSettled(*hold)                        {}
func (c *collector) opAdded(o *porcupine.Operation, _ string) { c.ops = append(c.ops, o) }
func (c *collector) opReturned(*porcupine.Operation, string)  {}
func (c *collector) attempted(a attempt)                      { c.attempts = append(c.attempts, a) }
func (c *collector) resourceInvoked(int, string, int64)       {}
func (c *collector) acquireInvoked(string, int64)             {}
func (c *collector) resourceDone(r resourceOp)                { c.resourceOps = append(c.resourceOps, r) }

func (rp *replayer) state(c int) *clientState {
	cs := rp.clients[c]
	if cs == nil {
		cs = &clientState{open: map[string]*openHold{}}
		rp.clients[c] = cs
	}
	return cs
}

// add replays one event; events come in time order.
func (rp *replayer) add(e history.Event) {
	tr := rp.tr
	switch e.Kind {
	case history.RunStart:
		if tr.runStart == nil {
			ev := e
			tr.runStart = &ev
		}
		return
	case history.RunEnd:
		ev := e
		tr.runEnd = &ev
		tr.workloadNs = e.WorkloadNs
		if e.Error != "" {
			tr.runEndErrors = append(tr.runEndErrors, e.Error)
		}
		return
	case history.Stretch:
		// A stretch keeps a hold inside on purpose, from its "on" (the
		// request taken) to its "off"; it kept one when a hold reached the
		// end of its work and waited there ("holding"): that hold's release
		// came when the fault let it go, whatever its process did before.
		switch e.Message {
		case "on":
			tr.kept = append(tr.kept, keptSpan{client: e.Client, start: e.Time})
		case "holding", "off":
			for i := len(tr.kept) - 1; i >= 0; i-- {
				k := &tr.kept[i]
				if k.client != e.Client || k.end != 0 {
					continue
				}
				switch {
				case e.Message == "holding":
					k.waited = true
				case k.waited:
					k.end = e.Time
				default: // no hold waited: nothing was kept
					tr.kept = slices.Delete(tr.kept, i, i+1)
				}
				break
			}
		}
		return
	case history.FaultStart, history.FaultEnd, history.Probe:
		return
	case history.FaultMissed:
		tr.missed = append(tr.missed, e)
		return
	case history.Stall:
		if e.StallNs > 0 && !rp.live {
			s := stall{client: e.Client, start: e.Time - e.StallNs, end: e.Time, node: e.Node, queued: e.Queued}
			if e.Node != "" {
				s.client = history.NoClient
				s.why = fmt.Sprintf("lock node %s was ready to run but waited %s for a CPU", e.Node, Millis(float64(e.StallNs)/1e6))
			} else if cs := rp.clients[e.Client]; cs != nil && cs.pending != nil {
				if inv := cs.pending.inv; inv.F == history.Acquire || inv.F == history.Release {
					s.key, s.since = inv.Key, inv.Time
					if inv.F == history.Acquire {
						cs.pending.stalls = append(cs.pending.stalls, len(tr.stalls))
					}
				}
			}
			tr.stalls = append(tr.stalls, s)
		}
		return
	case history.Invoke, history.OK, history.Fail, history.Info, history.Lost, history.WorkerExit:
	default:
		tr.malformed.unknownKinds++
		return
	}
	if e.Client < 0 {
		tr.malformed.noClient++
		return
	}
	if tr.runEnd != nil && e.Kind != history.WorkerExit {
		tr.malformed.afterRunEnd++ // later in time: ties sort before the run-end
	}
	cs := rp.state(e.Client)
	cs.last = max(cs.last, e.Time)
	switch e.Kind {
	case history.Invoke:
		rp.invoke(cs, e)
	case history.OK, history.Fail, history.Info:
		rp.complete(cs, e)
	case history.Lost:
		if oh := cs.open[e.Key]; oh != nil {
			rp.drop(cs, e.Key, oh, e.Time, EndLost)
		}
	case history.WorkerExit:
		// A dead process touches nothing: its holds end here, and its
		// pending operation will never complete.
		for _, k := range sortedKeys(cs.open) {
			rp.drop(cs, k, cs.open[k], e.Time, EndExit)
		}
		rp.abandon(cs)
		if !e.Expected {
			tr.unexpectedExits = append(tr.unexpectedExits, e)
		}
	}
}

// finish closes what the history left open. Without a run-end the history
// was cut short: a client is only known to have held until its last event,
// so only overlaps proven up to there are claimed.
func (rp *replayer) finish() {
	tr := rp.tr
	for _, c := range sortedKeys(rp.clients) {
		cs := rp.clients[c]
		rp.abandon(cs)
		end := cs.last
		if tr.runEnd != nil {
			end = tr.runEnd.Time
		}
		for _, k := range sortedKeys(cs.open) {
			oh := cs.open[k]
			rp.drop(cs, k, oh, max(end, oh.hold.start), EndOpen)
		}
	}
}

func (rp *replayer) invoke(cs *clientState, e history.Event) {
	tr := rp.tr
	if cs.pending != nil {
		tr.malformed.superseded++
		rp.abandon(cs)
	}
	cs.slot = pendingOp{inv: e}
	p := &cs.slot
	switch e.F {
	case history.Acquire:
		tr.acquire.Attempted++
		rp.out.acquireInvoked(e.Key, e.Time)
	case history.Release:
		tr.release.Attempted++
		// The client stops touching the resource when it decides to
		// release, so the hold ends at the invoke whatever the answer. A
		// release with nothing held (after a loss) ends nothing.
		if oh := cs.open[e.Key]; oh != nil {
			p.op = rp.addOp(OpRelease, e, oh.depth, e.Time, nil)
			oh.depth--
			if oh.depth == 0 {
				h := oh.hold
				h.end, h.how = e.Time, EndReleaseUnknown
				p.hold = h
				delete(cs.open, e.Key)
				rp.out.holdEnded(h)
			}
		}
	case history.Read, history.Write:
		rp.out.resourceInvoked(e.Client, e.Key, e.Time)
	default:
		tr.malformed.unknownOps++ // still pending: its completion is no orphan
	}
	cs.pending = p
}

func (rp *replayer) complete(cs *clientState, e history.Event) {
	tr := rp.tr
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
	if e.Kind == history.Info && e.Error != "" {
		tr.errors.add(inv.F, e.Error, e.Client, e.Time)
	}
	switch inv.F {
	case history.Acquire:
		switch e.Kind {
		case history.OK:
			tr.acquire.OK++
			tr.acquireLat.add(e.Time - inv.Time)
			rp.out.attempted(attempt{inv: inv, done: e.Time, outcome: AttemptOK})
			// The client enters its critical section only once the acquire
			// has returned: the hold starts at the ok.
			oh := cs.open[inv.Key]
			fresh := oh == nil
			if fresh {
				rp.holdID++
				h := &hold{id: rp.holdID, key: inv.Key, client: inv.Client, invoked: inv.Time, start: e.Time, end: -1}
				oh = &openHold{hold: h}
				cs.open[inv.Key] = oh
			}
			oh.hold.granted, oh.hold.grantedOK = inv.Time, e.Time
			rp.addOp(OpAcquire, inv, oh.depth, e.Time, "ok")
			oh.depth++
			if fresh {
				rp.out.holdStarted(oh.hold)
			}
		case history.Fail:
			tr.acquire.Failed++
			rp.out.attempted(attempt{inv: inv, done: e.Time, outcome: AttemptFailed})
			// Refused: it set nothing, so its client's stalls meanwhile
			// kept nobody from the key. (One that got no answer may have
			// set it, and one that got the key held it.)
			for _, i := range p.stalls {
				tr.stalls[i].key = ""
			}
		default:
			tr.acquire.Unknown++
			rp.out.attempted(attempt{inv: inv, done: e.Time, outcome: AttemptUnknown})
		}
	case history.Release:
		how := EndReleaseUnknown
		switch {
		case e.Kind == history.OK:
			tr.release.OK++
			how = EndRelease
			if p.hold != nil {
				p.hold.released = e.Time
			}
		case e.Kind == history.Fail && e.Error == history.ErrNotHeld:
			tr.release.NotHeld++
			how = EndReleaseNotHeld
		default:
			tr.release.Unknown++
		}
		if e.Kind != history.Info {
			tr.releaseLat.add(e.Time - inv.Time)
		}
		if p.op != nil {
			p.op.Return = e.Time
			p.op.Output = outputOf(e)
			rp.out.opReturned(p.op, inv.Key)
		}
		if p.hold != nil {
			p.hold.how = how
			rp.out.holdSettled(p.hold)
		}
	case history.Read, history.Write:
		rp.out.resourceDone(resourceOpOf(inv, &e))
	}
}

// abandon settles a client's pending operation that will never complete.
func (rp *replayer) abandon(cs *clientState) {
	tr := rp.tr
	p := cs.pending
	if p == nil {
		return
	}
	cs.pending = nil
	switch p.inv.F {
	case history.Acquire:
		tr.acquire.Unknown++ // never completed: the client never entered
		rp.out.attempted(attempt{inv: p.inv, done: -1, outcome: AttemptUnknown})
	case history.Release:
		tr.release.Unknown++ // its op stays [invoke, invoke]; the hold ended at the invoke
		if p.op != nil {
			p.op.Output = "unknown"
			rp.out.opReturned(p.op, p.inv.Key)
		}
		if p.hold != nil {
			rp.out.holdSettled(p.hold)
		}
	case history.Read, history.Write:
		rp.out.resourceDone(resourceOpOf(p.inv, nil))
	}
}

// drop ends an open hold at t, however deep, as a point operation.
func (rp *replayer) drop(cs *clientState, key string, oh *openHold, t int64, how HoldEnd) {
	h := oh.hold
	h.end, h.how = t, how
	delete(cs.open, key)
	rp.tr.opCount++
	rp.out.opAdded(&porcupine.Operation{
		ClientId: h.client,
		Input:    MutexInput{Op: OpDrop, Client: h.client, Key: key, Depth: oh.depth},
		Call:     t,
		Output:   how,
		Return:   t,
	}, key)
	rp.out.holdEnded(h)
	rp.out.holdSettled(h)
}

func (rp *replayer) addOp(op string, inv history.Event, depth int, ret int64, out any) *porcupine.Operation {
	rp.tr.opCount++
	o := &porcupine.Operation{
		ClientId: inv.Client,
		Input:    MutexInput{Op: op, Client: inv.Client, Key: inv.Key, Depth: depth},
		Call:     inv.Time,
		Output:   out,
		Return:   ret,
	}
	rp.out.opAdded(o, inv.Key)
	return o
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

func sortedKeys[K interface{ ~int | ~int64 | ~string }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
