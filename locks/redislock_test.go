package locks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/locks"
)

// A blocking acquire follows the configured redislock retry strategy.
func TestRedislockRetryStrategies(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		opts    map[string]string
		ok      bool
		atLeast time.Duration // how long a failing wait takes
		atMost  time.Duration
	}{
		{opts: map[string]string{"retry": "linear", "backoff": "20ms"}, ok: true},
		{opts: map[string]string{"retry": "exponential", "min-backoff": "10ms", "backoff": "40ms"}, ok: true},
		{opts: map[string]string{"retry": "none"}, atMost: 50 * ms},
		{opts: map[string]string{"retry": "linear", "backoff": "20ms", "limit": "2"}, atLeast: 40 * ms, atMost: 100 * ms},
	} {
		t.Run(tc.opts["retry"]+"/limit="+tc.opts["limit"], func(t *testing.T) {
			rdb := node(t)
			a := newLock(t, "redislock", rdb, "a", time.Second, tc.opts)
			b := newLock(t, "redislock", rdb, "bb", time.Second, tc.opts)
			la, err := a.Acquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				time.Sleep(150 * ms)
				a.Release(ctx, la)
			}()
			start := time.Now()
			_, err = b.(locks.Waiter).AcquireWait(ctx, "k", 500*ms)
			took := time.Since(start)
			if tc.ok {
				if err != nil || took < 150*ms || took > 300*ms {
					t.Errorf("waiting for a lock freed after 150ms: %v after %v", err, took)
				}
				return
			}
			if !errors.Is(err, locks.ErrNotAcquired) || took < tc.atLeast || took > tc.atMost {
				t.Errorf("got %v after %v, want ErrNotAcquired after %v to %v", err, took, tc.atLeast, tc.atMost)
			}
		})
	}
}

func TestRedislockRefreshAndLoss(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	ttl := 100 * ms
	a := newLock(t, "redislock", rdb, "a", ttl, nil)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		time.Sleep(ttl / 2)
		if _, err := a.(locks.Renewer).Renew(ctx, la); err != nil {
			t.Fatalf("refresh %d: %v", i, err)
		}
	}
	time.Sleep(ttl + 20*ms)
	if _, err := a.(locks.Renewer).Renew(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("refresh of an expired lock: %v, want ErrNotHeld", err)
	}
}

func TestRedislockWithoutFaultsIsSafe(t *testing.T) {
	c := runCfg(t, "redislock")
	c.Wait = time.Second // through the library's own retries
	res, _ := run(t, c)
	wantVerdict(t, res, checker.Safe)
	if res.Acquire.Failed*10 > res.Acquire.OK {
		t.Errorf("blocking acquires mostly failed: %+v", res.Acquire)
	}
}

func TestRedislockPausedClientViolates(t *testing.T) {
	res, _ := run(t, runCfg(t, "redislock", "pause-client"))
	wantVerdict(t, res, checker.Violation)
}
