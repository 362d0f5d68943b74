package checker

import (
	"cmp"
	"slices"
	"sort"

	"github.com/lockchaos/lockchaos/history"
)

// faultSpan is a fault window in nanoseconds; a fault that never healed is
// open until the end of the history.
type faultSpan struct {
	id         int
	start, end int64
}

// faultWindows pairs fault-start and fault-end events by fault ID, in order
// of start. A window runs from the first start of its ID to the first end
// not before it. A fault-end whose start is missing from the history is
// taken to have been active since the run started: windows only explain
// overlaps, so a wider one hides nothing.
func faultWindows(sorted []history.Event, tl timeline) ([]FaultWindow, []faultSpan) {
	type window struct {
		w          FaultWindow
		start, end int64
		started    bool
		ended      bool
	}
	byID := map[int]*window{}
	var all []*window
	for _, e := range sorted {
		if e.Fault == nil || (e.Kind != history.FaultStart && e.Kind != history.FaultEnd) {
			continue
		}
		w := byID[e.Fault.ID]
		if w == nil {
			f := e.Fault
			w = &window{start: tl.origin, end: tl.end,
				w: FaultWindow{ID: f.ID, Name: f.Name, Target: f.Target, Params: f.Params, Clients: f.Clients}}
			byID[f.ID] = w
			all = append(all, w)
		}
		switch {
		case e.Kind == history.FaultStart && !w.started && !w.ended:
			w.start, w.started = e.Time, true
		case e.Kind == history.FaultEnd && !w.ended:
			w.end, w.ended = e.Time, true
		}
	}
	slices.SortStableFunc(all, func(a, b *window) int {
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
		windows = append(windows, w.w)
		spans = append(spans, faultSpan{id: w.w.ID, start: w.start, end: w.end})
	}
	return windows, spans
}

// faultsDuring returns the IDs of the faults active at some instant of
// [from, to], sorted.
func faultsDuring(spans []faultSpan, from, to int64) []int {
	ids := []int{}
	for _, f := range spans {
		if f.start <= to && f.end >= from {
			ids = append(ids, f.id)
		}
	}
	sort.Ints(ids)
	return ids
}
