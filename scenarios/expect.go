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
	// Deadlock, when set, says whether a lock key must (true) or must not
	// (false) be left with no expiry; nil does not look.
	Deadlock *bool
	// Resource, when set, is what the protected resource must show:
	// ResourceIntact, ResourceFenced or ResourceDamaged.
	Resource string
}

// States of the protected resource that a scenario may expect.
const (
	// ResourceIntact: no lost update, no stale read, no stale fenced
	// operation accepted, and the final counters were read.
	ResourceIntact = "intact"
	// ResourceFenced: intact, and at least one operation with a stale
	// fencing token was rejected — fencing did the work.
	ResourceFenced = "fenced"
	// ResourceDamaged: an update was lost, a read was stale, or a stale
	// fenced operation was accepted.
	ResourceDamaged = "damaged"
)

// String says the expectation the way the tables show it, e.g. "safe",
// "safe+deadlock" or "violation, resource fenced".
func (e Expectation) String() string {
	s := string(e.Verdict)
	if s == "" {
		return ""
	}
	if e.Deadlock != nil {
		if *e.Deadlock {
			s += "+deadlock"
		} else {
			s += ", no deadlock"
		}
	}
	if e.Resource != "" {
		s += ", resource " + e.Resource
	}
	return s
}

// Outcome says what a run showed, in the terms of e: the verdict, +deadlock
// when a key was left without expiry, and the resource's state when e looks
// at it.
func (e Expectation) Outcome(res checker.Result) string {
	s := string(res.Verdict)
	if len(res.Liveness.DeadlockedKeys) > 0 {
		s += "+deadlock"
	}
	if e.Resource != "" {
		s += ", resource " + resourceState(res.Resource)
	}
	return s
}

// Met says whether res shows what e expects, and if not, what differs.
func (e Expectation) Met(res checker.Result) (bool, string) {
	var diffs []string
	if res.Verdict != e.Verdict {
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
	if e.Resource != "" {
		got := resourceState(res.Resource)
		ok := got == e.Resource || (e.Resource == ResourceIntact && got == ResourceFenced)
		if !ok {
			diffs = append(diffs, fmt.Sprintf("the resource was %s, expected %s", got, e.Resource))
		}
	}
	return len(diffs) == 0, strings.Join(diffs, "; ")
}

func resourceState(r checker.ResourceResult) string {
	switch {
	case r.LostUpdates > 0 || r.StaleReads > 0 || r.StaleAccepted > 0:
		return ResourceDamaged
	case !r.Safe:
		return "unknown"
	case r.StaleRejected > 0:
		return ResourceFenced
	}
	return ResourceIntact
}
