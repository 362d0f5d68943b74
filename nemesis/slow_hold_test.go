package nemesis_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

func TestBadSlowHoldOptionsAreRefused(t *testing.T) {
	refused(t, []badOption{
		{"slow-hold", "by", "1e300ttl", "too long"},
	})
}

func TestSlowHoldAppliesToEveryRun(t *testing.T) { appliesToEveryRun(t, "slow-hold") }

// A critical section that outlives the TTL with no fault at all breaks a
// plain lease; a watchdog that keeps renewing, in a process that keeps
// running, survives it. (A pause freezes the watchdog too:
// TestPausesBreakWatchdogs.)
func TestSlowHoldBreaksLeasesButNotWatchdogs(t *testing.T) {
	for _, tc := range []struct {
		lock  string
		want  checker.Verdict
		lease string
	}{
		{"token-lua", checker.Violation, history.LeaseLost},
		{"reentrant-watchdog", checker.Safe, history.LeaseKept},
	} {
		t.Run(tc.lock+"+slow-hold", func(t *testing.T) {
			faultGives(t, tc.lock, "slow-hold", tc.want, tc.lease)
		})
	}
}
