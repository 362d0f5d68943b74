package nemesis_test

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
)

func TestBadSlowHoldOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"slow-hold", "by", "1e300ttl", "too long"},
	})
}

// slow-hold makes a lease run out under its holder: it applies to every
// lock with a lease, and refuses one without, saying why.
func TestSlowHoldAppliesToEveryLockWithALease(t *testing.T) {
	t.Parallel()
	a, ok := nemesis.MustBuild(t, "slow-hold", nil).(nemesis.Applier)
	if !ok {
		t.Fatal("slow-hold is not an Applier")
	}
	if err := a.Applies(nemesis.Topology{Lock: "etcd-mutex", Store: "etcd", KeepsAlive: true, LockNodes: 3}); err != nil {
		t.Errorf("etcd-mutex: %v", err)
	}
	err := a.Applies(nemesis.Topology{Lock: "pg-advisory", Store: "postgres", Leaseless: true, LockNodes: 1})
	if err == nil || !strings.Contains(err.Error(), "lock pg-advisory has no lease") {
		t.Errorf("pg-advisory: %v; want it refused for having no lease", err)
	}
}

// A critical section that outlives the TTL with no fault at all breaks a
// plain lease; a watchdog that keeps renewing, in a process that keeps
// running, survives it. (A pause freezes the watchdog too:
// TestPausesBreakWatchdogs.)
func TestSlowHoldBreaksLeasesButNotWatchdogs(t *testing.T) {
	t.Parallel()
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
