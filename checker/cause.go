package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockchaos/lockchaos/history"
)

// Causes of an overlap (Overlap.Cause).
const (
	// CauseFault: a fault active before the overlap began explains it.
	CauseFault = "fault"
	// CauseStall: the harness itself stalled the earlier holder at least as
	// long as the overlap lasted (its process, or the coordinator that
	// forwards its requests, could not run): without the stall there would
	// have been no overlap. Still a real lease violation — any process can
	// be paused — but not the fault's doing.
	CauseStall = "stall"
	// CauseNone: neither a fault nor a stall explains it: the lock broke on
	// its own (a hold longer than its lease, a bug).
	CauseNone = "none"
)

// attribute says what caused the overlap [s, e] of the earlier hold a with
// the later one b: the faults active before it began, or a stall of the
// harness that made one of the two outlive its lease.
//
// With a lease the history can count (lease > 0), the overlap is the
// lock's (or an active fault's) whenever the two grants came less than a
// lease apart, however the history places them: each holder's key was set
// no sooner than its acquire could have set it (setFrom) and no later than
// it read its ok, so one grant came while the other's lease still lived,
// and no stall of either process explains that. Otherwise a stall may: a
// stall of a — its own process between its grant and the overlap's end
// (except while a fault stopped it on purpose), and, while its acquire was
// in flight, the coordinator (its reply waited in the proxies) and the
// lock's servers (ready to run, but waiting for a CPU) — when it is no
// shorter than the overlap: had a run on time, it would not have
// overlapped. Or a stall of b between its grant and its reading the ok
// (its answer waiting, unread, while its lease ran out), when b's lease
// may have run out before a's grant and the stall lasted at least that
// lease; a stall of b once it held says nothing of when either was
// granted. The stall named is the longest of the side it explains.
// Otherwise the faults', if any; otherwise the lock's own.
//
// A reply that was only slower than usual, with no stall measured over it,
// is the lock's own time (a session opened on the first acquire, a JVM
// warming up, a retry): "slower than typical" alone never blames the
// machine.
func attribute(a, b *hold, s, e, lease int64, spans []faultSpan, stalls []stall, kept []keptSpan) (cause string, faults []int, st *StallNote) {
	faults = faultsBefore(spans, a.invoked, s)
	// A hold that a fault kept inside (a stretch it waited in) ended when
	// the fault let it go: no stall before that made it longer. When that
	// fault also took its lease away, as its nemesis measured (a promoted
	// replica without the key), no stall shortened the lease either: the
	// fault explains the overlap. (A lease lost otherwise — a watchdog
	// that could not run while the hold was kept — stays a stall's.)
	var floor int64
	if slices.ContainsFunc(spans, func(f faultSpan) bool { return f.lost == a }) {
		floor = keptUntil(kept, a)
	}
	fromA, fromB := a.invoked, b.granted
	if lease > 0 {
		fromA, fromB = max(a.invoked, setFrom(a, lease, spans, stalls)), setFrom(b, lease, spans, stalls)
	}
	// a's lease may have run out before b was granted (b's ok came a lease
	// after a's key could have been set), or b's before a was.
	aMay := lease <= 0 || s-fromA >= lease
	bMay := lease > 0 && a.grantedOK-fromB >= lease
	// a's own stalls until the overlap's end (they kept it inside), the
	// coordinator's and the servers' until its ok. b's only until it read
	// its ok (its answer may have waited, unread, while its lease ran
	// out): a stall once it held says nothing of when it was granted.
	delayA, worstA := stalled(stalls, spans, a.client, max(fromA, floor), e, a.start, answeredBy(a, spans))
	var delayB int64
	var worstB stall
	if bMay {
		delayB, worstB = stalled(stalls, spans, b.client, fromB, s, s, s)
	}
	switch {
	case aMay && delayA > 0 && delayA >= e-s:
		return CauseStall, faults, stallNote(worstA, delayA)
	case bMay && delayB > 0 && delayB >= lease:
		// b read its ok a lease or more of stalls after its key could
		// have been set, when its lease may have run out: the overlap
		// began with that stall, however long it lasted.
		return CauseStall, faults, stallNote(worstB, delayB)
	case delayB > delayA:
		st = stallNote(worstB, delayB)
	case delayA > 0:
		st = stallNote(worstA, delayA)
		// a's lease had not run out when b's acquire returned: no stall
		// of a made it outlive its lease.
		st.LeaseLived = !aMay
	}
	if len(faults) > 0 {
		return CauseFault, faults, st
	}
	return CauseNone, faults, st
}

// setFrom is the earliest the key could have been set for hold h: its
// latest grant's invoke, or, when an earlier hold kept the key past it and
// no fault that can free a key sooner was active meanwhile (a node that
// forgot it, a failover, a clock moved; a fault of an older history, which
// does not say what it did), that hold's release or lease end. A blocking
// acquire's retries are not in the history: without this, its lease would
// be counted from the invoke it waited after, long before any retry could
// set the key.
//
// An earlier hold granted a lease or more after h's invoke (hold.freedLate)
// may have been granted after h's own key ran out, h's answer waiting
// unread meanwhile: that hold then bounds nothing, and a stall of h as long
// as a lease could have made it so. Its bound counts only when the harness
// stalled h's side less than a lease before h read its ok. (With a lock
// whose release deletes whoever holds the key, another client's stale
// release may have freed it sooner: an overlap that follows is that
// release's, the lock's own doing, never a stall's.)
func setFrom(h *hold, lease int64, spans []faultSpan, stalls []stall) int64 {
	from := h.granted
	ok := func(freed, since int64) bool {
		return freed > from && !slices.ContainsFunc(spans, func(f faultSpan) bool {
			return f.start < freed && f.end > since && freesKeys(f.action)
		})
	}
	if ok(h.freed, h.freedSince) {
		from = h.freed
	}
	if ok(h.freedLate, h.freedLateSince) {
		if d, _ := stalled(stalls, spans, h.client, h.granted, h.start, h.start, answeredBy(h, spans)); d < lease {
			from = h.freedLate
		}
	}
	return from
}

// freesKeys says whether a fault of this kind can end a lease before its
// time: a lock node that restarts without it, a replica promoted without
// it, a clock moved forward. A slow or cut link, a paused process, a
// killed client or a cancelled call only delay.
func freesKeys(a history.Action) bool {
	switch a {
	case history.ActionNetwork, history.ActionPause, history.ActionKill, history.ActionSlow, history.ActionCancel:
		return false
	}
	return true
}

// answeredBy is when the lock's servers had answered h's acquire, as a
// fault that held its replies back in the proxies measured (the last reply
// came from the server then), or h.start: a server's stall after it
// delayed nothing of that acquire, whose reply was waiting in the proxies.
func answeredBy(h *hold, spans []faultSpan) int64 {
	by := h.start
	for _, f := range spans {
		if f.answeredHold == h && f.answered >= h.granted && f.answered < by {
			by = f.answered
		}
	}
	return by
}

// stalled is how long the harness stalled client c's side of an overlap
// from from: c's own process until to, the coordinator until until (while
// its acquire was in flight) and the lock's servers until answered (until,
// or earlier when a fault held the acquire's reply back after they
// answered), except while a fault stopped c on purpose; and the longest
// stall that counted. A wait
// the kernel counted on the run queue (queued) counts whole even inside
// such a fault: a stopped process is not on the run queue, so the wait
// fell in a moment the fault let it run (a starved client's short runs)
// and the machine took that moment away.
func stalled(stalls []stall, spans []faultSpan, c int, from, to, until, answered int64) (int64, stall) {
	var parts [][2]int64
	var worst stall
	for _, x := range stalls {
		hi := to
		switch {
		case x.client == c:
		case x.client == -1 && x.node != "":
			hi = min(until, answered)
		case x.client == -1:
			hi = until
		default:
			continue
		}
		lo, hi := max(x.start, from), min(x.end, hi)
		if lo >= hi {
			continue
		}
		if !x.queued {
			for _, cut := range stoppedDuring(spans, c, lo, hi) {
				lo, hi = trim(lo, hi, cut)
			}
		}
		if lo >= hi {
			continue
		}
		parts = append(parts, [2]int64{lo, hi})
		if x.end-x.start > worst.end-worst.start {
			worst = x
		}
	}
	return union(parts), worst
}

// stallNote says which stall it was, and how long the harness stalled the
// side it explains in all.
func stallNote(worst stall, delay int64) *StallNote {
	who := fmt.Sprintf("client %d", worst.client)
	if worst.client < 0 {
		who = "the coordinator (which forwards every request through its proxies)"
	}
	text := fmt.Sprintf("%s could not run for %s", who, Millis(float64(worst.end-worst.start)/1e6))
	if worst.why != "" {
		text = worst.why
	}
	return &StallNote{Client: worst.client, Ms: float64(worst.end-worst.start) / 1e6, TotalMs: float64(delay) / 1e6, Text: text}
}

// keptUntil is when a fault let hold a go after keeping it inside its
// critical section (a kept span of its client that held it: begun before
// it ended, ended when or after it began); 0 when none kept it.
func keptUntil(kept []keptSpan, a *hold) int64 {
	var until int64
	for _, k := range kept {
		if k.client != a.client || !k.waited || k.start > a.end {
			continue
		}
		end := k.end
		if end == 0 { // never let go: the run ended first
			end = a.end
		}
		if end >= a.start {
			until = max(until, end)
		}
	}
	return until
}

// stoppedDuring returns the parts of [lo, hi] during which a fault stopped
// client c's process on purpose: a stall then is the fault.
func stoppedDuring(spans []faultSpan, c int, lo, hi int64) [][2]int64 {
	var out [][2]int64
	for _, f := range spans {
		if slices.Contains(f.stopped, c) && f.start < hi && f.end > lo {
			out = append(out, [2]int64{f.start, f.end})
		}
	}
	return out
}

// trim removes cut from [lo, hi] when it covers one end (a cut in the
// middle keeps the longer side: stalls and faults are short, and a stall
// split by a fault is the fault's).
func trim(lo, hi int64, cut [2]int64) (int64, int64) {
	switch {
	case cut[0] <= lo && cut[1] >= hi:
		return 0, 0
	case cut[0] <= lo:
		return max(lo, cut[1]), hi
	case cut[1] >= hi:
		return lo, min(hi, cut[0])
	case cut[0]-lo >= hi-cut[1]:
		return lo, cut[0]
	}
	return cut[1], hi
}

// union is the total length covered by the intervals.
func union(parts [][2]int64) int64 {
	slices.SortFunc(parts, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	var total, end int64
	first := true
	for _, p := range parts {
		if first || p[0] > end {
			total += p[1] - p[0]
			end, first = p[1], false
			continue
		}
		if p[1] > end {
			total += p[1] - end
			end = p[1]
		}
	}
	return total
}

// slowResourceNs is how much longer than the run's typical read or write of
// the resource one must take to be a stall of the harness (slowResource).
const slowResourceNs = 10_000_000

// slowResource returns, as stalls, the times the harness's own resource
// node held a client up: a read or write of the protected counter that took
// at least 10 ms longer than the run's typical one. No fault acts on the
// resource node or its link (the client reaches it directly, not through
// the proxies), so such a delay is the machine's, not the lock's — a fault
// on the lock's nodes or links active meanwhile does not explain it (a
// 300 ms read that answered after 2.3 s beside a paused lock node, its
// holder's lease run out meanwhile, was once taken for the lock's own
// failure). Only a fault that stopped the client itself (SIGSTOP) slows
// its op on purpose: those parts are the fault's (attribute trims them).
// A hold stretched past its lease that way is a stall of the harness, like
// a process that could not run; the stall covers the op's time beyond the
// typical one.
//
// ops are the candidates: every op that took at least slowResourceNs;
// typical is the median of all of them.
func slowResource(ops []resourceOp, typical int64) []stall {
	const least = slowResourceNs
	var out []stall
	for _, o := range ops {
		took := o.done - o.invoke
		if o.outcome == "" || took-typical < least {
			continue
		}
		out = append(out, stall{client: o.client, start: o.invoke + typical, end: o.done,
			why: fmt.Sprintf("client %d's %s of the protected counter took %s (the run's typical: %s): the harness's own resource node, which no fault touches, answered late on a busy machine",
				o.client, o.f, Millis(float64(took)/1e6), Millis(float64(typical)/1e6))})
	}
	return out
}
