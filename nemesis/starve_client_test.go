package nemesis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestBadStarveClientOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"starve-client", "off", "0s", "must both be more than 0"},
		{"starve-client", "on", "0s", "must both be more than 0"},
	})
}

// starve runs lock under starve-client with the stop length off (a share
// of the TTL, "0.3ttl") and wants the verdict; the fault must land, and
// with a violation lose its lease.
func starve(t *testing.T, lock, off string, want checker.Verdict) checker.Result {
	t.Helper()
	c := runtest.FaultConfig(t, lock, []string{"starve-client"}, "starve-client.off="+off)
	// A TTL of a second leaves a renewing lock's margin (two thirds of it
	// less the stop) wide of a loaded machine's stalls.
	c.TTL, c.Hold, c.Think, c.Duration = time.Second, 100*ms, 20*ms, 8*time.Second
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, want)
	lease := history.LeaseLost
	if want == checker.Safe {
		lease = ""
	}
	runtest.Landed(t, res, lease)
	for _, f := range res.Faults {
		if f.Landed && !strings.Contains(f.Effect, "starved") {
			t.Errorf("fault %d's effect does not say the client was starved: %s", f.ID, f.Effect)
		}
	}
	return res
}

// A client starved in its critical section lets go late: a lease its work
// must fit in runs out first, by construction (a stop begins as its own
// deadline lets it go), and another client takes the key while it still
// holds it. A lock that renews its lease every third of it survives short
// stops: a renewal due during a stop runs when the client runs again, and
// its reply may wait for the next run, so a renewal comes at most two
// stops and a third of the lease after the last — within the lease for
// stops of a quarter of it. The difference between starved and stopped
// (pause-client breaks both).
func TestStarvationBreaksALeaseButNotARenewedOne(t *testing.T) {
	t.Parallel()
	t.Run("token-lua", func(t *testing.T) {
		res := starve(t, "token-lua", "0.5ttl", checker.Violation)
		if o := res.Mutex.Overlaps[0]; len(o.Faults) == 0 {
			t.Errorf("the first overlap is not the starvation's: %+v", o)
		}
	})
	t.Run("reentrant-watchdog", func(t *testing.T) {
		starve(t, "reentrant-watchdog", "0.25ttl", checker.Safe)
	})
}

// A stop longer than the lease starves the watchdog past the lease's end
// (no renewal can run in it): Redisson's watchdog on a loaded host
// (redisson#5698, renewals missing for more than the watchdog timeout),
// the lock released under its holder.
func TestAStopLongerThanTheLeaseStarvesAWatchdog(t *testing.T) {
	t.Parallel()
	starve(t, "reentrant-watchdog", "1.5ttl", checker.Violation)
}
