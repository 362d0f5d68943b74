package checker

import (
	"math/bits"
	"slices"

	"github.com/lockchaos/lockchaos/history"
)

// fillLatencies sets the latency percentiles of successful acquires and of
// answered releases (ok or fail; an info is usually a timeout and says
// nothing about how long a release takes).
func fillLatencies(tr *trace) {
	tr.acquire.P50ms, tr.acquire.P99ms, tr.acquire.Maxms = tr.acquireLat.percentiles()
	tr.release.P50ms, tr.release.P99ms, tr.release.Maxms = tr.releaseLat.percentiles()
}

// exactSamples is how many values samples keeps exactly; beyond, quantiles
// come from a histogram.
const exactSamples = 1 << 16

// samples collects durations (ns) for their quantiles in bounded memory:
// every value while there are at most exactSamples of them (every run of
// the matrix and of compare, exactly as a sort would give), then a log-linear histogram
// whose buckets are 1/1024 of their value wide (values under 2048 ns
// exact), so an hour-long history costs some thousands of buckets.
type samples struct {
	exact []int64
	hist  map[int64]int64 // bucket's lower bound → count, once exact overflowed
	n     int64
	max   int64
}

func bucketOf(v int64) int64 {
	if v < 2048 {
		return v
	}
	shift := bits.Len64(uint64(v)) - 11
	return v >> shift << shift
}

func (s *samples) add(v int64) {
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	if s.hist == nil {
		if len(s.exact) < exactSamples {
			s.exact = append(s.exact, v)
			return
		}
		s.hist = map[int64]int64{}
		for _, x := range s.exact {
			s.hist[bucketOf(x)]++
		}
		s.exact = nil
	}
	s.hist[bucketOf(v)]++
}

// at returns the i-th smallest value (0-based); the histogram answers with
// its bucket's lower bound (the maximum is always exact).
func (s *samples) at(i int64) int64 {
	if s.hist == nil {
		slices.Sort(s.exact)
		return s.exact[i]
	}
	if i == s.n-1 {
		return s.max
	}
	keys := sortedKeys(s.hist)
	var seen int64
	for _, k := range keys {
		seen += s.hist[k]
		if i < seen {
			return k
		}
	}
	return s.max
}

// median is the value at n/2 (the upper median).
func (s *samples) median() int64 {
	if s.n == 0 {
		return 0
	}
	return s.at(s.n / 2)
}

// percentiles returns the nearest-rank p50 and p99 and the maximum, in ms.
func (s *samples) percentiles() (p50, p99, maxMs float64) {
	if s.n == 0 {
		return 0, 0, 0
	}
	rank := func(p int64) float64 {
		i := (p*s.n+99)/100 - 1 // ceil(p/100·n) - 1
		return float64(s.at(max(i, 0))) / 1e6
	}
	return rank(50), rank(99), float64(s.max) / 1e6
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
