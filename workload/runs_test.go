package workload_test

import (
	"errors"
	"fmt"
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
// deadline (redlock, redsync) as for one that just extends a key. Every run
// must be safe; a run in which a renewal failed all the same (the lease
// lost, a hold ended without its write: beside 8 CPU hogs one of redlock's
// renewals found 0 of 5 nodes answering within its 25 ms) is the machine's
// doing and is run again, up to three times; a lease lost in every run is
// the lock's.
func TestRenewKeepsLongHoldsSafe(t *testing.T) {
	for _, lock := range []string{"token-lua", "redlock", "redsync"} {
		t.Run(lock, func(t *testing.T) {
			// Redlock's and redsync's node timeout is 5% of the TTL: 25 ms
			// here, which a busy machine still meets (10 ms did not, always).
			c := settings.Run{
				Lock:     lock,
				Duration: 3 * time.Second,
				Seed:     5,
				Workload: workload.Workload{Clients: 3, Keys: 1, TTL: 500 * ms, Hold: 1000 * ms, Think: 10 * ms, Renew: true},
			}
			for try := 1; ; try++ {
				c.Out = t.TempDir()
				res, events := runtest.Run(t, c)
				if res.Verdict != checker.Safe || res.Release.NotHeld != 0 {
					t.Fatalf("%s: %s; releases %+v", res.Verdict, res.Summary, res.Release)
				}
				var lost []string
				for _, e := range events {
					if e.Kind == history.Lost {
						lost = append(lost, fmt.Sprintf("client %d at %s: %s", e.Client, e.Key, e.Error))
					}
					if e.Kind == history.RunStart && !e.Run.Renew {
						t.Fatal("the run-start does not record --renew")
					}
				}
				if len(lost) == 0 && res.Resource.Holds == res.Mutex.Holds {
					return
				}
				why := fmt.Sprintf("%d writes for %d holds; leases lost without a fault: %s", res.Resource.Holds, res.Mutex.Holds, strings.Join(lost, "; "))
				if try == 3 {
					t.Fatalf("in three runs a renewal failed without a fault: %s", why)
				}
				t.Logf("run %d: a renewal failed without a fault (a stall of the machine?): %s; running it again", try, why)
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
