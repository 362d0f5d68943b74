package checker

import (
	"slices"

	"github.com/lockchaos/lockchaos/history"
)

// fillLatencies sets the latency percentiles of successful acquires and of
// answered releases (ok or fail; an info is usually a timeout and says
// nothing about how long a release takes).
func fillLatencies(tr *trace) {
	tr.acquire.P50ms, tr.acquire.P99ms, tr.acquire.Maxms = percentiles(tr.acquireLatNs)
	tr.release.P50ms, tr.release.P99ms, tr.release.Maxms = percentiles(tr.releaseLatNs)
}

// duringFaults counts the acquires invoked while some fault window was
// open (an acquire that never completed counts as not OK).
func duringFaults(attempts []attempt, spans []faultSpan) Availability {
	var a Availability
	for _, at := range attempts {
		t := at.inv.Time
		for _, s := range spans {
			if t >= s.start && t < s.end {
				a.Attempted++
				if at.outcome == AttemptOK {
					a.OK++
				}
				break
			}
		}
	}
	return a
}

// percentiles returns the nearest-rank p50 and p99 and the maximum, in ms.
func percentiles(ns []int64) (p50, p99, maxMs float64) {
	if len(ns) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	rank := func(p int) float64 {
		i := (p*len(s)+99)/100 - 1 // ceil(p/100·n) - 1
		return float64(s[max(i, 0)]) / 1e6
	}
	return rank(50), rank(99), float64(s[len(s)-1]) / 1e6
}

// deadlockedKeys lists the lock keys that a probe found with no expiry on
// some node after the workload stopped: nobody can ever acquire them again.
func deadlockedKeys(events []history.Event) []string {
	keys := []string{}
	for _, e := range events {
		if e.Kind == history.Probe && e.F == "lock" && slices.Contains(e.PTTL, -1) && !slices.Contains(keys, e.Key) {
			keys = append(keys, e.Key)
		}
	}
	slices.Sort(keys)
	return keys
}
