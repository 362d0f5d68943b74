package checker

import (
	"fmt"
	"strings"
)

// resourceSummary says what happened to the resource; rejectedReads is how
// many of r.StaleRejected were reads.
func resourceSummary(r ResourceResult, rejectedReads int, incomplete bool) string {
	var bad []string
	if r.LostUpdates > 0 {
		bad = append(bad, plural(r.LostUpdates, "increment was", "increments were")+" lost: overlapping holds overwrote each other's writes")
	}
	if r.StaleReads > 0 {
		bad = append(bad, plural(r.StaleReads, "read", "reads")+" returned a value older than an acknowledged write")
	}
	if r.StaleAccepted > 0 {
		bad = append(bad, plural(r.StaleAccepted, "stale fenced operation was", "stale fenced operations were")+" accepted after a higher token")
	}
	if r.FenceReused > 0 {
		bad = append(bad, plural(r.FenceReused, "fenced operation", "fenced operations")+" carried a token another client had already used: the fencing token was issued twice")
	}
	if incomplete {
		bad = append(bad, "the final counter was not read for every written key")
	}
	if len(bad) > 0 {
		return strings.Join(bad, "; ")
	}
	switch {
	case r.Holds == 0 && r.StaleRejected == 0:
		return "the resource was never written"
	case r.StaleRejected > 0:
		return fmt.Sprintf("the resource stayed correct thanks to fencing: it rejected %s (%s, %s) and accepted none, so no update was lost",
			plural(r.StaleRejected, "operation with a stale fencing token", "operations with stale fencing tokens"),
			plural(rejectedReads, "read", "reads"), plural(r.StaleRejected-rejectedReads, "write", "writes"))
	}
	return fmt.Sprintf("the resource stayed correct: %s, none lost", plural(r.Holds, "accepted write", "accepted writes"))
}

// plural renders n with the singular or plural noun phrase.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
