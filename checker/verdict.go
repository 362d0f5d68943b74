package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockchaos/lockchaos/history"
)

// mutexAnswer reconciles porcupine's answer with the sweep's count of
// overlaps. The two check the same holds by different means, so they must
// agree: porcupine proves, the sweep explains. When they do not, one of them
// is wrong, which is a checker bug that must be loud; a found violation then
// stands, whichever found it.
func mutexAnswer(answer porcupine.CheckResult, overlaps int, timeout time.Duration) (m MutexResult, violations, gaps []string) {
	m.Porcupine = checkResultName(answer)
	switch answer {
	case porcupine.Ok, porcupine.Illegal:
		lin := answer == porcupine.Ok
		m.Linearizable = &lin
		m.Agree = lin == (overlaps == 0)
		if !m.Agree {
			violations = append(violations, fmt.Sprintf(
				"checker disagreement: porcupine says %s, the sweep found %d overlaps (a checker bug; the violation stands)",
				m.Porcupine, overlaps))
		}
		if !lin {
			violations = append(violations, "porcupine: the acquire/release history is not linearizable as a mutex")
		}
	default:
		// No answer to agree with: Agree stays false, but this is no
		// disagreement, only missing evidence.
		gaps = append(gaps, fmt.Sprintf("checker timed out after %s: porcupine could not decide whether the mutex history is linearizable", timeout))
	}
	return m, violations, gaps
}

func checkResultName(c porcupine.CheckResult) string {
	switch c {
	case porcupine.Ok:
		return "Ok"
	case porcupine.Illegal:
		return "Illegal"
	}
	return "Unknown"
}

// decide sets the verdict, the reasons and the summary. Every violation and
// every gap in the evidence is listed; a violation wins over gaps (damage
// seen in part of a history is damage), and gaps forbid safe.
//
// holds and keys are how many holds the history has, on how many keys.
func decide(r *Result, tr *trace, answer porcupine.CheckResult, timeout time.Duration, resourceGaps []string, tl timeline, holds, keys int) {
	m, violations, mutexGaps := mutexAnswer(answer, r.Mutex.OverlapCount, timeout)
	r.Mutex.Linearizable, r.Mutex.Porcupine, r.Mutex.Agree = m.Linearizable, m.Porcupine, m.Agree

	if n := r.Mutex.OverlapCount; n > 0 {
		o := r.Mutex.Overlaps[0]
		violations = append(violations, fmt.Sprintf("%s of different clients overlapped; the first: clients %d and %d on %s at t=%s",
			plural(n, "pair of holds", "pairs of holds"), o.Clients[0], o.Clients[1], o.Key, Seconds(o.StartMs)))
	}
	res := r.Resource
	if res.LostUpdates > 0 {
		violations = append(violations, fmt.Sprintf("%s lost: the final counters are below the accepted writes",
			plural(res.LostUpdates, "increment was", "increments were")))
	}
	if res.StaleReads > 0 {
		violations = append(violations, plural(res.StaleReads, "read", "reads")+" of the resource returned a value older than an acknowledged write")
	}
	if res.FenceReused > 0 {
		violations = append(violations, fmt.Sprintf("%s accepted under a fencing token another client had already used",
			plural(res.FenceReused, "fenced operation was", "fenced operations were")))
	}
	if res.StaleAccepted > 0 {
		violations = append(violations, fmt.Sprintf("%s accepted by the resource after a higher token had reached it",
			plural(res.StaleAccepted, "stale fenced operation was", "stale fenced operations were")))
	}

	var gaps []string
	if tr.runEnd == nil {
		gaps = append(gaps, "history incomplete: no run-end event (the run was cut short; open holds end at their client's last event)")
	}
	// Exits of one instant arrive in any order; list them by time and client.
	slices.SortStableFunc(tr.unexpectedExits, func(a, b history.Event) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.Client, b.Client))
	})
	for _, e := range tr.unexpectedExits {
		g := fmt.Sprintf("worker %d exited unexpectedly at t=%s", e.Client, Seconds(tl.ms(e.Time)))
		if e.Message != "" {
			g += " (" + e.Message + ")"
		}
		gaps = append(gaps, g+": what it did last may be missing from the history")
	}
	if tr.cutOff {
		gaps = append(gaps, "the history's last line was cut off in the middle: the file is not whole, and what was written after may be missing")
	}
	if g := tr.malformed.reason(); g != "" {
		gaps = append(gaps, g)
	}
	for _, e := range tr.runEndErrors {
		gaps = append(gaps, "the coordinator recorded a problem: "+e)
	}
	gaps = append(gaps, mutexGaps...)
	gaps = append(gaps, resourceGaps...)
	switch {
	case holds == 0:
		gaps = append(gaps, "no client ever held a lock: nothing was tested")
	case r.Uncontended():
		// A run without faults whose keys one client held, and no other
		// ever did: no hand-over was made, so a safe verdict would rest on
		// nothing (2026-11-30: a run on containers beside CPU hogs made 1
		// hold in 6 s, its write and release timed out, and it was judged
		// safe). A key found stuck says why no other client got it. (With
		// faults, what they did is the evidence: noFaultLanded.)
		gaps = append(gaps, fmt.Sprintf("no key ever passed from one client to another (%s, all by one client of %d): mutual exclusion was never put to the test", plural(holds, "hold", "holds"), r.Settings.Clients))
	}
	if g := noFaultLanded(r); g != "" {
		gaps = append(gaps, g)
	}

	r.Reasons = append(append(r.Reasons, violations...), gaps...)
	switch {
	case len(violations) > 0:
		r.Verdict = Violation
		r.Summary = violationSummary(r, violations[0])
		// The violation stands, but what else went wrong is said too.
		for _, e := range tr.runEndErrors {
			r.Summary += "; degraded: the coordinator recorded a problem: " + e
		}
	case len(gaps) > 0:
		r.Verdict = Inconclusive
		r.Summary = "inconclusive: " + strings.Join(gaps, "; ")
	default:
		r.Verdict = Safe
		r.Summary = fmt.Sprintf("safe: %s on %s, no two overlapped%s; %s",
			plural(holds, "hold", "holds"), plural(keys, "key", "keys"), landing(r), res.Summary)
	}
	if s := errorsSentence(r.Errors); s != "" {
		r.Summary += "; " + s
	}
	if s := leaseInForce(r.Settings); s != "" {
		r.Summary += "; " + s
	}
	// Liveness is reported beside safety, never instead of it.
	if dk := r.Liveness.DeadlockedKeys; len(dk) > 0 {
		r.Summary += fmt.Sprintf("; liveness failure: %s never expire%s (deadlocked)", strings.Join(dk, ", "), map[bool]string{true: "s", false: ""}[len(dk) == 1])
	}
	if s := stuckSentence(r.Liveness); s != "" {
		r.Summary += "; " + s
	}
}

// violationSummary tells the first overlap as a story, or else the first
// piece of evidence; then the whole: how long keys were held twice, how
// far a hold outlived its lease, and what caused the overlaps. When most
// overlaps had another cause than the first, the headline says so first:
// the first overlap's cause stays in the witness.
func violationSummary(r *Result, first string) string {
	if len(r.Mutex.Overlaps) == 0 {
		return "violation: " + first
	}
	o := r.Mutex.Overlaps[0]
	s := fmt.Sprintf("clients %d and %d both held %s for %s from t=%s; %s",
		o.Clients[0], o.Clients[1], o.Key, Millis(o.EndMs-o.StartMs), Seconds(o.StartMs), OverlapCause(o, r.Faults))
	m := r.Mutex
	if m.OverlapCount > 1 || m.CoexistMs > o.EndMs-o.StartMs+0.0005 {
		s += fmt.Sprintf("; in all two or more clients held a key at once for %s, in %s and %s",
			Millis(m.CoexistMs), plural(m.IncidentCount, "incident", "incidents"), plural(m.OverlapCount, "overlapping pair of holds", "overlapping pairs of holds"))
	}
	if p := m.PastLease; p != nil {
		s += fmt.Sprintf("; client %d held %s %s past its lease's end", p.Client, p.Key, Millis(p.Ms))
	}
	if c := r.Evidence.Overlaps; m.OverlapCount > 1 && len(c) > 1 {
		s += fmt.Sprintf(" (overlaps by cause: fault %d, stall of the harness %d, neither %d)", c[CauseFault], c[CauseStall], c[CauseNone])
	}
	if main := mainCause(r.Evidence.Overlaps); main != "" && main != o.Cause {
		s = fmt.Sprintf("%d of %d overlaps %s. The first: %s", r.Evidence.Overlaps[main], m.OverlapCount, causeWords[main], s)
	}
	return s + landing(r)
}

// causeWords says what a cause means, for the headline.
var causeWords = map[string]string{
	CauseNone:  "had no fault and no stall of the harness behind them: the lock broke on its own",
	CauseFault: "came under faults",
	CauseStall: "came from stalls of the harness (its processes could not run), not from a fault or the lock",
}

// mainCause is the cause of most overlaps, "" when none is ahead of every
// other.
func mainCause(byCause map[string]int) string {
	best, n, tie := "", 0, false
	for _, c := range []string{CauseNone, CauseFault, CauseStall} {
		switch k := byCause[c]; {
		case k > n:
			best, n, tie = c, k, false
		case k == n && k > 0:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// OverlapCause says in words what caused o: the faults that were active
// before it began, or a stall of the harness, or neither.
func OverlapCause(o Overlap, all []FaultWindow) string {
	switch o.Cause {
	case CauseStall:
		return "no fault explains it: " + o.Stall.Text + ", as long as the overlap lasted (a stall of the harness, not a fault)"
	case CauseFault:
		return causedBy(all, o.Faults)
	}
	if o.Stall != nil && o.Stall.LeaseLived {
		return fmt.Sprintf("no fault was active (%s, but client %d's lease still lived when client %d's acquire returned: no stall explains it)", o.Stall.Text, o.Clients[0], o.Clients[1])
	}
	if o.Stall != nil {
		return "no fault was active (" + o.Stall.Text + ", shorter than the overlap)"
	}
	return "no fault was active"
}

// landing says how many faults landed, when there were faults, and, when
// overlaps came under faults that did not land, that the lock granted a
// second holder although the fault did not do what its nemesis aims for.
func landing(r *Result) string {
	e := r.Evidence
	var s string
	switch {
	case e.Faults == 0:
		return ""
	case e.Landed == 0:
		s = fmt.Sprintf(" (none of the %d faults landed", e.Faults)
	default:
		s = fmt.Sprintf(" (%d of %d faults landed", e.Landed, e.Faults)
	}
	if n := e.Overlaps[CauseFault] - e.LandedFaultOverlaps; n > 0 {
		s += fmt.Sprintf("; %s came under %s that did not land, yet the lock granted a second holder during %s: the lock's own check failed, or the fault reached a hold it did not aim at",
			plural(n, "overlap", "overlaps"), unlandedCauses(r), map[bool]string{true: "it", false: "them"}[len(unlandedFaults(r)) == 1])
	} else if e.Landed == 0 {
		s += ": no evidence about them"
	}
	return s + ")"
}

// unlandedFaults are the faults that did not land but caused overlaps.
func unlandedFaults(r *Result) []FaultWindow {
	caused := map[int]bool{}
	for _, o := range r.Mutex.Overlaps {
		if o.Cause == CauseFault {
			for _, id := range o.Faults {
				caused[id] = true
			}
		}
	}
	var out []FaultWindow
	for _, f := range r.Faults {
		if !f.Landed && caused[f.ID] {
			out = append(out, f)
		}
	}
	return out
}

// unlandedCauses names the faults that did not land but caused overlaps,
// with why they did not land: "slow-reply (client 1), which did not
// outlast the lease".
func unlandedCauses(r *Result) string {
	fs := unlandedFaults(r)
	if len(fs) == 0 {
		return "faults"
	}
	f := fs[0]
	s := "fault " + f.Label()
	if f.Effect != "" {
		s += " (" + f.Effect + ")"
	}
	if len(fs) > 1 {
		s += fmt.Sprintf(" and %s", plural(len(fs)-1, "other", "others"))
	}
	return s
}

// askedNemeses are the nemeses a run asked for, as its run-start records
// them. "none" is no nemesis: every run without faults recorded it until
// the settings dropped it (506f455 and before), and such a history keeps
// the verdict it had, safe with no fault asked for.
func askedNemeses(run *history.RunInfo) []string {
	out := []string{}
	for _, n := range run.Nemesis {
		if n != "" && n != "none" {
			out = append(out, n)
		}
	}
	return out
}

// noFaultLanded says, of a run that asked for nemeses, which of them
// landed no fault, and why that leaves the run untested: "" when each
// landed one. Such a run is no evidence about the lock under those faults,
// whatever else it shows, so it is never safe (a proven overlap still
// makes it a violation). Each nemesis counts on its own: a scenario asks
// for two because it claims something of both, and one that landed does
// not stand for the other (2026-11-30: a failover that landed, the pause
// after it cut short by the workload's end on a busy machine, and the run
// was judged safe where the scenario's claim is that the pause breaks the
// lock).
func noFaultLanded(r *Result) string {
	var idle []string
	for i, name := range r.Nemesis {
		if slices.Contains(r.Nemesis[:i], name) {
			continue // asked for twice (two option sets): its faults are one pool
		}
		if s := nemesisIdle(r, name); s != "" {
			idle = append(idle, s)
		}
	}
	if len(idle) == 0 {
		return ""
	}
	return strings.Join(idle, "; ") + ": nothing was tested of what it does"
}

// nemesisIdle says why nemesis name landed no fault in r, or "" when one
// of its faults landed.
func nemesisIdle(r *Result, name string) string {
	var faults []FaultWindow
	for _, f := range r.Faults {
		if f.Name != name {
			continue
		}
		if f.Landed {
			return ""
		}
		faults = append(faults, f)
	}
	asked := "nemesis " + name
	var others []string
	for _, n := range r.Nemesis {
		if n != name && !slices.Contains(others, n) {
			others = append(others, n)
		}
	}
	if len(others) > 0 {
		asked += " (beside " + strings.Join(others, ", ") + ")"
	}
	if len(faults) == 0 {
		s := fmt.Sprintf("%s was asked for, but no fault was injected", asked)
		var missed []MissedStep
		for _, m := range r.Evidence.Missed {
			if m.Nemesis == name || m.Nemesis == "" {
				missed = append(missed, m)
			}
		}
		if len(missed) > 0 {
			s += fmt.Sprintf(": %s missed (the first: %s)", plural(len(missed), "step", "steps"), missed[0].Why)
		}
		return s
	}
	s := fmt.Sprintf("%s was asked for, but none of its %s landed", asked, plural(len(faults), "fault", "faults"))
	for _, f := range faults {
		if f.Effect != "" {
			s += " (" + f.Label() + ": " + f.Effect + ")"
			break
		}
	}
	return s
}

// leaseInForce says when the lease the lock really used was not the TTL
// the run asked for (a store's shortest lease, a lock's own option): spans
// written in ttl were sized against the TTL asked for, so they lasted a
// different number of leases.
func leaseInForce(run *history.RunInfo) string {
	if run == nil || run.Leaseless || run.LeaseMs <= 0 || run.TTLms <= 0 || run.LeaseMs == run.TTLms {
		return ""
	}
	return fmt.Sprintf("the lease in force was %s, not the --ttl of %s (the lock or its store set it): spans given in ttl were sized against %s, so each lasted %.2g leases per ttl",
		Millis(float64(run.LeaseMs)), Millis(float64(run.TTLms)), Millis(float64(run.TTLms)), float64(run.TTLms)/float64(run.LeaseMs))
}

func causedBy(all []FaultWindow, ids []int) string {
	var names []string
	for _, id := range ids {
		for _, f := range all {
			if f.ID == id {
				names = append(names, f.Label())
				break
			}
		}
	}
	switch len(names) {
	case 0:
		return "no fault was active"
	case 1:
		return "caused by fault " + names[0]
	}
	return "caused by faults " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Label names a fault and what it acted on: "pause-client (client 2)".
func (f FaultWindow) Label() string {
	switch {
	case len(f.Clients) == 1:
		return fmt.Sprintf("%s (client %d)", f.Name, f.Clients[0])
	case len(f.Clients) > 1:
		ids := make([]string, len(f.Clients))
		for i, c := range f.Clients {
			ids[i] = fmt.Sprint(c)
		}
		return fmt.Sprintf("%s (clients %s)", f.Name, strings.Join(ids, ", "))
	case f.Target != "":
		return fmt.Sprintf("%s (%s)", f.Name, f.Target)
	}
	return f.Name
}

// Seconds writes a time of the run: "3.41 s".
func Seconds(ms float64) string { return fmt.Sprintf("%.2f s", ms/1e3) }

// Millis says how long ms lasted: "1 ns", "0.412 ms", "4.2 ms", "312 ms",
// "1.2 s". A span shorter than a microsecond is told in nanoseconds: an
// overlap of 1 ns is not one of "0.000 ms".
func Millis(ms float64) string {
	switch {
	case ms < 0.001:
		return fmt.Sprintf("%.0f ns", ms*1e6)
	case ms < 1:
		return fmt.Sprintf("%.3f ms", ms)
	case ms >= 1000:
		s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", ms/1e3), "0"), ".")
		return s + " s"
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
