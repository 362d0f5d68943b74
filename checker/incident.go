package checker

import (
	"cmp"
	"slices"
)

// incident is a run of overlaps of one key that touch in time, in ns.
type incident struct {
	key        string
	start, end int64
	// holds are the indexes of its holds; spans its overlaps.
	holds   []int
	spans   [][2]int64
	pairs   int
	clients []int
	faults  []int
	cause   string
}

// mergeIncidents merges the overlaps of one key (each an incident of one
// pair) into incidents: overlaps that touch in time (one starts no later
// than the incident so far ends), or that share a hold (a paused client
// whose one hold overlapped those of several clients in turn), are one
// incident.
func mergeIncidents(in []incident) []incident {
	if len(in) == 0 {
		return nil
	}
	s := slices.Clone(in)
	slices.SortStableFunc(s, func(x, y incident) int { return cmp.Compare(x.start, y.start) })
	var out []incident
	for _, x := range s {
		if n := len(out); n > 0 && (x.start <= out[n-1].end || slices.ContainsFunc(x.holds, func(h int) bool { return slices.Contains(out[n-1].holds, h) })) {
			cur := &out[n-1]
			cur.holds = append(cur.holds, x.holds...)
			cur.spans = append(cur.spans, x.spans...)
			cur.end = max(cur.end, x.end)
			cur.pairs += x.pairs
			cur.clients = append(cur.clients, x.clients...)
			cur.faults = append(cur.faults, x.faults...)
			cur.cause = worseCause(cur.cause, x.cause)
			continue
		}
		x.clients = slices.Clone(x.clients)
		x.faults = slices.Clone(x.faults)
		x.holds = slices.Clone(x.holds)
		x.spans = slices.Clone(x.spans)
		out = append(out, x)
	}
	for i := range out {
		slices.Sort(out[i].clients)
		out[i].clients = slices.Compact(out[i].clients)
		slices.Sort(out[i].faults)
		out[i].faults = slices.Compact(out[i].faults)
	}
	return out
}

// worseCause is an incident's cause from two of its pairs': a fault when a
// fault explains either, else none when either has no explanation, else a
// stall.
func worseCause(a, b string) string {
	switch {
	case a == CauseFault || b == CauseFault:
		return CauseFault
	case a == CauseNone || b == CauseNone:
		return CauseNone
	}
	return CauseStall
}

// listIncidents returns how many incidents there were, the first
// MaxOverlaps of them, and the total time two or more clients held a key.
func listIncidents(all []incident, overlaps []Overlap, tl timeline) (int, []Incident, float64) {
	var total float64
	for _, x := range all {
		total += float64(union(x.spans)) / 1e6
	}
	out := make([]Incident, 0, min(len(all), MaxOverlaps))
	for _, x := range all[:min(len(all), MaxOverlaps)] {
		in := Incident{Key: x.key, StartMs: tl.ms(x.start), EndMs: tl.ms(x.end), CoexistMs: float64(union(x.spans)) / 1e6,
			Pairs: x.pairs, Clients: x.clients, Faults: x.faults, Cause: x.cause, First: -1}
		if in.Faults == nil {
			in.Faults = []int{}
		}
		for i, o := range overlaps {
			if o.Key == in.Key && o.StartMs >= in.StartMs && o.StartMs <= in.EndMs {
				in.First = i
				break
			}
		}
		out = append(out, in)
	}
	return len(all), out, total
}

// IncidentOf returns the index in r.Mutex.Incidents of the incident the
// overlap o belongs to, or -1 when it is not listed.
func (r Result) IncidentOf(o Overlap) int {
	for i, in := range r.Mutex.Incidents {
		if in.Key == o.Key && o.StartMs >= in.StartMs && o.StartMs <= in.EndMs {
			return i
		}
	}
	return -1
}
