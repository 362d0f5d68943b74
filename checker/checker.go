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

	"github.com/anishathalye/porcupine"

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
	_      struct{}
}

// Check decides the verdict of one run from its events, given in any order.
func Check(events []history.Event, opts Options) Result {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	sorted := sortByTime(events)
	tl := newTimeline(sorted)
	tr := replay(sorted)
	tr.cutOff = opts.CutOff
	fillLatencies(tr)
	faults, spans := faultWindows(sorted, tl, tr.holds)
	tr.acquire.DuringFaults = duringFaults(tr.attempts, spans)

	began := time.Now()
	answer := porcupine.CheckOperationsTimeout(MutexModel(), tr.ops, timeout)
	landed := map[int]bool{}
	for _, f := range faults {
		landed[f.ID] = f.Landed
	}
	// The harness's own resource node answering late is a stall of the
	// harness too (slowResource).
	tr.stalls = append(tr.stalls, slowResource(tr.resourceOps, spans)...)
	slices.SortStableFunc(tr.stalls, func(a, b stall) int { return cmp.Compare(a.start, b.start) })
	count, byCause, byLanded, overlaps, incidents := sweep(tr.holds, spans, tr.stalls, landed, tl)
	checkMs := float64(time.Since(began).Microseconds()) / 1e3

	resource, resourceGaps := checkResource(tr.resourceOps, sorted)

	r := Result{
		Schema:  ResultSchema,
		Reasons: []string{},
		Nemesis: []string{},
		Mutex: MutexResult{
			Ops:          len(tr.ops),
			Holds:        len(tr.holds),
			OverlapCount: count,
			Overlaps:     overlaps,
			CheckMs:      checkMs,
		},
		Resource: resource,
		Acquire:  tr.acquire,
		Release:  tr.release,
		Liveness: LivenessResult{DeadlockedKeys: deadlockedKeys(sorted)},
		Faults:   faults,
		// Beyond a cut or a death, a history is not whole when it breaks its
		// own rules or the coordinator says it lost part of it.
		Complete: tr.runEnd != nil && !tr.cutOff && len(tr.unexpectedExits) == 0 &&
			tr.malformed.reason() == "" && len(tr.runEndErrors) == 0,
	}
	if len(sorted) > 0 {
		r.DurationMs = tl.ms(tl.end)
	}
	r.WorkloadMs = float64(tr.workloadNs) / 1e6
	r.Mutex.IncidentCount, r.Mutex.Incidents, r.Mutex.CoexistMs = listIncidents(incidents, overlaps, tl)
	r.Evidence = evidence(faults, byCause, byLanded)
	r.Stalls = stallStats(tr.stalls)
	if tr.runStart != nil && tr.runStart.Run != nil {
		run := tr.runStart.Run
		r.Lock, r.Seed = run.Lock, run.Seed
		settings := *run
		r.Settings = &settings
		r.Nemesis = append(r.Nemesis, run.Nemesis...)
	}
	if len(overlaps) > 0 {
		o := overlaps[0]
		first, cause := o.StartMs, o.Cause
		if cause == CauseFault {
			earliest := o.StartMs
			for _, f := range faults {
				if slices.Contains(o.Faults, f.ID) {
					earliest = min(earliest, f.StartMs)
				}
			}
			first -= earliest
		}
		r.FirstViolationMs, r.FirstViolationCause = &first, cause
	}
	decide(&r, tr, answer, timeout, resourceGaps, tl)
	return r
}

// sortByTime returns a copy of events in time order. Events arrive in the
// file in order of arrival, not of time; among events of one instant the
// file order is kept (a client writes its own events in order), except that
// a fault-end, a worker-exit and the run-end come last: whatever bears the
// same timestamp happened before the coordinator saw them.
func sortByTime(events []history.Event) []history.Event {
	sorted := slices.Clone(events)
	rank := func(k history.Kind) int {
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
	slices.SortStableFunc(sorted, func(a, b history.Event) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(rank(a.Kind), rank(b.Kind)))
	})
	return sorted
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
}

func newTimeline(sorted []history.Event) timeline {
	if len(sorted) == 0 {
		return timeline{}
	}
	tl := timeline{origin: sorted[0].Time, end: sorted[len(sorted)-1].Time}
	for _, e := range sorted {
		if e.Kind == history.RunStart {
			tl.origin = e.Time
			if e.Run != nil && !e.Run.Renew {
				tl.lease = e.Run.Lease() * 1e6
			}
			break
		}
	}
	return tl
}

func (tl timeline) ms(t int64) float64 { return float64(t-tl.origin) / 1e6 }

// evidence counts the faults that landed, what became of their leases, and
// the overlaps by cause.
func evidence(faults []FaultWindow, byCause map[string]int, byLanded int) Evidence {
	e := Evidence{Faults: len(faults), Overlaps: byCause, FaultOverlaps: byLanded}
	for _, f := range faults {
		if !f.Landed {
			continue
		}
		e.Landed++
		switch f.Lease {
		case history.LeaseLost:
			e.LeasesLost++
		case history.LeaseKept:
			e.LeasesKept++
		case history.LeaseUnknown:
			e.LeasesUnknown++
		}
	}
	return e
}

func stallStats(stalls []stall) StallStats {
	s := StallStats{Count: len(stalls), Worst: -1}
	for _, x := range stalls {
		if ms := float64(x.end-x.start) / 1e6; ms > s.MaxMs {
			s.MaxMs, s.Worst = ms, x.client
		}
	}
	return s
}
