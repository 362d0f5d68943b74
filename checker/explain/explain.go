// Package explain tells a reader, in sentences, what a checked run shows:
// the headline of a verdict and the witness of a violation. It reads only
// the checker's Result, never a history: the checker decides, this package
// words its decision for the report and for `lockchaos shrink`.
package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// Headline says in one sentence why a run reached its verdict, from its
// result alone, for a reader (the report's headline); ttlMs is the lease
// the run's lock used. The checker's Result.Summary is the short form. It describes each
// fault by what it did (checker.FaultWindow.Action), never by the nemesis's name: for a violation, who held which key
// together, for how long, and what the active faults did to whom, e.g.
// "clients 2 and 4 both held lock:0 for 312 ms from t=3.41 s; client 2 was
// paused for 1.20 s from t=3.10 s, past its 500 ms TTL".
func Headline(res checker.Result, ttlMs float64) string {
	switch res.Verdict {
	case checker.Violation:
		return explainViolation(res, ttlMs)
	case checker.Safe:
		return explainSafe(res)
	}
	why := "the evidence is incomplete"
	if len(res.Reasons) > 0 {
		why = strings.Join(res.Reasons, "; ")
	}
	return "Inconclusive — no violation was found, but " + why + "."
}

func explainViolation(res checker.Result, ttl float64) string {
	if len(res.Mutex.Overlaps) == 0 {
		return "No two holds overlapped in the history, but the protected resource shows the damage: " + res.Resource.Summary + "."
	}
	o := res.Mutex.Overlaps[0]
	var b strings.Builder
	fmt.Fprintf(&b, "Clients %d and %d both held %s for %s from t=%s", o.Clients[0], o.Clients[1], o.Key, checker.Millis(o.EndMs-o.StartMs), checker.Seconds(o.StartMs))
	var active []string
	for _, f := range res.Faults {
		if slices.Contains(o.Faults, f.ID) {
			active = append(active, faultSentence(f, o, ttl))
		}
	}
	first := o.Holds[0]
	switch {
	case len(active) > 0:
		b.WriteString("; " + strings.Join(active, "; "))
	case ttl > 0 && first.EndMs-first.StartMs > ttl:
		fmt.Fprintf(&b, "; no fault was active: client %d held for %s, longer than the %s TTL", first.Client, checker.Millis(first.EndMs-first.StartMs), checker.Millis(ttl))
	default:
		b.WriteString("; no fault was active")
	}
	switch first.End {
	case checker.EndReleaseNotHeld:
		fmt.Fprintf(&b, "; client %d's release then found its lease already gone", first.Client)
	case checker.EndLost:
		fmt.Fprintf(&b, "; client %d learned only afterwards that it had lost the lock", first.Client)
	}
	if n := res.Resource.LostUpdates; n > 0 {
		fmt.Fprintf(&b, "; %d %s of the protected counter %s lost", n, word(n, "update", "updates"), word(n, "was", "were"))
	}
	if n, k := res.Mutex.OverlapCount, res.Mutex.IncidentCount; n > 1 && k > 0 {
		fmt.Fprintf(&b, " (%d %s in all, %d overlapping pairs of holds, two or more holders for %s in total)", k, word(k, "incident", "incidents"), n, checker.Millis(res.Mutex.CoexistMs))
	} else if n > 1 {
		fmt.Fprintf(&b, " (%d overlapping pairs of holds in all)", n)
	}
	return b.String() + "."
}

// faultSentence says what one fault did, in the terms of the overlap it
// explains: a pause longer than the TTL of a client that held is the
// textbook case, and says so.
func faultSentence(f checker.FaultWindow, o checker.Overlap, ttl float64) string {
	dur, open := 0.0, f.EndMs == nil
	if !open {
		dur = *f.EndMs - f.StartMs
	}
	span := fmt.Sprintf("for %s from t=%s", checker.Millis(dur), checker.Seconds(f.StartMs))
	if open {
		span = fmt.Sprintf("from t=%s until the end of the run", checker.Seconds(f.StartMs))
	}
	who := f.Target
	if len(f.Clients) > 0 {
		var cs []string
		for _, c := range f.Clients {
			cs = append(cs, fmt.Sprint(c))
		}
		who = word(len(f.Clients), "client", "clients") + " " + strings.Join(cs, ", ")
	}
	held := len(f.Clients) == 1 && (f.Clients[0] == o.Clients[0] || f.Clients[0] == o.Clients[1])
	switch {
	case len(f.Stopped) > 0: // a process stopped (SIGSTOP)
		s := fmt.Sprintf("%s was paused %s", who, span)
		if held && ttl > 0 && dur > ttl {
			s += fmt.Sprintf(", past its %s TTL", checker.Millis(ttl))
		}
		return s
	case f.Action == history.ActionKill && len(f.Clients) > 0:
		return fmt.Sprintf("%s was killed at t=%s", who, checker.Seconds(f.StartMs))
	}
	// Other faults say what they did in their target ("lock node 0: primary
	// n0 killed, replica n0r1 promoted"); their parameters are in the report.
	return fmt.Sprintf("fault %s was active %s", f.Label(), span)
}

func explainSafe(res checker.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "No two clients held the same lock at once: %d %s checked", res.Mutex.Holds, word(res.Mutex.Holds, "hold", "holds"))
	if res.Mutex.Porcupine != "" {
		fmt.Fprintf(&b, " (porcupine: %s, interval sweep: no overlap)", res.Mutex.Porcupine)
	}
	if n := len(res.Faults); n > 0 {
		counts := map[string]int{}
		var names []string
		for _, f := range res.Faults {
			if counts[f.Name] == 0 {
				names = append(names, f.Name)
			}
			counts[f.Name]++
		}
		var parts []string
		for _, name := range names {
			parts = append(parts, fmt.Sprintf("%s ×%d", name, counts[name]))
		}
		fmt.Fprintf(&b, " through %d %s (%s)", n, word(n, "fault", "faults"), strings.Join(parts, ", "))
	} else {
		b.WriteString(" with no fault injected")
	}
	if keys := res.Liveness.DeadlockedKeys; len(keys) > 0 {
		fmt.Fprintf(&b, "; but %s %s left with no expiry, so nobody can ever acquire %s again (a deadlock)",
			strings.Join(keys, ", "), word(len(keys), "was", "were"), word(len(keys), "it", "them"))
	}
	return b.String() + "."
}

// word is one or many by n (plural also writes n).
func word(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
