package locks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
)

func TestRedsyncMapsItsErrors(t *testing.T) {
	ctx := context.Background()
	ttl := 500 * ms // a few round trips inside each lease, on a busy machine too
	rdbs := nodes(t, 3)
	a := newLockOn(t, "redsync", rdbs, "a", ttl, nil)
	b := newLockOn(t, "redsync", rdbs, "bb", ttl, nil)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Duration(la.Deadline - history.Now()); left <= 0 || left > ttl {
		t.Errorf("deadline %v ahead, want within the %v expiry (redsync's Until)", left, ttl)
	}
	if _, err := b.Acquire(ctx, "k"); !errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("b's acquire of a held lock: %v, want ErrNotAcquired (ErrTaken)", err)
	}
	renewed, err := a.(locks.Renewer).Renew(ctx, la)
	if err != nil || renewed.Deadline <= la.Deadline {
		t.Errorf("extend: %v; deadline moved by %v", err, time.Duration(renewed.Deadline-la.Deadline))
	}
	time.Sleep(ttl + 30*ms)
	if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("release after expiry: %v, want ErrNotHeld (ErrLockAlreadyExpired)", err)
	}
	lb, err := b.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.(locks.Renewer).Renew(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a's extend of b's lock: %v, want ErrNotHeld", err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a's release of b's lock: %v, want ErrNotHeld (ErrTaken)", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Errorf("b's release: %v", err)
	}
	// A majority of nodes that do not answer: the outcome is unknown.
	c := newLockOn(t, "redsync", append(rdbs[:1:1], deadNode(t), deadNode(t)), "c", ttl, nil)
	if _, err := c.Acquire(ctx, "k"); err == nil || errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("acquire with two of three nodes dead: %v, want an unknown outcome (RedisError)", err)
	}
}

// WithSetNXOnExtend re-creates an expired lock on extend. The extend then
// succeeds although another client held the lock in between: the owner is
// told it held the lock all along.
func TestRedsyncSetNXOnExtendHidesThatSomeoneElseHeldTheLock(t *testing.T) {
	ctx := context.Background()
	// A lease a busy machine's round trips to three nodes fit in: redsync
	// refuses a grant whose acquire took longer than the lease (its
	// validity check), and this test is not about that.
	ttl := time.Second
	for _, tc := range []struct {
		setNX string
		want  error
	}{{"false", locks.ErrNotHeld}, {"true", nil}} {
		t.Run("setnx-on-extend="+tc.setNX, func(t *testing.T) {
			rdbs := nodes(t, 3)
			opts := map[string]string{"setnx-on-extend": tc.setNX}
			a := newLockOn(t, "redsync", rdbs, "a", ttl, opts)
			b := newLockOn(t, "redsync", rdbs, "bb", ttl, opts)
			la, err := a.Acquire(ctx, "k")
			for try := 1; errors.Is(err, locks.ErrNotAcquired) && try < 3; try++ {
				// The key is free: only a stall past the lease refuses it.
				// No evidence either way; ask again.
				t.Logf("a's acquire of a free key: %v (a stall past its lease): again", err)
				la, err = a.Acquire(ctx, "k")
			}
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(ttl + 100*ms) // a's lease runs out (a GC pause, say)
			lb, err := b.Acquire(ctx, "k")
			for try := 1; errors.Is(err, locks.ErrNotAcquired) && try < 3; try++ {
				t.Logf("b's acquire of the expired key: %v (a stall past its lease): again", err)
				lb, err = b.Acquire(ctx, "k")
			}
			if err != nil {
				t.Fatalf("b could not take the expired lock: %v", err)
			}
			if err := b.Release(ctx, lb); err != nil {
				t.Fatal(err)
			}
			_, err = a.(locks.Renewer).Renew(ctx, la)
			if !errors.Is(err, tc.want) {
				t.Fatalf("a's extend after b held the lock: %v, want %v", err, tc.want)
			}
			if tc.want == nil && rdbs[0].Get(ctx, "k").Val() != la.Token {
				t.Error("the extend succeeded but the key is not a's")
			}
		})
	}
}

func TestRedsyncWaiterUsesItsRetries(t *testing.T) {
	ctx := context.Background()
	rdbs := nodes(t, 3)
	opts := map[string]string{"retry-delay": "20ms"}
	a := newLockOn(t, "redsync", rdbs, "a", time.Second, opts)
	b := newLockOn(t, "redsync", rdbs, "bb", time.Second, opts)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(150 * ms)
		a.Release(ctx, la)
	}()
	start := time.Now()
	if _, err := b.(locks.Waiter).AcquireWait(ctx, "k", 5*time.Second); err != nil {
		t.Fatalf("waiting for a lock released after 150ms: %v", err)
	}
	if d := time.Since(start); d < 150*ms {
		t.Errorf("got the lock after %v, before its 150ms release", d)
	}
	if _, err := a.(locks.Waiter).AcquireWait(ctx, "k", 150*ms); !errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("waiting on a held lock: %v, want ErrNotAcquired", err)
	}
}

func TestRedsyncWithoutFaultsIsSafe(t *testing.T) {
	res, _ := run(t, runCfg(t, "redsync"))
	wantVerdict(t, res, checker.Safe)
}

func TestRedsyncPausedClientViolates(t *testing.T) {
	res, _ := run(t, runCfg(t, "redsync", "pause-client"))
	wantVerdict(t, res, checker.Violation)
}
