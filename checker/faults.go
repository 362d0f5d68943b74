package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/lockchaos/lockchaos/history"
)

// faultSpan is a fault window in nanoseconds; a fault that never healed is
// open until the end of the history.
type faultSpan struct {
	id         int
	start, end int64
	stopped    []int // clients whose process it stopped
	action     history.Action
	// lost is the hold the fault aimed at when it landed and its nemesis
	// measured that hold's lease taken away (a node that no longer had the
	// key), else nil.
	lost *hold
	// answered: the fault held replies back (Effect.Answered), and the
	// servers had answered the acquire of answeredHold by then.
	answered     int64
	answeredHold *hold
}

// faultRecord is one fault as the history tells it, before it is judged.
// A window runs from the first start of its ID to the first end not before
// it. A fault-end whose start is missing from the history is taken to have
// been active since the run started: windows only explain overlaps, so a
// wider one hides nothing.
type faultRecord struct {
	w          FaultWindow
	start, end int64
	started    bool
	ended      bool
	fault      *history.Fault
	effect     *history.Effect
	// aimed is the hold the fault was aimed at, when the history has it.
	aimed *hold
	// holds are those held when it began, and the first maxFaultHolds
	// begun during it (during counts those).
	holds  []*hold
	during int
}

// judge decides whether a fault landed and what became of the lease it hit.
//
// A fault aimed at a hold (history.Aim) landed when the nemesis says so
// (its effect, recorded on the fault-end; a fault cut short records none,
// and did not land) and the history confirms the aim:
// that hold exists and had not ended when the fault began. The lease's fate
// comes from the history first — another client held the key during the
// hold, or the holder learned it lost it: lost — then from what the nemesis
// saw (a node that no longer had the key), then from the holder's release:
// answered ok, kept; otherwise unknown.
//
// A fault aimed at no hold, with no effect recorded (a standing partition),
// landed when some hold of a client it acted on (any client, when it acted
// on none directly) was in progress during its window.
func judge(r *faultRecord, tl timeline) {
	w, e, f := &r.w, r.effect, r.fault
	if e != nil {
		w.Landed, w.Lease, w.Effect, w.Overdone = e.Landed, e.Lease, e.Note, e.Overdone
	}
	if f.Aim == nil {
		if e == nil {
			// The first such hold, in an order that does not depend on the
			// order events of one instant arrived in.
			var first *hold
			for _, h := range r.holds {
				if h.start < r.end && h.end > r.start && (len(f.Clients) == 0 || slices.Contains(f.Clients, h.client)) &&
					(first == nil || cmp.Or(cmp.Compare(h.start, first.start), cmp.Compare(h.client, first.client), cmp.Compare(h.key, first.key)) < 0) {
					first = h
				}
			}
			if first != nil {
				w.Landed = true
				w.Effect = fmt.Sprintf("client %d held %s during the fault", first.client, first.key)
			}
		}
		if !w.Landed {
			w.Lease = ""
		}
		return
	}
	a := f.Aim
	w.Aim = &AimedHold{Client: a.Client, Key: a.Key, SinceMs: tl.ms(a.Since)}
	aimed := r.aimed
	switch {
	case aimed == nil:
		w.Landed, w.Lease = false, ""
		w.Effect = fmt.Sprintf("the history has no hold of %s by client %d from t=%s, the hold the fault aimed at", a.Key, a.Client, Seconds(tl.ms(a.Since)))
		return
	case aimed.end <= r.start:
		w.Landed, w.Lease = false, ""
		w.Effect = fmt.Sprintf("client %d's hold of %s had ended at t=%s, before the fault began", a.Client, a.Key, Seconds(tl.ms(aimed.end)))
		return
	case e == nil:
		w.Landed = false
		w.Effect = "the fault was cut short before its nemesis could tell what it did"
	}
	if !w.Landed {
		w.Lease = ""
		return
	}
	switch {
	case aimed.overlapped:
		// Another client held the key while it was held.
		w.Lease = history.LeaseLost
	case aimed.how == EndLost && w.Lease == history.LeaseKept:
		// Its lock said lost, the nodes still held it (the nemesis
		// asked them): the lock let go to be safe, the store kept it.
	case aimed.how == EndLost || aimed.how == EndReleaseNotHeld:
		w.Lease = history.LeaseLost
	case w.Lease != "":
	case aimed.how == EndRelease:
		w.Lease = history.LeaseKept
	default:
		w.Lease = history.LeaseUnknown
	}
	w.LeftInTime = w.Lease == history.LeaseLost && leftInTime(aimed, f, tl)
}

// leftInTime says whether the aimed hold ended before its lease could have
// run out on the lock's nodes (FaultWindow.LeftInTime): before the invoke
// of its latest grant plus the lease, when nobody else held the key during
// it, under a fault that cannot end a lease early.
func leftInTime(aimed *hold, f *history.Fault, tl timeline) bool {
	if aimed.overlapped || tl.lease <= 0 || f == nil || aimed.how == EndOpen {
		return false
	}
	switch f.Action {
	case history.ActionPause, history.ActionNetwork, history.ActionSlow, history.ActionKill, history.ActionCancel:
	default: // a crash, a failover or a clock can end a lease early; older histories do not say
		return false
	}
	return aimed.end <= aimed.granted+tl.lease
}

// faultsBefore returns the IDs of the faults that can explain an overlap
// that began at s, of a hold whose acquire was invoked at from: those that
// began before s and were still active at some instant since from. A fault
// that began after the overlap did not cause it.
func faultsBefore(spans []faultSpan, from, s int64) []int {
	ids := []int{}
	for _, f := range spans {
		if f.start < s && f.end > from {
			ids = append(ids, f.id)
		}
	}
	sort.Ints(ids)
	return ids
}
