package nemesis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

// cancelRelease runs lock under cancel-client, once, and returns the result
// once the fault landed.
func cancelRelease(t *testing.T, lock string, opts ...string) checker.Result {
	t.Helper()
	c := runtest.FaultConfig(t, lock, []string{"cancel-client"}, append(opts, "cancel-client.schedule=at=500ms")...)
	c.Clients, c.Duration = 3, 4*time.Second
	res, _ := runtest.RunFaults(t, &c)
	runtest.Landed(t, res, "")
	return res
}

// A release cancelled before its call runs leaves the lease on the node; a
// lock that keeps its state straight through the cancel frees the key at
// its caller's second release: a Go lock's cancelled context, and
// redis-py's asyncio Lock since 7.2.0 (redis-py#3847's fix).
func TestACancelledReleaseIsReleasedAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ lock string }{{"token-lua"}, {"redis-py-asyncio-lock"}} {
		t.Run(tc.lock, func(t *testing.T) {
			opts := []string{}
			if tc.lock != "token-lua" {
				opts = append(opts, tc.lock+".expiry=none")
			}
			res := cancelRelease(t, tc.lock, opts...)
			runtest.Verdict(t, res, checker.Safe)
			if len(res.Liveness.DeadlockedKeys) > 0 {
				t.Errorf("a key is deadlocked: %v", res.Liveness.DeadlockedKeys)
			}
			if e := res.Faults[0].Effect; !strings.Contains(e, "its release after it released the key") {
				t.Errorf("the effect does not say the second release freed the key: %s", e)
			}
		})
	}
}

// redis-py's asyncio Lock up to 7.1.1 clears its token before its release
// runs: cancelled then, it leaves the key held while it says it holds
// nothing (its caller's second release is refused), and a Lock without
// expiry keeps the key for good — redis-py#3847, by construction.
func TestACancelledReleaseOfRedisPy711Deadlocks(t *testing.T) {
	t.Parallel()
	res := cancelRelease(t, "redis-py-asyncio-lock-7.1.1", "redis-py-asyncio-lock-7.1.1.expiry=none")
	runtest.Verdict(t, res, checker.Safe)
	if len(res.Liveness.DeadlockedKeys) == 0 {
		t.Errorf("no key deadlocked: %+v", res.Liveness)
	}
	if e := res.Faults[0].Effect; !strings.Contains(e, "the lock forgot it held the key") {
		t.Errorf("the effect does not say the lock forgot its key: %s", e)
	}
}

// A lock whose adapter does not say it cancels a call is no target.
func TestCancelNeedsALockThatCancels(t *testing.T) {
	t.Parallel()
	cancels := topoRun
	cancels.Cancels = true
	applies(t, []appliesCase{
		{"cancel-client", nil, topoRun, "does not say it cancels one"},
		{"cancel-client", nil, cancels, ""},
	})
}

// An acquire cancelled while it waits behind another client's hold, its
// language's way — Redisson's tryLock interrupted (Java), redis-semaphore's
// acquire aborted through its AbortSignal (Node), a Go lock's context —
// comes back cancelled, and leaves nothing held: no key stuck, and no two
// holders. Redisson's answer names its thread's lease, and the careful
// caller's unlock() after it is answered.
func TestACancelledWaitingAcquireLeavesNothingHeld(t *testing.T) {
	t.Parallel()
	for _, lock := range []string{"redisson-rlock", "redis-semaphore-mutex", "token-lua"} {
		t.Run(lock, func(t *testing.T) {
			// Several faults: an acquire that found the key free is
			// answered before the cancel, and that one did not land.
			c := runtest.FaultConfig(t, lock, []string{"cancel-client"}, "cancel-client.op=acquire", "cancel-client.after=0.1ttl", "cancel-client.schedule=at=500ms,1500ms,2500ms")
			c.Clients, c.Duration = 3, 4*time.Second
			c.Wait = 5 * c.TTL
			res, _ := runtest.RunFaults(t, &c)
			runtest.Landed(t, res, "")
			runtest.Verdict(t, res, checker.Safe)
			if len(res.Liveness.DeadlockedKeys) > 0 {
				t.Errorf("a key is deadlocked: %v", res.Liveness.DeadlockedKeys)
			}
			var e string
			for _, f := range res.Faults {
				if f.Landed {
					e = f.Effect
					break
				}
			}
			if !strings.Contains(e, "came back cancelled") {
				t.Errorf("the effect does not say the acquire came back cancelled: %s", e)
			}
			if lock == "redisson-rlock" && !strings.Contains(e, "the release of what it may have taken ended") {
				t.Errorf("no release followed Redisson's cancelled acquire, whose answer names its lease: %s", e)
			}
		})
	}
}
