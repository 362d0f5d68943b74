package scenarios

import (
	"fmt"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
)

// Expectation is what a run must show. The verdict is about mutual
// exclusion; the deadlock and resource parts, when set, pin down the rest of
// a failure mode (a key left without expiry; a resource that fencing kept
// intact although the holds overlapped).
type Expectation struct {
	// Verdict is safe or violation; "" only observes the run.
	Verdict checker.Verdict
	// Chance, with Verdict violation ("violation?" in grid.yaml), says the
	// fault can break the lock, but not by construction: whether it does
	// depends on how the run falls. A violation counts as for any
	// violation (from an overlap that a landed fault caused); so does safe
	// (only when some fault landed). Each such cell says why.
	Chance bool
	// Deadlock, when set, says whether a lock key must (true) or must not
	// (false) be left with no expiry; nil does not look.
	Deadlock *bool
	// Resource, when set, is what the protected resource must show
	// (checker.ResourceResult.State): intact (fenced counts as intact),
	// fenced or damaged.
	Resource checker.ResourceState
	// Liveness, when set, says whether a key must stay available
	// (LivenessAvailable: none may get stuck, checker.LivenessResult.Stuck)
	// or must get stuck (LivenessStuck); "" does not look. Every grid cell
	// expects available unless its expectation says +stuck.
	Liveness string
}

// The liveness a run may be expected to show (Expectation.Liveness).
const (
	LivenessAvailable = "available"
	LivenessStuck     = "stuck"
)

// String says the expectation the way the tables show it, e.g. "safe",
// "safe+deadlock" or "violation, resource fenced".
func (e Expectation) String() string {
	s := string(e.Verdict)
	if s == "" {
		return ""
	}
	if e.Chance {
		s += "?"
	}
	if e.Deadlock != nil {
		if *e.Deadlock {
			s += "+deadlock"
		} else {
			s += ", no deadlock"
		}
	}
	if e.Resource != "" {
		s += ", resource " + string(e.Resource)
	}
	if e.Liveness == LivenessStuck {
		s += "+stuck"
	}
	return s
}

// Outcome says what a run showed, in the terms of e: the verdict,
// +deadlock when a key was left without expiry and e looks at deadlocks, and
// the resource's state when e looks at it. What e does not look at is in
// the run's summary, not in its outcome, so outcomes compare across runs.
func (e Expectation) Outcome(res checker.Result) string {
	s := string(res.Verdict)
	if e.Deadlock != nil && len(res.Liveness.DeadlockedKeys) > 0 {
		s += "+deadlock"
	}
	if e.Resource != "" {
		s += ", resource " + string(res.Resource.State)
	}
	if e.Liveness != "" && len(res.Liveness.Stuck) > 0 {
		s += "+stuck"
	}
	return s
}

// Met says whether res shows what e expects, and if not, what differs.
func (e Expectation) Met(res checker.Result) (bool, string) {
	var diffs []string
	if res.Verdict != e.Verdict && !(e.Chance && res.Verdict == checker.Safe) {
		diffs = append(diffs, fmt.Sprintf("verdict %s, expected %s", res.Verdict, e.Verdict))
	}
	deadlock := len(res.Liveness.DeadlockedKeys) > 0
	if e.Deadlock != nil && *e.Deadlock != deadlock {
		if deadlock {
			diffs = append(diffs, "a key was left deadlocked, expected none")
		} else {
			diffs = append(diffs, "no key was left deadlocked, expected one")
		}
	}
	switch stuck := len(res.Liveness.Stuck) > 0; {
	case e.Liveness == LivenessAvailable && stuck:
		x := res.Liveness.Stuck[0]
		diffs = append(diffs, fmt.Sprintf("%s got stuck (nobody held it for %s while clients tried), expected every key to stay available", x.Key, checker.Millis(x.ToMs-x.FromMs)))
	case e.Liveness == LivenessStuck && !stuck:
		diffs = append(diffs, "no key got stuck, expected one")
	}
	if e.Resource != "" {
		got := res.Resource.State
		ok := got == e.Resource || (e.Resource == checker.ResourceIntact && got == checker.ResourceFenced)
		if !ok {
			diffs = append(diffs, fmt.Sprintf("the resource was %s, expected %s", got, e.Resource))
		}
	}
	return len(diffs) == 0, strings.Join(diffs, "; ")
}

// Assess is what res shows about e: StatusMatch; StatusMismatch, with
// why; or StatusInconclusive when it is no evidence either way (the
// checker could not decide, or Judge says the run is spoiled), with why.
// It is the one rule by which the matrix and `run --scenario` judge a run
// against its expectation. faulty says whether the run had faults.
func (e Expectation) Assess(res checker.Result, faulty bool) (Status, string) {
	if res.Verdict == checker.Inconclusive {
		return StatusInconclusive, res.Summary
	}
	met, spoiled, why := e.Judge(res, faulty)
	switch {
	case met:
		return StatusMatch, ""
	case spoiled:
		return StatusInconclusive, why
	}
	return StatusMismatch, why
}

// Judge says whether res is evidence for e, and if not, why: met is true
// when it shows what e expects, for the right reason; spoiled, when it is
// no evidence either way — its faults never landed, or what broke was a
// stall of the harness rather than the fault or the lock — so the run says
// nothing about the lock, and may be run again. faulty says whether the run
// had faults.
//
//   - A violation expected of a fault must come from an overlap that a
//     landed fault caused; of a run without faults, from the lock itself
//     (an overlap with neither fault nor stall behind it, or damage to the
//     resource).
//   - A safe verdict counts only when some fault landed (or there were
//     none to land).
//   - A violation where safe was expected is a mismatch, unless every
//     overlap in it was a stall of the harness. A violation whose every
//     overlap came from a fault the machine overdid (a starved client held
//     off the CPU beyond the fault) is no evidence either way.
//   - A key expected to get stuck that nobody held from a fault to the
//     end of a run too short to call it stuck is no evidence
//     (LivenessResult.Unfinished), when all else was as expected.
//   - Liveness judged (available or stuck expected) with no key stuck,
//     where a span would have been stuck but for the time measured stalls
//     of the harness cover (LivenessResult.Stalled), is no evidence either
//     way, when all else was as expected: the machine, not the lock, may
//     have kept the key. A key stuck beyond what the stalls cover stays
//     stuck.
//   - Safe where a violation was expected is a mismatch when the faults
//     landed and the leases they hit survived; when a lease was lost and
//     only no second client came for it in time, or only faults aimed at
//     no lease landed, the run is no evidence.
//   - A resource expected fenced or damaged that stayed intact, when all
//     else was as expected, is no evidence: no operation of a holder whose
//     lease had passed came after another holder's (the stale holder did
//     not write in the other's time, or nobody else wrote), so neither the
//     fence nor its absence was put to the test.
func (e Expectation) Judge(res checker.Result, faulty bool) (met, spoiled bool, why string) {
	ev := res.Evidence
	overlaps := res.Mutex.OverlapCount
	stallOnly := res.StallOnly()
	stallWhy := ""
	if stallOnly && len(res.Mutex.Overlaps) > 0 && res.Mutex.Overlaps[0].Stall != nil {
		stallWhy = ": " + res.Mutex.Overlaps[0].Stall.Text
	}
	// unlanded says why a fault did not land, in the words of the first
	// that did not.
	unlanded := func() string {
		for _, f := range res.Faults {
			if !f.Landed && f.Effect != "" {
				return " (" + f.Effect + ")"
			}
		}
		return ""
	}
	noneLanded := func() string {
		if ev.Faults == 0 {
			return "no fault was injected: no step's target came in time"
		}
		return fmt.Sprintf("none of the %d faults landed%s", ev.Faults, unlanded())
	}
	switch res.Verdict {
	case checker.Violation:
		if stallOnly {
			return false, true, "every overlap came from a stall of the harness" + stallWhy + ", not from a fault or the lock"
		}
		if why := res.Overdone(); why != "" {
			return false, true, "every overlap came from a fault the machine overdid (" + why + "), not from the fault as asked"
		}
		if e.Verdict == checker.Safe {
			break
		}
		switch {
		case faulty && ev.LandedFaultOverlaps == 0 && overlaps > 0 && ev.Landed == 0:
			return false, true, noneLanded() + ", and what overlapped was not their doing"
		case faulty && ev.LandedFaultOverlaps == 0 && overlaps > 0:
			return false, true, fmt.Sprintf("%d of %d faults landed but caused no overlap; the overlaps have other causes (%v)", ev.Landed, ev.Faults, ev.Overlaps)
		case faulty && overlaps == 0 && ev.Landed == 0:
			return false, true, noneLanded()
		case !faulty && overlaps > 0 && ev.Overlaps[checker.CauseNone] == 0:
			return false, true, "the overlaps came from stalls of the harness, not from the lock"
		}
	case checker.Safe:
		if faulty && ev.Landed == 0 {
			return false, true, noneLanded()
		}
		if e.Chance {
			break // safe meets it, once a fault landed
		}
		if why := res.RaceNotRun(); e.Verdict == checker.Violation && why != "" {
			return false, true, why
		}
		if e.Verdict == checker.Violation && faulty && ev.LeasesKept+ev.LeasesUnknown == 0 {
			// Only faults that aim at no lease landed (a standing
			// partition): the one meant to take a lease away never did.
			return false, true, fmt.Sprintf("of the %d faults only ones aimed at no lease landed%s", ev.Faults, unlanded())
		}
	}
	if rest := e; e.Liveness == LivenessStuck && len(res.Liveness.Stuck) == 0 && len(res.Liveness.Unfinished) > 0 {
		// The key may yet have got stuck: no evidence either way, when
		// all else was as expected.
		rest.Liveness = ""
		if ok, _ := rest.Met(res); ok {
			return false, true, "the run ended too soon after its fault to tell whether a key got stuck (" + checker.UnfinishedSentence(res.Liveness) + ")"
		}
	}
	if rest := e; e.Liveness != "" && len(res.Liveness.Stuck) == 0 && len(res.Liveness.Stalled) > 0 {
		rest.Liveness = ""
		if ok, _ := rest.Met(res); ok {
			return false, true, "liveness is " + checker.StalledSentence(res.Liveness)
		}
	}
	if rest := e; (e.Resource == checker.ResourceFenced || e.Resource == checker.ResourceDamaged) && res.Resource.State == checker.ResourceIntact {
		rest.Resource = ""
		if ok, _ := rest.Met(res); ok {
			return false, true, fmt.Sprintf("the resource stayed intact, expected %s: no stale holder's operation came after another holder's, so the fence was not put to the test (%s)", e.Resource, res.Resource.Summary)
		}
	}
	ok, diffs := e.Met(res)
	if !ok && res.Verdict == checker.Safe && e.Verdict == checker.Violation && faulty {
		diffs = fmt.Sprintf("%s, although %d of %d faults landed", diffs, ev.Landed, ev.Faults)
	}
	return ok, false, diffs
}
