package nemesis_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/checker"
)

func TestBadBandwidthOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"bandwidth", "rate", "0", "bandwidth: rate=0: want a whole number of KB/s, at least 1"},
		{"bandwidth", "rate", "fast", "option bandwidth.rate"},
	})
}

// A bandwidth limit on every link, with holds far below the TTL: the
// clients feel it (an acquire takes over 20 ms), it heals, and a token lock
// stays safe.
func TestBandwidthHealsAndStaysSafe(t *testing.T) {
	t.Parallel()
	healsAndStaysSafe(t, "bandwidth", nil, func(r checker.Result) bool { return r.Acquire.Maxms > 20 })
}
