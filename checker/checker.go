// Package checker decides whether a history shows mutual exclusion. It is a
// pure function of the history: porcupine proves or refutes exclusion per
// lock key, an interval sweep explains each overlap (which clients, when,
// under which faults), and a resource oracle measures the damage done to the
// protected counter. A verdict is safe only when all the evidence is there.
package checker

import (
	"cmp"
	"slices"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// DefaultTimeout bounds porcupine when Options.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// Options tune a check.
type Options struct {
	// Timeout bounds porcupine's search; when it runs out the mutex answer is
	// unknown and the verdict at best inconclusive. Zero means DefaultTimeout.
	Timeout time.Duration
	// CutOff says the history file's last line was cut off in the middle
	// (history.ReadFile dropped it): the file is not whole, whether or not
	// a run-end came before the cut, so the run cannot be called safe.
	CutOff bool
	// Live: only OnOverlap is wanted, never Result (the run's live check):
	// the stream keeps no overlaps, faults, stalls or segments, so that its
	// memory stays flat however much the run breaks.
	Live bool
	_    struct{}
}

// Check decides the verdict of one run from its events, given in any order.
// It is the streaming checker (Stream) fed the events sorted by time.
func Check(events []history.Event, opts Options) Result {
	s := NewStream(opts)
	for _, e := range sortByTime(events) {
		s.Add(e)
	}
	return s.Result()
}

// sortByTime returns a copy of events in time order. Events arrive in the
// file in order of arrival, not of time; among events of one instant the
// file order is kept (a client writes its own events in order), except that
// a fault-end, a worker-exit and the run-end come last: whatever bears the
// same timestamp happened before the coordinator saw them.
func sortByTime(events []history.Event) []history.Event {
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b history.Event) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(sortRank(a.Kind), sortRank(b.Kind)))
	})
	return sorted
}

// sortRank orders the events of one instant: a fault-end, a worker-exit and
// the run-end after the others, in that order.
func sortRank(k history.Kind) int {
	switch k {
	case history.FaultEnd:
		return 1
	case history.WorkerExit:
		return 2
	case history.RunEnd:
		return 3
	}
	return 0
}

// timeline maps monotonic nanoseconds to the milliseconds of a result,
// counted from the run-start event (or the earliest event without one).
type timeline struct {
	origin int64
	end    int64 // the last event
	// lease is the lease the run's lock used, in ns, when the history can
	// tell when a lease ran out (the run-start records it and clients did
	// not renew); 0 otherwise.
	lease int64
	// leaseless: the lock has no lease (history.RunInfo.Leaseless), so a
	// holder that stalls, or whose acquire's reply comes late, keeps its
	// grant: no stall of the harness can explain an overlap.
	leaseless bool
	// blindRelease: the lock's release ends the key's lock whoever holds
	// it (history.RunInfo.BlindRelease): a release that came late may
	// have ended another client's live lease (lateRelease).
	blindRelease bool
}

func newTimeline(sorted []history.Event) timeline {
	if len(sorted) == 0 {
		return timeline{}
	}
	tl := timeline{origin: sorted[0].Time, end: sorted[len(sorted)-1].Time}
	for _, e := range sorted {
		if e.Kind == history.RunStart {
			tl.origin = e.Time
			tl.setLease(e.Run)
			break
		}
	}
	return tl
}

// setLease reads from the run-start what the history can tell of leases.
func (tl *timeline) setLease(run *history.RunInfo) {
	if run == nil {
		return
	}
	tl.leaseless = run.Leaseless
	tl.blindRelease = run.BlindRelease
	// A lease renewed by the clients or kept alive by the library (etcd's,
	// ZooKeeper's session) ends at its last renewal plus the lease, which
	// the history does not record: its end is not known. Not even "a lease
	// after the acquire": etcd's session lease is granted before the
	// acquire, which puts the key under it without renewing it.
	if !run.Renew && !run.Leaseless && !run.KeepsAlive {
		tl.lease = run.Lease() * 1e6
	}
}

func (tl timeline) ms(t int64) float64 { return float64(t-tl.origin) / 1e6 }

// evidence counts the faults that landed, what became of their leases, and
// the overlaps by cause.
func evidence(faults []FaultWindow, byCause map[string]int, byLanded int) Evidence {
	e := Evidence{Faults: len(faults), Overlaps: byCause, LandedFaultOverlaps: byLanded}
	for _, f := range faults {
		if !f.Landed {
			continue
		}
		e.Landed++
		switch f.Lease {
		case history.LeaseLost:
			e.LeasesLost++
			if f.LeftInTime {
				e.LeasesLostLeftInTime++
			}
		case history.LeaseKept:
			e.LeasesKept++
		case history.LeaseUnknown:
			e.LeasesUnknown++
		}
	}
	return e
}

// stallStats counts the stalls of the harness: a stall of a client while
// a fault stopped it on purpose (an injected pause) is that fault, not the
// harness, and only what it lasted beyond the fault counts, when that is
// as long as the shortest stall a watcher reports (minStallNs): the few
// instants between the fault's SIGCONT and its recorded end are not one.
// A wait the kernel counted on the run queue is the machine's wherever it
// falls (stalled).
func stallStats(stalls []stall, spans []faultSpan) StallStats {
	s := StallStats{Worst: -1}
	for _, x := range stalls {
		lo, hi := x.start, x.end
		if x.client >= 0 && !x.queued {
			cuts := stoppedDuring(spans, x.client, lo, hi)
			for _, cut := range cuts {
				lo, hi = trim(lo, hi, cut)
			}
			if len(cuts) > 0 && hi-lo < minStallNs {
				continue
			}
		}
		if lo >= hi {
			continue
		}
		s.Count++
		if ms := float64(hi-lo) / 1e6; ms > s.MaxMs {
			s.MaxMs, s.Worst, s.WorstNode = ms, x.client, x.node
		}
	}
	return s
}

// minStallNs is the shortest stall a stall watcher reports
// (workload.StallThreshold's floor).
const minStallNs = 10_000_000

// missedSteps lists the fault-missed events of a history.
func missedSteps(events []history.Event) []MissedStep {
	var out []MissedStep
	for _, e := range events {
		m := MissedStep{Why: e.Message}
		if e.Fault != nil {
			m.Nemesis, m.Step = e.Fault.Name, e.Fault.Step
		}
		out = append(out, m)
	}
	return out
}

// pastLease finds, among the earlier holds of the overlapping pairs, the
// one that went on longest after its lease had certainly run out: the
// answer to its latest acquire plus the lease. Nil when the history knows
// no lease length (a lease-less or renewed lock) or no hold outlived one.
func pastLease(pairs [][2]*hold, tl timeline) *PastLease {
	if tl.lease <= 0 {
		return nil
	}
	var best *PastLease
	for _, p := range pairs {
		for _, h := range p {
			if h.grantedOK <= 0 {
				continue
			}
			past := h.end - (h.grantedOK + tl.lease)
			if ms := float64(past) / 1e6; past > 0 && (best == nil || ms > best.Ms) {
				best = &PastLease{Client: h.client, Key: h.key, Ms: ms}
			}
		}
	}
	return best
}
