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
	// The holder releases after a second, well inside the 5 s wait: a
	// strategy that keeps retrying gets the lock then; one that does not
	// retry, or gives up after two retries 20 ms apart, has given up long
	// before — what they do, not how fast the machine is, tells them apart.
	for _, tc := range []struct {
		opts    map[string]string
		ok      bool
		atLeast time.Duration // how long a failing wait takes at least
	}{
		{opts: map[string]string{"retry": "linear", "backoff": "20ms"}, ok: true},
		{opts: map[string]string{"retry": "exponential", "min-backoff": "10ms", "backoff": "40ms"}, ok: true},
		{opts: map[string]string{"retry": "none"}},
		{opts: map[string]string{"retry": "linear", "backoff": "20ms", "limit": "2"}, atLeast: 40 * ms},
	} {
		t.Run(tc.opts["retry"]+"/limit="+tc.opts["limit"], func(t *testing.T) {
			rdb := node(t)
			a := newLock(t, "redislock", rdb, "a", 10*time.Second, tc.opts)
			b := newLock(t, "redislock", rdb, "bb", 10*time.Second, tc.opts)
			la, err := a.Acquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				time.Sleep(time.Second)
				a.Release(ctx, la)
			}()
			start := time.Now()
			_, err = b.(locks.Waiter).AcquireWait(ctx, "k", 5*time.Second)
			took := time.Since(start)
			if tc.ok {
				if err != nil || took < time.Second {
					t.Errorf("waiting for a lock freed after 1s: %v after %v", err, took)
				}
				return
			}
			if !errors.Is(err, locks.ErrNotAcquired) || took < tc.atLeast {
				t.Errorf("got %v after %v, want ErrNotAcquired after at least %v", err, took, tc.atLeast)
			}
		})
	}
}

func TestRedislockRefreshAndLoss(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	// A lease long beside a busy machine's stalls: each refresh comes a
	// quarter of it after the last, with three quarters to spare.
	ttl := time.Second
	a := newLock(t, "redislock", rdb, "a", ttl, nil)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		time.Sleep(ttl / 4)
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
