package nemesis_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestBadPauseClientOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"pause-client", "phase", "later", "want hold, acquire or wait"},
	})
}

// A pause of a waiter needs a run whose acquires wait; the other phases
// apply to every run.
func TestPauseOfAWaiterNeedsABlockingAcquire(t *testing.T) {
	t.Parallel()
	waiting := topoRun
	waiting.Wait = time.Second
	applies(t, []appliesCase{
		{"pause-client", nil, topoRun, ""},
		{"pause-client", map[string]string{"phase": "acquire"}, topoRun, ""},
		{"pause-client", map[string]string{"phase": "wait"}, topoRun, "pause-client with phase=wait waits for a client blocked in a blocking acquire, and this run's acquires try once: give --wait"},
		{"pause-client", map[string]string{"phase": "wait"}, waiting, ""},
		{"latency", map[string]string{"when": "wait"}, topoRun, "a link fault with when=wait waits for a client blocked"},
		{"latency", map[string]string{"when": "wait"}, waiting, ""},
	})
}

// Kleppmann's pause during the acquire: the server grants the lock, the OK
// waits in the paused client's socket buffer, and the client acts on it
// long after the lease expired. It needs a client whose own deadline
// outlasts the pause (--op-timeout 3s here).
func TestPauseDuringAcquireActsOnAStaleGrant(t *testing.T) {
	t.Parallel()
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

// A pause during an acquire that no server granted tests nothing of a
// stale OK, however long it lasts: the fault does not land (it used to on
// its length alone). The lock's acquire here grants nothing: it answers 0
// and writes no key.
func TestPauseDuringAnAcquireNobodyGrantedDoesNotLand(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "never.lua")
	if err := os.WriteFile(script, []byte("-- @acquire\nreturn 0\n-- @release\nreturn 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := runtest.FaultConfig(t, "lua", []string{"pause-client"}, "pause-client.phase=acquire", "lua.file="+script)
	c.OpTimeout, c.Think, c.Duration = 3*time.Second, 50*ms, 4*time.Second
	// One run: nobody holds a lock in it, and no fault lands, by design
	// (runtest.RunEvidence would take that for no evidence).
	res, err := runner.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Faults) == 0 {
		t.Fatalf("no fault was recorded: %s", res.Summary)
	}
	for _, f := range res.Faults {
		if f.Landed {
			t.Errorf("fault %d landed with no grant to act on: %s", f.ID, f.Effect)
		}
	}
}

// A watchdog that keeps renewing survives a critical section that outlives
// the TTL (TestSlowHoldBreaksLeasesButNotWatchdogs), but a pause freezes
// the watchdog too, and the lease is lost.
func TestPausesBreakWatchdogs(t *testing.T) {
	t.Parallel()
	faultGives(t, "reentrant-watchdog", "pause-client", checker.Violation, history.LeaseLost)
}

// Fencing tokens protect the resource from a paused client: the holds
// overlap, the stale writes are rejected.
func TestFencedResourceSurvivesPauses(t *testing.T) {
	t.Parallel()
	fencedResourceSurvives(t, "pause-client")
}

// A waiter paused past its session (phase=wait) tells a blocking acquire
// that re-checks its session after waiting (etcd's Mutex.Lock since the
// fix of etcd#11456) from one that does not: the holder lets go while the
// waiter sleeps, and the waiter wakes either refused or holding a lock its
// expired session no longer has (etcd-mutex-unchecked, and etcd's own
// Election.Campaign).
func TestPauseOfAWaiterSeparatesALockThatRechecksItsSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lock string
		want checker.Verdict
	}{
		{"etcd-mutex", checker.Safe},
		{"etcd-mutex-unchecked", checker.Violation},
		{"etcd-election", checker.Violation}, // Campaign never got the check (etcd#19597)
	} {
		t.Run(tc.lock, func(t *testing.T) {
			c := runtest.FaultConfig(t, tc.lock, []string{"pause-client"}, "pause-client.phase=wait")
			c.TTL, c.Hold, c.Wait, c.Duration = time.Second, 200*ms, 5*time.Second, 8*time.Second
			res, _ := runtest.RunFaults(t, &c)
			runtest.Verdict(t, res, tc.want)
			if res.Evidence.Landed == 0 || res.Faults[0].Params["phase"] != "wait" {
				t.Errorf("no pause of a waiter landed: %+v", res.Faults)
			}
		})
	}
}
