package checker

import (
	"cmp"
	"fmt"
	"slices"
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
// a later one: the faults active before it began, and how long the harness
// measured a stall of a meanwhile — a's own process between its acquire's
// invoke and the overlap's end (except while a fault stopped it on
// purpose), and, while a's acquire was in flight, the coordinator (its
// reply waited in the proxies) and the lock's servers (ready to run, but
// waiting for a CPU: their run-queue wait). The overlap is the stall's when
// it is no longer than that delay — had a run on time, it would not have
// overlapped; otherwise the faults', if any; otherwise the lock's own.
//
// A reply that was only slower than usual, with no stall measured over it,
// is the lock's own time (a session opened on the first acquire, a JVM
// warming up, a retry): "slower than typical" alone never blames the
// machine.
func attribute(a *hold, s, e int64, spans []faultSpan, stalls []stall, kept []keptSpan) (cause string, faults []int, st *StallNote) {
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
	var parts [][2]int64
	var worst stall
	for _, x := range stalls {
		var from, to int64
		switch x.client {
		case a.client:
			from, to = a.invoked, e
		case -1:
			from, to = a.invoked, a.start
		default:
			continue
		}
		from = max(from, floor)
		lo, hi := max(x.start, from), min(x.end, to)
		if lo >= hi {
			continue
		}
		for _, cut := range stoppedDuring(spans, a.client, lo, hi) {
			lo, hi = trim(lo, hi, cut)
		}
		if lo >= hi {
			continue
		}
		parts = append(parts, [2]int64{lo, hi})
		if x.end-x.start > worst.end-worst.start {
			worst = x
		}
	}
	delay := union(parts)
	if delay > 0 {
		who := fmt.Sprintf("client %d", worst.client)
		if worst.client < 0 {
			who = "the coordinator (which forwards every request through its proxies)"
		}
		text := fmt.Sprintf("%s could not run for %s", who, Millis(float64(worst.end-worst.start)/1e6))
		if worst.why != "" {
			text = worst.why
		}
		st = &StallNote{Client: worst.client, Ms: float64(worst.end-worst.start) / 1e6, TotalMs: float64(delay) / 1e6, Text: text}
	}
	switch {
	case delay > 0 && delay >= e-s:
		return CauseStall, faults, st
	case len(faults) > 0:
		return CauseFault, faults, st
	case delay > 0:
		return CauseNone, faults, st
	}
	return CauseNone, faults, nil
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
