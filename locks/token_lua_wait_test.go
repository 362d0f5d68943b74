package locks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/locks"
)

// On a node without replicas, asking for one acknowledgement fails every
// acquire after WAIT's timeout, and deletes the key it had set.
func TestTokenLuaWaitFailsWithoutTheReplicasItAsksFor(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	for _, tc := range []struct {
		replicas string
		ok       bool
	}{{"0", true}, {"1", false}} {
		t.Run("numreplicas="+tc.replicas, func(t *testing.T) {
			// WAIT 0 answers at once; WAIT 1 with no replica waits out its
			// timeout: 5 s for the first, so that answering at once cannot
			// be mistaken for a busy machine's delay; 100 ms for the second.
			timeout := map[string]string{"0": "5s", "1": "100ms"}[tc.replicas]
			l := newLock(t, "token-lua-wait", rdb, "a", 10*time.Second, map[string]string{"numreplicas": tc.replicas, "timeout": timeout})
			start := time.Now()
			lease, err := l.Acquire(ctx, "k")
			took := time.Since(start)
			if tc.ok {
				if err != nil {
					t.Fatalf("acquire: %v", err)
				}
				if took > 2500*ms {
					t.Errorf("WAIT 0 took %v; it should answer at once, not after its 5 s timeout", took)
				}
				if err := l.Release(ctx, lease); err != nil {
					t.Errorf("release: %v", err)
				}
				return
			}
			if !errors.Is(err, locks.ErrNotAcquired) || !strings.Contains(err.Error(), "0 of 1 replicas") {
				t.Fatalf("acquire: %v, want ErrNotAcquired for 0 of 1 replicas", err)
			}
			if took < 100*ms {
				t.Errorf("the acquire failed after %v, before WAIT's 100ms timeout", took)
			}
			if n := rdb.Exists(ctx, "k").Val(); n != 0 {
				t.Error("the failed acquire left its key behind")
			}
		})
	}
}

// With ignore-acks, as Redisson's RLock before 3.16.7, the acquire succeeds
// although no replica acknowledged it, and the key stays.
func TestTokenLuaWaitIgnoreAcksTakesTheLockUnacknowledged(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	l := newLock(t, "token-lua-wait", rdb, "a", 10*time.Second, map[string]string{"numreplicas": "1", "timeout": "100ms", "ignore-acks": "true"})
	start := time.Now()
	lease, err := l.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire with no replica to acknowledge it: %v, want the lock anyway", err)
	}
	if took := time.Since(start); took < 100*ms {
		t.Errorf("the acquire answered after %v: it did not WAIT its 100ms for the replica", took)
	}
	if v := rdb.Get(ctx, "k").Val(); v != lease.Token {
		t.Errorf("key holds %q, want the lease's token", v)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Errorf("release unacknowledged by any replica: %v, want it ignored too", err)
	}
}

func TestTokenLuaWaitWithoutFaultsIsSafe(t *testing.T) {
	res, _ := run(t, runCfg(t, "token-lua-wait"))
	wantVerdict(t, res, checker.Safe)
}

// WAIT makes the write known to replicas; it does nothing for a client
// frozen past its lease.
func TestTokenLuaWaitPausedClientViolates(t *testing.T) {
	res, _ := run(t, runCfg(t, "token-lua-wait", "pause-client"))
	wantVerdict(t, res, checker.Violation)
	if res.Release.NotHeld == 0 {
		t.Errorf("the paused client's release should find its lease gone; release stats %+v", res.Release)
	}
}
