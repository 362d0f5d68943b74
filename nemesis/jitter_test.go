package nemesis_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/checker"
)

// Jitter on every link, with holds far below the TTL: the clients feel it
// (an acquire takes over 30 ms), it heals, and a token lock stays safe.
func TestJitterHealsAndStaysSafe(t *testing.T) {
	t.Parallel()
	healsAndStaysSafe(t, "jitter", nil, func(r checker.Result) bool { return r.Acquire.Maxms > 30 })
}
