package checker

import (
	"cmp"
	"fmt"
	"slices"
)

// sweep explains the pairs of holds that overlapped (strictly: a release
// invoked at the instant another acquire returned is a hand-over, not an
// overlap), given in order of key, of the later hold's start and of the
// earlier hold's (the streaming checker finds them: a hold that begins
// while another client's is held). It counts them all and explains the
// first MaxOverlaps in order of their start.
//
// Every overlap is attributed (attribute); byCause counts them by cause, and
// byLanded those a fault in landed caused.
//
// Every overlap also joins its key's incident (incidents, in order of
// start): overlaps of one key that touch in time.
func sweep(pairs [][2]*hold, faults []faultSpan, stalls []stall, keptSpans []keptSpan, landed map[int]bool, tl timeline) (count int, byCause map[string]int, byLanded int, overlaps []Overlap, incidents []incident) {
	byCause = map[string]int{}
	type found struct {
		start int64
		o     Overlap
	}
	var all []found
	var stale []staleRelease // of the current key
	kept := 0                // overlaps listed for the current key
	var keyIncidents []incident
	holderStalls := stalls
	if tl.leaseless {
		// A holder that stalls, or whose grant comes late, keeps it.
		holderStalls = nil
	}
	for n, p := range pairs {
		a, b := p[0], p[1]
		if n > 0 && pairs[n-1][1].key != b.key {
			kept, stale = 0, stale[:0]
			incidents = append(incidents, mergeIncidents(keyIncidents)...)
			keyIncidents = keyIncidents[:0]
		}
		count++
		end := min(a.end, b.end)
		cause, causes, st := attribute(a, b, b.start, end, tl.lease, faults, holderStalls, keptSpans)
		var late *LateRelease
		if cause == CauseNone {
			if r := freedBy(stale, a, b, tl.lease); r != nil && r.cause != CauseNone {
				cause, causes, st = r.cause, r.faults, r.note(a.client)
			}
		}
		if cause == CauseNone && tl.blindRelease {
			cause, causes, st, late = lateRelease(a, b, tl, faults, stalls, causes, st)
		}
		if a.how == EndRelease {
			// b took the key while a held it: a's release, whenever it
			// comes, is no longer the owner's.
			stale = append(stale, staleRelease{client: a.client, at: a.end, cause: cause, faults: causes, why: st})
		}
		byCause[cause]++
		keyIncidents = append(keyIncidents, incident{key: b.key, start: b.start, end: end, pairs: 1,
			holds: []int{a.id, b.id}, spans: [][2]int64{{b.start, end}},
			clients: []int{a.client, b.client}, faults: causes, cause: cause})
		if cause == CauseFault && slices.ContainsFunc(causes, func(id int) bool { return landed[id] }) {
			byLanded++
		}
		// Overlaps of one key come in order of start (b's); the first
		// MaxOverlaps of each key hold the first MaxOverlaps overall.
		if kept < MaxOverlaps {
			kept++
			all = append(all, found{start: b.start, o: Overlap{
				Key:     b.key,
				Clients: [2]int{a.client, b.client},
				StartMs: tl.ms(b.start),
				EndMs:   tl.ms(end),
				Holds:   [2]HoldSpan{span(a, tl), span(b, tl)},
				Faults:  causes,
				Cause:   cause,
				Stall:   st,
				Late:    late,
			}})
		}
	}
	incidents = append(incidents, mergeIncidents(keyIncidents)...)
	slices.SortStableFunc(incidents, func(x, y incident) int { return cmp.Or(cmp.Compare(x.start, y.start), cmp.Compare(x.key, y.key)) })
	slices.SortStableFunc(all, func(x, y found) int { return cmp.Compare(x.start, y.start) })
	overlaps = make([]Overlap, 0, min(len(all), MaxOverlaps))
	for _, f := range all[:min(len(all), MaxOverlaps)] {
		overlaps = append(overlaps, f.o)
	}
	return count, byCause, byLanded, overlaps, incidents
}

// staleRelease is the release of a hold whose key another client took
// while it held it (it was the earlier hold of an overlap), answered ok: a
// lock whose release does not check who owns the key (a plain DEL) deleted
// the lease of whoever held it then. (A release that checks its token
// answers not-held there and ends its hold otherwise, so it never counts.)
// It keeps the cause of that overlap.
type staleRelease struct {
	client int
	at     int64
	cause  string
	faults []int
	why    *StallNote
}

// freedBy returns the stale release that let b acquire the key while a
// still held a live lease on it — a release by another client, after a
// began and before b did — or nil. The overlap of a and b is then that
// release's doing, and has the cause of the overlap that made it stale:
// a lock whose release deletes whatever holds the key turns one hold that
// outlived its lease into a chain of overlaps (each release deleting the
// next holder's key), and the chain is as much the fault's (or the
// harness stall's) as its first link.
func freedBy(stale []staleRelease, a, b *hold, lease int64) *staleRelease {
	if lease <= 0 || a.grantedOK <= 0 || b.start >= a.grantedOK+lease {
		return nil // a's lease had run out: a outlived it on its own
	}
	for i := len(stale) - 1; i >= 0; i-- {
		r := &stale[i]
		if r.client != a.client && r.at >= a.start && r.at <= b.start {
			return r
		}
	}
	return nil
}

// note says, for a hold of client victim, how r's release freed its key.
func (r *staleRelease) note(victim int) *StallNote {
	if r.cause != CauseStall || r.why == nil {
		return r.why
	}
	n := *r.why
	n.Text = fmt.Sprintf("client %d's release, after another client had taken its key, deleted client %d's lease; the chain began with a stall: %s", r.client, victim, r.why.Text)
	return &n
}

// lateRelease explains an overlap of a and b that nothing else explains,
// with a lock whose release ends the key's lock whoever holds it: another
// hold's release, invoked before b's acquire returned, may have reached
// the store after its own lease had run out and after a's key was set —
// ending a's live lease, so that b took the key (2026-11-30: ShedLock
// JDBC's unlock, timed out on the client, ran 1.3 s late on a database
// that waited 747 ms for a CPU, and ended the next holder's lock). Such a
// release is the lock's weakness; what delayed it past a's grant says
// whose doing the overlap is:
//
//   - a stall of the harness (the releasing client's process, the
//     coordinator, the lock's servers) between the release's invoke and
//     the earliest a's key could have been set, at least as long as from
//     then to b's ok: without it the release would have come before a's
//     key, however late in that span it came. A stall explains it first,
//     as for the holders' own (attribute).
//   - otherwise the faults active in that span;
//   - otherwise nothing: the lock's own, as before.
//
// A release that answered ok before a's key could have been set, or that
// was invoked while its lease lived and answered before it ran out, ended
// nothing of a's. It returns the cause, faults, stall note and the release
// it blames (nil: none), or what it was given.
func lateRelease(a, b *hold, tl timeline, spans []faultSpan, stalls []stall, faults []int, st *StallNote) (string, []int, *StallNote, *LateRelease) {
	lease := tl.lease
	if lease <= 0 || a.grantedOK <= 0 || b.start >= a.grantedOK+lease {
		return CauseNone, faults, st, nil // a's lease had run out: a outlived it on its own
	}
	fromA := max(a.granted, setFrom(a, lease, spans, stalls))
	var byFault *hold
	var byFaultIDs []int
	for i := len(b.before) - 1; i >= 0; i-- {
		p := b.before[i]
		if p.client == a.client || p.end >= b.start || p.granted <= 0 || (p.how != EndRelease && p.how != EndReleaseUnknown) {
			continue
		}
		// The store ended p's key no sooner than a lease after p's grant
		// was invoked (unless p's release did it), and a set its key after
		// both that and setFrom.
		from := max(fromA, p.granted+lease)
		if from >= b.start || p.how == EndRelease && p.released <= from {
			continue // answered before a's key could have been set
		}
		if d, worst := stalled(stalls, spans, p.client, p.end, from, from, from); d > 0 && d >= b.start-from {
			n := stallNote(worst, d)
			n.Text = fmt.Sprintf("client %d's release, invoked at %.2f s, may have reached the store only after client %d's key was set, and ended it (the lock's release ends whoever's lock); what delayed it: %s", p.client, tl.ms(p.end)/1000, a.client, n.Text)
			return CauseStall, faults, n, lateNote(p, a, tl, "while the harness stalled it")
		}
		if ids := faultsBefore(spans, p.end, from); len(ids) > 0 && byFault == nil {
			byFault, byFaultIDs = p, ids
		}
	}
	if byFault != nil {
		return CauseFault, byFaultIDs, st, lateNote(byFault, a, tl, "while a fault was active")
	}
	return CauseNone, faults, st, nil
}

func lateNote(p, a *hold, tl timeline, while string) *LateRelease {
	return &LateRelease{Client: p.client, InvokedMs: tl.ms(p.end), Victim: a.client,
		Text: fmt.Sprintf("client %d's release, invoked at %.2f s %s, may have reached the store after its lease had run out and client %d's key was set, and ended client %d's lease (the lock's release ends whoever's lock)", p.client, tl.ms(p.end)/1000, while, a.client, a.client)}
}

func span(h *hold, tl timeline) HoldSpan {
	s := HoldSpan{Client: h.client, AcquireMs: tl.ms(h.granted), StartMs: tl.ms(h.start), EndMs: tl.ms(h.end), End: h.how}
	if tl.lease > 0 && h.grantedOK > 0 {
		s.LeaseFromMs, s.LeaseEndMs = tl.ms(h.granted+tl.lease), tl.ms(h.grantedOK+tl.lease)
	}
	return s
}
