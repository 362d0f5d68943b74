package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// checkResource is the resource oracle. Each hold reads a counter, works,
// and writes the value plus one, so with exclusion every accepted write is
// one increment of the final counter, no read sees less than a write already
// acknowledged, and no fenced write gets in after a higher token.
//
// It returns the result and the reasons its evidence is incomplete.
func checkResource(ops []resourceOp, events []history.Event) (ResourceResult, []string) {
	var res ResourceResult
	var incomplete []string

	// final[k] is the counter read after the workload stopped; the last
	// probe of a key wins. A probe without a value is not a reading.
	final := map[string]*int64{}
	probed := map[string]bool{}
	for _, e := range events {
		if e.Kind == history.Probe && e.F == "resource" {
			probed[e.Key] = true
			final[e.Key] = e.Value
		}
	}

	accepted := map[string][]resourceOp{} // write ok, by key
	reads := map[string][]resourceOp{}    // read ok with a value, by key
	fenced := map[string][]resourceOp{}   // fenced read ok or write ok, by key
	rejectedReads := 0
	for _, op := range ops {
		switch {
		case op.outcome == history.OK && op.fence > 0:
			fenced[op.key] = append(fenced[op.key], op)
		case op.outcome == history.Fail && op.fence > 0:
			// A fenced read or write the resource refused: its token was
			// below one it had seen. A refused read ends the hold unwritten.
			res.StaleRejected++
			if op.f == history.Read {
				rejectedReads++
			}
		}
		if op.f == history.Read && op.outcome == history.OK && op.value != nil {
			reads[op.key] = append(reads[op.key], op)
		}
		if op.f == history.Write && op.outcome == history.OK {
			accepted[op.key] = append(accepted[op.key], op)
			res.Holds++
		}
	}

	// Lost updates: each accepted write is an increment; a write whose answer
	// was lost (info) may have applied too, so the difference is a proven
	// minimum, floored at zero per key.
	for _, k := range sortedKeys(accepted) {
		v := final[k]
		if v == nil {
			if probed[k] {
				incomplete = append(incomplete, fmt.Sprintf("the resource probe of %s has no value: lost updates cannot be counted", k))
			} else {
				incomplete = append(incomplete, fmt.Sprintf("the final counter of %s was never read (no resource probe): lost updates cannot be counted", k))
			}
			continue
		}
		res.LostUpdates += max(0, len(accepted[k])-int(*v))
	}

	byDone := func(a, b resourceOp) int { return cmp.Compare(a.done, b.done) }

	// Stale reads: a read that returned less than the highest value already
	// acknowledged (write ok before the read was invoked).
	for k, ws := range accepted {
		slices.SortStableFunc(ws, byDone)
		highest := prefixMax(ws, func(w resourceOp) (int64, bool) {
			if w.value == nil {
				return 0, false
			}
			return *w.value, true
		})
		for _, r := range reads[k] {
			if h, ok := highestBefore(ws, highest, r.invoke); ok && *r.value < h {
				res.StaleReads++
			}
		}
	}

	// Stale accepted: a fenced read or write the resource took although a
	// higher token had already been seen there (completed before it was
	// invoked).
	for _, fs := range fenced {
		slices.SortStableFunc(fs, byDone)
		highest := prefixMax(fs, func(o resourceOp) (int64, bool) { return o.fence, true })
		for _, o := range fs {
			if h, ok := highestBefore(fs, highest, o.invoke); ok && o.fence < h {
				res.StaleAccepted++
			}
		}
	}

	// Reused tokens: a fencing token names one lease. When the resource
	// accepts operations of two different clients under the same token, the
	// token was issued twice (a failover lost the counter's last INCR) and
	// fencing cannot tell the two holders apart. No token is "lower", so
	// StaleAccepted alone would miss it.
	for _, k := range sortedKeys(fenced) {
		owner := map[int64]int{}
		for _, o := range fenced[k] {
			if c, seen := owner[o.fence]; !seen {
				owner[o.fence] = o.client
			} else if c != o.client {
				res.FenceReused++
			}
		}
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
	res.Summary = resourceSummary(res, rejectedReads, len(incomplete) > 0)
	return res, incomplete
}

// prefixMax returns, for ops sorted by completion, the highest value among
// the first i+1 (minInt64 while none of them had a value).
func prefixMax(ops []resourceOp, val func(resourceOp) (int64, bool)) []int64 {
	out := make([]int64, len(ops))
	best, seen := int64(0), false
	for i, o := range ops {
		if v, ok := val(o); ok && (!seen || v > best) {
			best, seen = v, true
		}
		out[i] = best
		if !seen {
			out[i] = minInt64
		}
	}
	return out
}

const minInt64 = -1 << 63

// highestBefore is the highest value among ops completed strictly before t.
func highestBefore(ops []resourceOp, highest []int64, t int64) (int64, bool) {
	n, _ := slices.BinarySearchFunc(ops, t, func(o resourceOp, t int64) int { return cmp.Compare(o.done, t) })
	if n == 0 || highest[n-1] == minInt64 {
		return 0, false
	}
	return highest[n-1], true
}

// resourceSummary says what happened to the resource; rejectedReads is how
// many of r.StaleRejected were reads.
func resourceSummary(r ResourceResult, rejectedReads int, incomplete bool) string {
	var bad []string
	if r.LostUpdates > 0 {
		bad = append(bad, plural(r.LostUpdates, "increment was", "increments were")+" lost: overlapping holds overwrote each other's writes")
	}
	if r.StaleReads > 0 {
		bad = append(bad, plural(r.StaleReads, "read", "reads")+" returned a value older than an acknowledged write")
	}
	if r.StaleAccepted > 0 {
		bad = append(bad, plural(r.StaleAccepted, "stale fenced operation was", "stale fenced operations were")+" accepted after a higher token")
	}
	if r.FenceReused > 0 {
		bad = append(bad, plural(r.FenceReused, "fenced operation", "fenced operations")+" carried a token another client had already used: the fencing token was issued twice")
	}
	if incomplete {
		bad = append(bad, "the final counter was not read for every written key")
	}
	if len(bad) > 0 {
		return strings.Join(bad, "; ")
	}
	switch {
	case r.Holds == 0 && r.StaleRejected == 0:
		return "the resource was never written"
	case r.StaleRejected > 0:
		return fmt.Sprintf("the resource stayed correct thanks to fencing: it rejected %s (%s, %s) and accepted none, so no update was lost",
			plural(r.StaleRejected, "operation with a stale fencing token", "operations with stale fencing tokens"),
			plural(rejectedReads, "read", "reads"), plural(r.StaleRejected-rejectedReads, "write", "writes"))
	}
	return fmt.Sprintf("the resource stayed correct: %s, none lost", plural(r.Holds, "accepted write", "accepted writes"))
}

// plural renders n with the singular or plural noun phrase.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
