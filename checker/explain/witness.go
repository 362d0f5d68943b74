package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
)

// Witness tells the story of a violation in a few lines, from its result
// alone: the first overlap's earlier hold and the lease it rested on, the
// faults that explain the overlap and what each did, the second client's
// acquire (after the first lease ran out, or while it should still have
// lived: the lock forgot it), how long the first client went on, and how
// long both held the key. `lockchaos shrink` writes it as witness.md and a
// run's report shows it. Nil unless the verdict is a violation.
func Witness(res checker.Result) []string {
	if res.Verdict != checker.Violation {
		return nil
	}
	if len(res.Mutex.Overlaps) == 0 {
		return []string{"No two holds overlapped in the history, but the protected resource shows the damage: " + res.Resource.Summary + "."}
	}
	var ttl float64 // the lease; 0 for a lock without one
	if res.Settings != nil && !res.Settings.Leaseless {
		ttl = float64(res.Settings.Lease())
	}
	o := res.Mutex.Overlaps[0]
	a, b := o.Holds[0], o.Holds[1]
	var lines []string

	first := fmt.Sprintf("Client %d acquired %s at t=%s", a.Client, o.Key, checker.Seconds(a.StartMs))
	if a.LeaseEndMs > 0 {
		lease := ""
		if ttl > 0 {
			lease = " " + checker.Millis(ttl)
		}
		first += fmt.Sprintf("; its%s lease ran out on the lock's nodes by t=%s at the latest", lease, checker.Seconds(a.LeaseEndMs))
	}
	lines = append(lines, first+".")

	faults := 0
	for _, f := range res.Faults {
		if !slices.Contains(o.Faults, f.ID) {
			continue
		}
		faults++
		what := faultSentence(f, o, ttl)
		s := fmt.Sprintf("Fault %d, %s: %s", f.ID, f.Label(), what)
		if rest, ok := strings.CutPrefix(what, "fault "+f.Label()+" "); ok {
			s = fmt.Sprintf("Fault %d, %s, %s", f.ID, f.Label(), rest) // "…, was active for …"
		}
		if f.Effect != "" {
			s += " — " + f.Effect
		}
		lines = append(lines, s+".")
	}
	if faults == 0 {
		s := "No fault was active"
		switch {
		case ttl > 0 && a.EndMs-a.StartMs > ttl:
			s += fmt.Sprintf(": client %d's critical section lasted %s, longer than the %s lease", a.Client, checker.Millis(a.EndMs-a.StartMs), checker.Millis(ttl))
		case o.Stall != nil && o.Stall.LeaseLived:
			s += fmt.Sprintf(": %s (a stall of the harness, which does not explain it: client %d's lease still lived when client %d's acquire returned)", o.Stall.Text, a.Client, b.Client)
		case o.Stall != nil:
			s += ": " + o.Stall.Text + " (a stall of the harness)"
		}
		lines = append(lines, s+".")
	}

	second := fmt.Sprintf("Client %d acquired %s at t=%s", b.Client, o.Key, checker.Seconds(b.StartMs))
	switch {
	case a.LeaseEndMs <= 0:
		second += fmt.Sprintf(", while client %d still held it", a.Client)
	case b.StartMs >= a.LeaseEndMs:
		second += fmt.Sprintf(", %s after client %d's lease had run out, while client %d still held it", checker.Millis(b.StartMs-a.LeaseEndMs), a.Client, a.Client)
	case a.LeaseFromMs > 0 && b.StartMs < a.LeaseFromMs:
		second += fmt.Sprintf(", while client %d's lease should have lived %s more: the lock had forgotten it", a.Client, checker.Millis(a.LeaseFromMs-b.StartMs))
	default:
		second += fmt.Sprintf(", about when client %d's lease ran out, while client %d still held it", a.Client, a.Client)
	}
	lines = append(lines, second+".")
	if o.Late != nil {
		lines = append(lines, fmt.Sprintf("How: %s.", o.Late.Text))
	}
	if s := grantAfterLease(res, o, b, ttl); s != "" {
		lines = append(lines, s)
	}

	went := fmt.Sprintf("Client %d went on in its critical section until t=%s", a.Client, checker.Seconds(a.EndMs))
	if a.LeaseEndMs > 0 && a.EndMs > a.LeaseEndMs {
		went += fmt.Sprintf(", %s after its lease had run out", checker.Millis(a.EndMs-a.LeaseEndMs))
	}
	switch a.End {
	case checker.EndReleaseNotHeld:
		went += "; its release found the lease already gone"
	case checker.EndReleaseUnknown:
		went += "; its release got no answer"
	case checker.EndLost:
		went += "; only then did it learn it had lost the lock"
	case checker.EndExit:
		went += ", when its process died"
	case checker.EndOpen:
		went += ", the end of the history, still holding"
	}
	lines = append(lines, went+".")

	both := fmt.Sprintf("Both held %s for %s from t=%s", o.Key, checker.Millis(o.EndMs-o.StartMs), checker.Seconds(o.StartMs))
	if n := res.Resource.LostUpdates; n > 0 {
		both += fmt.Sprintf("; %d %s of the protected counter %s lost", n, word(n, "update", "updates"), word(n, "was", "were"))
	}
	if n := res.Mutex.OverlapCount; n > 1 {
		both += fmt.Sprintf(" (%d overlapping pairs of holds in the run)", n)
	}
	return append(lines, both+".")
}

// grantAfterLease says, of the later hold b, when its acquire took longer
// than the lease: a lock that gives a lease from its acquire's start (a
// key's PX, a Redlock validity) granted one that had already run out, and
// one whose library keeps a session alive (etcd, ZooKeeper) granted it on
// a session that lived only if its keep-alives got through meanwhile — the
// faults on that client's links or process during the wait say whether
// they could. "" otherwise.
func grantAfterLease(res checker.Result, o checker.Overlap, b checker.HoldSpan, lease float64) string {
	if lease <= 0 || b.AcquireMs <= 0 {
		return ""
	}
	invoked := b.AcquireMs
	waited := b.StartMs - invoked
	if waited <= lease {
		return ""
	}
	var during []string
	for _, f := range res.Faults {
		end := res.DurationMs
		if f.EndMs != nil {
			end = *f.EndMs
		}
		if f.StartMs < b.StartMs && end > invoked && (slices.Contains(f.Clients, b.Client) || slices.Contains(f.Stopped, b.Client)) {
			during = append(during, f.Label())
		}
	}
	if res.Settings != nil && res.Settings.KeepsAlive {
		s := fmt.Sprintf("Client %d's acquire waited %s (from t=%s), longer than its session's %s lease: the grant was good only if its keep-alives reached the store meanwhile",
			b.Client, checker.Millis(waited), checker.Seconds(invoked), checker.Millis(lease))
		if len(during) > 0 {
			s += fmt.Sprintf(", and %s acted on client %d during the wait: a lock that re-checked its session after waiting would have refused", strings.Join(during, ", "), b.Client)
		}
		return s + "."
	}
	return fmt.Sprintf("Client %d's acquire took %s (from t=%s), longer than the %s lease it asked for: the lock granted a lease that had already run out, where a check of the time the acquire took would have refused it.",
		b.Client, checker.Millis(waited), checker.Seconds(invoked), checker.Millis(lease))
}
