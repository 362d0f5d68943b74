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
	if holds == 0 {
		gaps = append(gaps, "no client ever held a lock: nothing was tested")
	}

	r.Reasons = append(append(r.Reasons, violations...), gaps...)
	switch {
	case len(violations) > 0:
		r.Verdict = Violation
		r.Summary = violationSummary(r, violations[0])
	case len(gaps) > 0:
		r.Verdict = Inconclusive
		r.Summary = "inconclusive: " + strings.Join(gaps, "; ")
	default:
		r.Verdict = Safe
		r.Summary = fmt.Sprintf("safe: %s on %s, no two overlapped%s; %s",
			plural(holds, "hold", "holds"), plural(keys, "key", "keys"), landing(r.Evidence), res.Summary)
	}
	// Liveness is reported beside safety, never instead of it.
	if dk := r.Liveness.DeadlockedKeys; len(dk) > 0 {
		r.Summary += fmt.Sprintf("; liveness failure: %s never expire%s (deadlocked)", strings.Join(dk, ", "), map[bool]string{true: "s", false: ""}[len(dk) == 1])
	}
}

// violationSummary tells the first overlap as a story, or else the first
// piece of evidence.
func violationSummary(r *Result, first string) string {
	if len(r.Mutex.Overlaps) == 0 {
		return "violation: " + first
	}
	o := r.Mutex.Overlaps[0]
	s := fmt.Sprintf("clients %d and %d both held %s for %s from t=%s; %s",
		o.Clients[0], o.Clients[1], o.Key, Millis(o.EndMs-o.StartMs), Seconds(o.StartMs), OverlapCause(o, r.Faults))
	if n := r.Mutex.OverlapCount; n > 1 {
		s += fmt.Sprintf(" (%d overlaps in all", n)
		if c := r.Evidence.Overlaps; len(c) > 1 {
			s += fmt.Sprintf(": %d caused by faults, %d by stalls of the harness, %d by neither", c[CauseFault], c[CauseStall], c[CauseNone])
		}
		s += ")"
	}
	return s + landing(r.Evidence)
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
	if o.Stall != nil {
		return "no fault was active (" + o.Stall.Text + ", shorter than the overlap)"
	}
	return "no fault was active"
}

// landing says how many faults landed, when there were faults.
func landing(e Evidence) string {
	switch {
	case e.Faults == 0:
		return ""
	case e.Landed == 0:
		return fmt.Sprintf(" (none of the %d faults landed: no evidence about them)", e.Faults)
	}
	return fmt.Sprintf(" (%d of %d faults landed)", e.Landed, e.Faults)
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

// Millis says how long ms lasted: "0.412 ms", "4.2 ms", "312 ms", "1.2 s".
func Millis(ms float64) string {
	switch {
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
