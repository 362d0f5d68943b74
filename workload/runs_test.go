package workload_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/runner/runtest"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// Runs start their workers by re-executing this test binary.
func TestMain(m *testing.M) { runtest.Main(m) }

const ms = time.Millisecond

// --renew keeps holds twice the TTL safe, for locks whose renewal moves a
// deadline (redlock, redsync) as for one that just extends a key.
func TestRenewKeepsLongHoldsSafe(t *testing.T) {
	for _, lock := range []string{"token-lua", "redlock", "redsync"} {
		t.Run(lock, func(t *testing.T) {
			// Redlock's and redsync's node timeout is 5% of the TTL: 25 ms
			// here, which a busy machine still meets (10 ms did not, always).
			c := settings.Run{
				Lock:     lock,
				Duration: 3 * time.Second,
				Seed:     5,
				Out:      t.TempDir(),
				Workload: workload.Workload{Clients: 3, Keys: 1, TTL: 500 * ms, Hold: 1000 * ms, Think: 10 * ms, Renew: true},
			}
			res, events := runtest.Run(t, c)
			if res.Verdict != checker.Safe || res.Release.NotHeld != 0 || res.Resource.Holds != res.Mutex.Holds {
				t.Fatalf("%s: %s; releases %+v; %d writes for %d holds", res.Verdict, res.Summary, res.Release, res.Resource.Holds, res.Mutex.Holds)
			}
			for _, e := range events {
				if e.Kind == history.Lost {
					t.Errorf("a lease was lost without a fault: %+v", e)
				}
				if e.Kind == history.RunStart && !e.Run.Renew {
					t.Error("the run-start does not record --renew")
				}
			}
		})
	}
}

func TestRenewAndReentryNeedALockThatCan(t *testing.T) {
	for _, tc := range []struct {
		lock    string
		renew   bool
		reentry float64
		want    string
	}{
		{"set-nx-px", true, 0, "--renew true: lock set-nx-px cannot renew"},
		{"reentrant-watchdog", true, 0, "renews it by itself"},
		{"token-lua", false, 0.5, "--reentry 0.5: lock token-lua is not reentrant"},
		{"reentrant-watchdog", false, 1.5, "--reentry 1.5: want a probability"},
	} {
		err := runner.Validate(settings.Run{
			Lock:     tc.lock,
			Duration: time.Second,
			Out:      "x",
			Workload: workload.Workload{Renew: tc.renew, Reentry: tc.reentry, Clients: 1, Keys: 1, TTL: time.Second},
		})
		var ue settings.UsageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s renew=%v reentry=%v: %v, want a usage error containing %q", tc.lock, tc.renew, tc.reentry, err, tc.want)
		}
	}
	if err := runner.Validate(settings.Run{Lock: "redlock", Duration: time.Second, Out: "x", Workload: workload.Workload{Renew: true, Clients: 1, Keys: 1, TTL: time.Second}}); err != nil {
		t.Errorf("redlock --renew: %v", err)
	}
}
