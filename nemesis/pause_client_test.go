package nemesis_test

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestBadPauseClientOptionsAreRefused(t *testing.T) {
	refused(t, []badOption{
		{"pause-client", "phase", "later", "want hold or acquire"},
	})
}

func TestPauseClientAppliesToEveryRun(t *testing.T) { appliesToEveryRun(t, "pause-client") }

// Kleppmann's pause during the acquire: the server grants the lock, the OK
// waits in the paused client's socket buffer, and the client acts on it
// long after the lease expired. It needs a client whose own deadline
// outlasts the pause (--op-timeout 3s here).
func TestPauseDuringAcquireActsOnAStaleGrant(t *testing.T) {
	c := runtest.FaultConfig(t, "token-lua", []string{"pause-client"}, "pause-client.phase=acquire")
	c.OpTimeout, c.Think, c.Duration = 3*time.Second, 50*ms, 4*time.Second
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Violation)
	if res.Acquire.Maxms < float64(c.TTL/ms) {
		t.Errorf("no acquire returned after its lease could have expired (slowest %.0f ms)", res.Acquire.Maxms)
	}
	if len(res.Mutex.Overlaps[0].Faults) == 0 {
		t.Errorf("the overlap is not attributed to the pause: %+v", res.Mutex.Overlaps[0])
	}
	runtest.Landed(t, res, "")
}

// A watchdog that keeps renewing survives a critical section that outlives
// the TTL (TestSlowHoldBreaksLeasesButNotWatchdogs), but a pause freezes
// the watchdog too, and the lease is lost.
func TestPausesBreakWatchdogs(t *testing.T) {
	faultGives(t, "reentrant-watchdog", "pause-client", checker.Violation, history.LeaseLost)
}

// Fencing tokens protect the resource from a paused client: the holds
// overlap, the stale writes are rejected.
func TestFencedResourceSurvivesPauses(t *testing.T) {
	fencedResourceSurvives(t, "pause-client")
}
