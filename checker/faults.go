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
}

// faultRecord is one fault as the history tells it, before it is judged.
type faultRecord struct {
	w          FaultWindow
	start, end int64
	started    bool
	ended      bool
	fault      *history.Fault
	effect     *history.Effect
}

// faultWindows pairs fault-start and fault-end events by fault ID, in order
// of start, and judges each fault: whether it landed, and what became of the
// lease it hit (judge). A window runs from the first start of its ID to the
// first end not before it. A fault-end whose start is missing from the
// history is taken to have been active since the run started: windows only
// explain overlaps, so a wider one hides nothing.
func faultWindows(sorted []history.Event, tl timeline, holds []hold) ([]FaultWindow, []faultSpan) {
	byID := map[int]*faultRecord{}
	var all []*faultRecord
	for _, e := range sorted {
		if e.Fault == nil || (e.Kind != history.FaultStart && e.Kind != history.FaultEnd) {
			continue
		}
		w := byID[e.Fault.ID]
		if w == nil {
			f := e.Fault
			w = &faultRecord{start: tl.origin, end: tl.end, fault: f,
				w: FaultWindow{ID: f.ID, Name: f.Name, Action: f.Action, Target: f.Target, Params: f.Params, Clients: f.Clients,
					Stopped: f.Stopped, Nodes: f.Nodes, Step: f.Step}}
			byID[f.ID] = w
			all = append(all, w)
		}
		switch {
		case e.Kind == history.FaultStart && !w.started && !w.ended:
			w.start, w.started = e.Time, true
		case e.Kind == history.FaultEnd && !w.ended:
			w.end, w.ended, w.effect = e.Time, true, e.Effect
		}
	}
	slices.SortStableFunc(all, func(a, b *faultRecord) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.w.ID, b.w.ID))
	})
	windows := make([]FaultWindow, 0, len(all))
	spans := make([]faultSpan, 0, len(all))
	for _, w := range all {
		w.w.StartMs = tl.ms(w.start)
		if w.ended {
			end := tl.ms(w.end)
			w.w.EndMs = &end
		}
		judge(w, holds, tl)
		windows = append(windows, w.w)
		spans = append(spans, faultSpan{id: w.w.ID, start: w.start, end: w.end, stopped: w.fault.Stopped})
	}
	return windows, spans
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
func judge(r *faultRecord, holds []hold, tl timeline) {
	w, e, f := &r.w, r.effect, r.fault
	if e != nil {
		w.Landed, w.Lease, w.Effect = e.Landed, e.Lease, e.Note
	}
	if f.Aim == nil {
		if e == nil {
			// The first such hold, in an order that does not depend on the
			// order events of one instant arrived in.
			var first *hold
			for i := range holds {
				h := &holds[i]
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
	var aimed *hold
	for i := range holds {
		if h := &holds[i]; h.client == a.Client && h.key == a.Key && h.start == a.Since {
			aimed = h
			break
		}
	}
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
	case takenDuring(aimed, holds):
		w.Lease = history.LeaseLost
	case aimed.how == EndLost || aimed.how == EndReleaseNotHeld:
		w.Lease = history.LeaseLost
	case w.Lease != "":
	case aimed.how == EndRelease:
		w.Lease = history.LeaseKept
	default:
		w.Lease = history.LeaseUnknown
	}
}

// takenDuring says whether another client held h's key while h was held.
func takenDuring(h *hold, holds []hold) bool {
	for i := range holds {
		o := &holds[i]
		if o.key == h.key && o.client != h.client && o.start < h.end && o.end > h.start {
			return true
		}
	}
	return false
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
