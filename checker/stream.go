package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockchaos/lockchaos/history"
)

// Stream is the checker fed one event at a time, in time order (Check sorts
// a history in memory; CheckFile reorders a file as it reads it). It keeps
// what a verdict still needs, not the history: per key the holds in
// progress and the mutex operations since the key was last free; per client
// its operation in flight; the faults, the stalls and the overlaps found.
// So its memory is bounded by the clients, the keys and the anomalies (an
// overlap, a stall, a fault), not by the length of the run.
//
// Porcupine checks each key's history in segments, cut where the lock is
// free and no operation on it is in flight: every operation before the cut
// returned before every later one was invoked, and the model is free at
// the cut in any linearization, so the whole is linearizable exactly when
// every segment is. A segment whose operations do not overlap in time has
// one order only and is stepped through the model directly; the others go
// to porcupine in batches, each batch under Options.Timeout.
type Stream struct {
	opts    Options
	timeout time.Duration
	rp      *replayer
	tr      *trace

	seen        bool
	first, last int64 // the first and the last event's time
	runStart    *history.Event
	probes      []history.Event
	keys        map[string]*keyState
	dirty       []*keyState
	holds       int
	heldKeys    int
	// keyHolders is the most clients that held one key.
	keyHolders   int
	firstHolds   []*hold
	pairs        [][2]*hold // holds of two clients on one key, each begun while the other was held
	faults       []*faultRecord
	faultByID    map[int]*faultRecord
	availability Availability
	attempts     []attempt // completed in the latest instant
	liveEvents   []liveEvent
	// live are the faults that may still matter to what comes: open, or
	// ended after an acquire still in flight began, or aimed at a hold
	// that may still begin (pruneFaults).
	live   []*faultRecord
	events int

	// porcupine: segments waiting to be checked, and the answer so far.
	queue    [][]porcupine.Operation
	queued   int
	answer   porcupine.CheckResult
	checkDur time.Duration

	resLat  samples // of the resource's reads and writes
	slow    []resourceOp
	snaps   map[int]resourceSnap
	overlap func(Overlap) // OnOverlap
	model   porcupine.Model
}

// keyState is what the stream keeps of one lock key.
type keyState struct {
	key    string
	open   []*hold // holds not ended yet
	recent []*hold // the last holds that ended, newest last
	seg    []*porcupine.Operation
	// releases whose answer is still awaited: their operations are open.
	releases int
	dirty    bool
	held     bool // some client held it
	// holders are the clients that held it, up to two.
	holders []int
	res     resourceKey
	live    keyLive
}

const (
	recentHolds      = 16
	maxFaultHolds    = 64 // holds begun during a fault kept to judge it
	porcupineBatch   = 1 << 12
	porcupineBatchOp = 1 << 15
)

// NewStream starts a check.
func NewStream(opts Options) *Stream {
	s := &Stream{opts: opts, timeout: opts.Timeout, keys: map[string]*keyState{}, faultByID: map[int]*faultRecord{},
		answer: porcupine.Ok, snaps: map[int]resourceSnap{}, model: MutexModel()}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	s.rp = newReplayer(s)
	s.rp.live = opts.Live
	s.tr = s.rp.tr
	s.tr.cutOff = opts.CutOff
	return s
}

// OnOverlap sets f to be called with each pair of holds of two clients on
// one key that the stream sees begin while the other was still held, as
// soon as it sees it (in ms since the run started; cause and faults not yet
// known). It is a live hint, for a progress line: Result decides.
func (s *Stream) OnOverlap(f func(Overlap)) { s.overlap = f }

func (s *Stream) key(k string) *keyState {
	ks := s.keys[k]
	if ks == nil {
		ks = &keyState{key: k}
		s.keys[k] = ks
	}
	return ks
}

func (s *Stream) touch(ks *keyState) {
	if !ks.dirty {
		ks.dirty = true
		s.dirty = append(s.dirty, ks)
	}
}

// Add checks one more event. Events must come in time order (among events
// of one instant: a client's own in the order it wrote them, and a
// fault-end, a worker-exit and the run-end last; sortByTime's order).
func (s *Stream) Add(e history.Event) {
	if !s.seen {
		s.first, s.seen = e.Time, true
	}
	if e.Time > s.last {
		s.settleAttempts() // every event of the earlier instants is in
		s.liveSettle()
	}
	s.last = e.Time
	switch e.Kind {
	case history.RunStart:
		if s.runStart == nil {
			ev := e
			s.runStart = &ev
		}
	case history.Probe:
		s.probes = append(s.probes, e)
	case history.FaultStart, history.FaultEnd:
		if e.Fault != nil && !s.opts.Live {
			s.fault(e)
		}
	}
	s.rp.add(e)
	for _, ks := range s.dirty {
		ks.dirty = false
		if len(ks.open) == 0 && ks.releases == 0 && len(ks.seg) > 0 {
			s.cut(ks)
		}
	}
	s.dirty = s.dirty[:0]
	if len(s.queue) >= porcupineBatch || s.queued >= porcupineBatchOp {
		s.runPorcupine()
	}
	if s.events++; s.events%4096 == 0 && len(s.live) > 0 {
		s.pruneFaults()
	}
}

// pruneFaults forgets, for what comes, the faults that ended before every
// acquire in flight began (no acquire still to complete was invoked
// inside them, and no hold can begin inside them) and whose aimed hold is
// found or can no longer begin.
func (s *Stream) pruneFaults() {
	s.settleAttempts()
	oldest := s.last
	for _, cs := range s.rp.clients {
		if p := cs.pending; p != nil && p.inv.F == history.Acquire {
			oldest = min(oldest, p.inv.Time)
		}
	}
	s.live = slices.DeleteFunc(s.live, func(f *faultRecord) bool {
		aimPending := f.fault.Aim != nil && f.aimed == nil && f.fault.Aim.Since >= s.last
		if !f.ended || f.end > oldest || aimPending {
			return false
		}
		f.keepFirst()
		return true
	})
}

// keepFirst forgets the holds judge will not pick: of those that ended,
// all but the first that was held during the fault (judge's order).
func (f *faultRecord) keepFirst() {
	var first *hold
	kept := f.holds[:0]
	for _, h := range f.holds {
		switch {
		case h.end < 0:
			kept = append(kept, h) // still held: its end decides later
		case h.start < f.end && h.end > f.start && (len(f.fault.Clients) == 0 || slices.Contains(f.fault.Clients, h.client)) &&
			(first == nil || cmp.Or(cmp.Compare(h.start, first.start), cmp.Compare(h.client, first.client), cmp.Compare(h.key, first.key)) < 0):
			first = h
		}
	}
	if first != nil {
		kept = append(kept, first)
	}
	clear(f.holds[len(kept):])
	f.holds = kept
}

// cut ends the key's segment: the lock is free and nothing on it is in
// flight.
func (s *Stream) cut(ks *keyState) {
	seg := ks.seg
	defer func() {
		clear(ks.seg)
		ks.seg = ks.seg[:0]
	}()
	if s.opts.Live {
		return
	}
	slices.SortStableFunc(seg, func(a, b *porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	sequential := true
	for i := 1; i < len(seg); i++ {
		if seg[i-1].Return >= seg[i].Call {
			sequential = false
			break
		}
	}
	if !sequential {
		ops := make([]porcupine.Operation, len(seg))
		for i, o := range seg {
			ops[i] = *o
		}
		s.queue = append(s.queue, ops)
		s.queued += len(ops)
		return
	}
	// One order only: the segment is linearizable exactly when the model
	// accepts the operations in it.
	state := mutexState(free)
	for _, o := range seg {
		ok, next := s.model.Step(state, o.Input, o.Output)
		if !ok {
			s.answer = porcupine.Illegal
			return
		}
		state = next.(mutexState)
	}
}

func (s *Stream) runPorcupine() {
	if len(s.queue) == 0 {
		return
	}
	queue := s.queue
	s.queue, s.queued = nil, 0
	if s.answer == porcupine.Illegal {
		return // one illegal segment decides
	}
	m := s.model
	m.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return queue }
	began := time.Now()
	res := porcupine.CheckOperationsTimeout(m, nil, s.timeout)
	s.checkDur += time.Since(began)
	switch res {
	case porcupine.Illegal:
		s.answer = porcupine.Illegal
	case porcupine.Unknown:
		s.answer = porcupine.Unknown
	}
}

// The sink: what the replay reconstructs.

func (s *Stream) holdStarted(h *hold) {
	s.holds++
	ks := s.key(h.key)
	if !ks.held {
		ks.held = true
		s.heldKeys++
	}
	if len(ks.holders) < 2 && !slices.Contains(ks.holders, h.client) {
		ks.holders = append(ks.holders, h.client)
		s.keyHolders = max(s.keyHolders, len(ks.holders))
	}
	for _, a := range ks.open {
		if a.client != h.client {
			if !s.opts.Live {
				s.pairs = append(s.pairs, [2]*hold{a, h})
				if h.before == nil {
					h.before = slices.Clone(ks.recent)
				}
			}
			if s.overlap != nil && a.start < h.start {
				s.overlap(Overlap{Key: h.key, Clients: [2]int{a.client, h.client}, StartMs: float64(h.start-s.origin()) / 1e6})
			}
		}
	}
	s.liveNote(ks, h.start, liveStarted)
	s.freedFor(ks, h)
	ks.open = append(ks.open, h)
	if len(s.firstHolds) < maxFaultHolds && !s.opts.Live {
		s.firstHolds = append(s.firstHolds, h)
	}
	for _, f := range s.live {
		if f.started && !f.ended && f.during < maxFaultHolds {
			f.during++
			f.holds = append(f.holds, h)
		}
		// A fault may be aimed at an acquire in flight: its hold begins
		// after the fault did.
		if a := f.fault.Aim; a != nil && f.aimed == nil && h.client == a.Client && h.key == a.Key && h.start == a.Since {
			f.aimed = h
		}
	}
	s.touch(ks)
}

// freedFor sets h.freed and h.freedLate from the key's holds that ended
// before h began: each kept the key from its grant's ok until its release
// was invoked or its lease, counted from its grant's invoke, ran out,
// whichever came first, so h's acquire set the key no sooner — when it
// set it after that hold's grant, with a lock that keeps its leases and no
// fault meanwhile (setFrom).
func (s *Stream) freedFor(ks *keyState, h *hold) {
	var tl timeline
	tl.setLease(s.runInfo())
	if tl.lease <= 0 {
		return
	}
	for _, p := range ks.recent {
		if p.grantedOK <= 0 || p.end < 0 {
			continue
		}
		until := min(p.end, p.granted+tl.lease)
		if until > h.freedLate {
			h.freedLate, h.freedLateSince = until, p.granted
		}
		if p.grantedOK < h.granted+tl.lease && until > h.freed {
			h.freed, h.freedSince = until, p.granted
		}
	}
}

func (s *Stream) holdEnded(h *hold) {
	ks := s.key(h.key)
	if i := slices.Index(ks.open, h); i >= 0 {
		ks.open = slices.Delete(ks.open, i, i+1)
		s.liveNote(ks, h.end, liveEnded)
	}
	if len(ks.recent) == recentHolds {
		ks.recent = slices.Delete(ks.recent, 0, 1)
	}
	ks.recent = append(ks.recent, h)
	s.touch(ks)
}

func (s *Stream) holdSettled(*hold) {}

func (s *Stream) opAdded(o *porcupine.Operation, key string) {
	ks := s.key(key)
	ks.seg = append(ks.seg, o)
	if o.Input.(MutexInput).Op == OpRelease {
		ks.releases++
	}
	s.touch(ks)
}

func (s *Stream) opReturned(_ *porcupine.Operation, key string) {
	ks := s.key(key)
	ks.releases--
	s.touch(ks)
}

// attempted keeps an acquire until every event of its instant is in
// (settleAttempts).
func (s *Stream) attempted(a attempt) {
	s.attempts = append(s.attempts, a)
	t := a.done
	if t < 0 {
		t = s.last // abandoned: its worker is gone
	}
	ks := s.key(a.inv.Key)
	s.liveNote(ks, t, liveCompleted)
	if a.outcome == AttemptUnknown {
		ks.live.unknown = max(ks.live.unknown, a.inv.Time)
	}
}

func (s *Stream) acquireInvoked(key string, t int64) { s.liveNote(s.key(key), t, liveInvoked) }

// settleAttempts counts the acquires invoked while a fault window was open
// (an acquire that never completed counts as not OK). A window that is
// still open at an acquire's completion contains its invocation, unless it
// began later: fault events of the instant it completed are all in.
func (s *Stream) settleAttempts() {
	for _, a := range s.attempts {
		t := a.inv.Time
		for _, f := range s.live {
			if (!f.started || f.start <= t) && (!f.ended || t < f.end) {
				s.availability.Attempted++
				if a.outcome == AttemptOK {
					s.availability.OK++
				}
				break
			}
		}
	}
	s.attempts = s.attempts[:0]
}

// origin is the time results count from, as far as the stream knows yet.
func (s *Stream) origin() int64 {
	if s.runStart != nil {
		return s.runStart.Time
	}
	return s.first
}

// fault follows one fault-start or fault-end.
func (s *Stream) fault(e history.Event) {
	f := s.faultByID[e.Fault.ID]
	if f == nil {
		x := e.Fault
		f = &faultRecord{fault: x,
			w: FaultWindow{ID: x.ID, Name: x.Name, Action: x.Action, Target: x.Target, Params: x.Params, Clients: x.Clients,
				Stopped: x.Stopped, Nodes: x.Nodes, Step: x.Step}}
		s.faultByID[x.ID] = f
		s.faults = append(s.faults, f)
		s.live = append(s.live, f)
		if a := x.Aim; a != nil {
			ks := s.key(a.Key)
			for _, h := range slices.Concat(ks.open, ks.recent) {
				if h.client == a.Client && h.start == a.Since && (f.aimed == nil || h.id < f.aimed.id) {
					f.aimed = h
				}
			}
		}
		if e.Kind == history.FaultEnd {
			// It began before the history tells: since the run started.
			f.holds = append(f.holds, s.firstHolds...)
		}
	}
	switch {
	case e.Kind == history.FaultStart && !f.started && !f.ended:
		f.start, f.started = e.Time, true
		for _, ks := range s.keys {
			f.holds = append(f.holds, ks.open...)
		}
	case e.Kind == history.FaultEnd && !f.ended:
		f.end, f.ended, f.effect = e.Time, true, e.Effect
	}
}

// resourceSnap is what the resource had acknowledged when a client invoked
// a read or write: the highest value written and the highest token seen.
type resourceSnap struct {
	write, fence highest
	at           int64
}

// resourceKey is the resource oracle's running state of one key.
type resourceKey struct {
	accepted int
	write    highest // accepted writes' values, by completion
	fence    highest // fenced reads' and writes' tokens, by completion
	owner    map[int64]int
	topToken int64
}

// highest is the highest value among those added so far, and among those
// added strictly before the latest instant; values come in time order.
type highest struct {
	prev, cur    int64
	at           int64
	hasPrev, has bool
}

func (h *highest) add(t, v int64) {
	if h.has && t == h.at {
		h.cur = max(h.cur, v)
		return
	}
	if h.has && (!h.hasPrev || h.cur > h.prev) {
		h.prev, h.hasPrev = h.cur, true
	}
	h.cur, h.at, h.has = v, t, true
}

// before is the highest value added strictly before t.
func (h highest) before(t int64) (int64, bool) {
	if h.has && h.at < t {
		if h.hasPrev && h.prev > h.cur {
			return h.prev, true
		}
		return h.cur, true
	}
	return h.prev, h.hasPrev
}

func (s *Stream) resourceInvoked(client int, key string, t int64) {
	ks := s.key(key)
	s.snaps[client] = resourceSnap{write: ks.res.write, fence: ks.res.fence, at: t}
}

// maxOwners bounds the tokens whose owner the oracle remembers per key: a
// token issued twice is found while fewer than maxOwners/2 newer tokens
// came between its two uses.
const maxOwners = 1 << 20

func (s *Stream) resourceDone(op resourceOp) {
	tr := s.tr
	res := &tr.resource
	if op.outcome != "" {
		took := op.done - op.invoke
		s.resLat.add(took)
		if took >= slowResourceNs && !s.opts.Live {
			s.slow = append(s.slow, op)
		}
	}
	snap, ok := s.snaps[op.client]
	delete(s.snaps, op.client)
	if !ok || snap.at != op.invoke {
		snap = resourceSnap{}
	}
	rk := &s.key(op.key).res
	switch {
	case op.outcome == history.OK && op.fence > 0:
		if h, ok := snap.fence.before(op.invoke); ok && op.fence < h {
			res.StaleAccepted++
		}
		rk.fence.add(op.done, op.fence)
		if rk.owner == nil {
			rk.owner = map[int64]int{}
		}
		if c, seen := rk.owner[op.fence]; !seen {
			rk.owner[op.fence] = op.client
		} else if c != op.client {
			res.FenceReused++
		}
		rk.topToken = max(rk.topToken, op.fence)
		if len(rk.owner) > maxOwners {
			for t := range rk.owner {
				if t < rk.topToken-maxOwners/2 {
					delete(rk.owner, t)
				}
			}
		}
	case op.outcome == history.Fail && op.fence > 0:
		// A fenced read or write the resource refused: its token was
		// below one it had seen. A refused read ends the hold unwritten.
		res.StaleRejected++
		if op.f == history.Read {
			tr.rejectedReads++
		}
	}
	if op.f == history.Read && op.outcome == history.OK && op.value != nil {
		if h, ok := snap.write.before(op.invoke); ok && *op.value < h {
			res.StaleReads++
		}
	}
	if op.f == history.Write && op.outcome == history.OK {
		rk.accepted++
		res.Holds++
		if op.value != nil {
			rk.write.add(op.done, *op.value)
		}
	}
}

// Result finishes the check: what the whole history says.
func (s *Stream) Result() Result {
	began := time.Now()
	s.rp.finish()
	s.settleAttempts()
	for _, ks := range s.keys {
		if len(ks.seg) > 0 {
			s.cut(ks)
		}
	}
	s.runPorcupine()
	tr := s.tr
	tl := timeline{origin: s.origin(), end: s.last}
	if rs := s.runStart; rs != nil {
		tl.setLease(rs.Run)
	}
	fillLatencies(tr)
	tr.acquire.DuringFaults = s.availability

	// Pairs of holds that overlapped, in the sweep's order: by key, by the
	// later hold, then by the earlier one (each by start, end, client).
	rank := func(a, b *hold) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end), cmp.Compare(a.client, b.client))
	}
	var pairs [][2]*hold
	for _, p := range s.pairs {
		a, b := p[0], p[1]
		if rank(a, b) > 0 {
			a, b = b, a
		}
		if a.client != b.client && a.end > b.start && a.start < b.end {
			a.overlapped, b.overlapped = true, true
			pairs = append(pairs, [2]*hold{a, b})
		}
	}
	slices.SortStableFunc(pairs, func(x, y [2]*hold) int {
		return cmp.Or(cmp.Compare(x[1].key, y[1].key), rank(x[1], y[1]), rank(x[0], y[0]))
	})

	faults, spans := s.judgeFaults(tl)
	workloadEnd := tl.end
	if tr.runStart != nil && tr.workloadNs > 0 {
		workloadEnd = min(workloadEnd, tr.runStart.Time+tr.workloadNs)
	}
	liveness := s.liveness(workloadEnd, faults, spans, tr.stalls, tl)
	landed := map[int]bool{}
	for _, f := range faults {
		landed[f.ID] = f.Landed
	}
	typicalRes := s.resLat.median()
	tr.stalls = append(tr.stalls, slowResource(s.slow, typicalRes)...)
	slices.SortStableFunc(tr.stalls, func(a, b stall) int { return cmp.Compare(a.start, b.start) })
	count, byCause, byLanded, overlaps, incidents := sweep(pairs, spans, tr.stalls, tr.kept, landed, tl)
	s.checkDur += time.Since(began)

	resource, resourceGaps := s.resourceResult()

	r := Result{
		Schema:  ResultSchema,
		Reasons: []string{},
		Nemesis: []string{},
		Mutex: MutexResult{
			Ops:          tr.opCount,
			Holds:        s.holds,
			KeyHolders:   s.keyHolders,
			OverlapCount: count,
			Overlaps:     overlaps,
			CheckMs:      float64(s.checkDur.Microseconds()) / 1e3,
		},
		Resource: resource,
		Acquire:  tr.acquire,
		Release:  tr.release,
		Liveness: liveness,
		Faults:   faults,
		// Beyond a cut or a death, a history is not whole when it breaks its
		// own rules or the coordinator says it lost part of it.
		Complete: tr.runEnd != nil && !tr.cutOff && len(tr.unexpectedExits) == 0 &&
			tr.malformed.reason() == "" && len(tr.runEndErrors) == 0,
	}
	if s.seen {
		r.DurationMs = tl.ms(tl.end)
	}
	r.WorkloadMs = float64(tr.workloadNs) / 1e6
	r.Mutex.IncidentCount, r.Mutex.Incidents, r.Mutex.CoexistMs = listIncidents(incidents, overlaps, tl)
	r.Evidence = evidence(faults, byCause, byLanded)
	r.Evidence.Missed = missedSteps(tr.missed)
	r.Stalls = stallStats(tr.stalls, spans)
	r.Errors = tr.errors.result(tl)
	r.Mutex.PastLease = pastLease(pairs, tl)
	if tr.runStart != nil && tr.runStart.Run != nil {
		run := tr.runStart.Run
		r.Lock, r.Seed = run.Lock, run.Seed
		settings := *run
		r.Settings = &settings
		r.Nemesis = askedNemeses(run)
	}
	if len(overlaps) > 0 {
		o := overlaps[0]
		first, cause := o.StartMs, o.Cause
		if cause == CauseFault {
			earliest := o.StartMs
			for _, f := range faults {
				if slices.Contains(o.Faults, f.ID) {
					earliest = min(earliest, f.StartMs)
				}
			}
			first -= earliest
		}
		r.FirstViolationMs, r.FirstViolationCause = &first, cause
	}
	decide(&r, tr, s.answer, s.timeout, resourceGaps, tl, s.holds, s.heldKeys)
	return r
}

// judgeFaults returns the fault windows in order of start, each judged
// (judge), and their spans.
func (s *Stream) judgeFaults(tl timeline) ([]FaultWindow, []faultSpan) {
	all := slices.Clone(s.faults)
	for _, f := range all {
		if !f.started {
			f.start = tl.origin
		}
		if !f.ended {
			f.end = tl.end
		}
	}
	slices.SortStableFunc(all, func(a, b *faultRecord) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.w.ID, b.w.ID))
	})
	windows := make([]FaultWindow, 0, len(all))
	spans := make([]faultSpan, 0, len(all))
	for _, f := range all {
		f.w.StartMs = tl.ms(f.start)
		if f.ended {
			end := tl.ms(f.end)
			f.w.EndMs = &end
		}
		judge(f, tl)
		windows = append(windows, f.w)
		span := faultSpan{id: f.w.ID, start: f.start, end: f.end, stopped: f.fault.Stopped, action: f.w.Action}
		if f.w.Landed && f.effect != nil && f.effect.Lease == history.LeaseLost {
			span.lost = f.aimed // the nemesis's own word, not the history's
		}
		if f.effect != nil && f.effect.Answered > 0 && f.aimed != nil {
			span.answered, span.answeredHold = f.effect.Answered, f.aimed
		}
		spans = append(spans, span)
	}
	return windows, spans
}

// resourceResult is the resource oracle's answer, with the reasons its
// evidence is incomplete.
func (s *Stream) resourceResult() (ResourceResult, []string) {
	res := s.tr.resource
	var incomplete []string
	// final[k] is the counter read after the workload stopped; the last
	// probe of a key wins. A probe without a value is not a reading.
	final := map[string]*int64{}
	probed := map[string]bool{}
	for _, e := range s.probes {
		if e.F == "resource" {
			probed[e.Key] = true
			final[e.Key] = e.Value
		}
	}
	// Lost updates: each accepted write is an increment; a write whose
	// answer was lost (info) may have applied too, so the difference is a
	// proven minimum, floored at zero per key.
	for _, k := range sortedKeys(s.keys) {
		n := s.keys[k].res.accepted
		if n == 0 {
			continue
		}
		v := final[k]
		if v == nil {
			if probed[k] {
				incomplete = append(incomplete, fmt.Sprintf("the resource probe of %s has no value: lost updates cannot be counted", k))
			} else {
				incomplete = append(incomplete, fmt.Sprintf("the final counter of %s was never read (no resource probe): lost updates cannot be counted", k))
			}
			continue
		}
		res.LostUpdates += max(0, n-int(*v))
	}
	damaged := res.LostUpdates > 0 || res.StaleReads > 0 || res.StaleAccepted > 0 || res.FenceReused > 0
	res.Safe = !damaged && len(incomplete) == 0
	switch {
	case damaged:
		res.State = ResourceDamaged
	case !res.Safe:
		res.State = ResourceUnknown
	case res.StaleRejected > 0:
		res.State = ResourceFenced
	default:
		res.State = ResourceIntact
	}
	res.Summary = resourceSummary(res, s.tr.rejectedReads, len(incomplete) > 0)
	return res, incomplete
}
