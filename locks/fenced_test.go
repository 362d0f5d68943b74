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

func TestFencedTokensIncreaseWithEveryGrant(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	ttl := 100 * ms
	a := newLock(t, "fenced", rdb, "a", ttl, nil)
	b := newLock(t, "fenced", rdb, "bb", ttl, nil)
	var fences []int64
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	fences = append(fences, la.Fence)
	if _, err := b.Acquire(ctx, "k"); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("b acquired a held lock: %v", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	fences = append(fences, lb.Fence)
	time.Sleep(ttl + 30*ms) // b's lease runs out under it
	la, err = a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	fences = append(fences, la.Fence)
	// A refused acquire issues no token: grants are numbered 1, 2, 3.
	if fences[0] != 1 || fences[1] != 2 || fences[2] != 3 {
		t.Errorf("fences %v, want [1 2 3]", fences)
	}
	if v := rdb.Get(ctx, locks.FenceCounterKey("k")).Val(); v != "3" {
		t.Errorf("fencing counter %q, want 3", v)
	}
	if pttl := rdb.PTTL(ctx, locks.FenceCounterKey("k")).Val(); pttl != -1 {
		t.Errorf("fencing counter PTTL %v, want none: tokens must keep increasing", pttl)
	}
}

func TestFencedWithoutFaultsIsSafe(t *testing.T) {
	res, events := run(t, runCfg(t, "fenced"))
	wantVerdict(t, res, checker.Safe)
	if res.Resource.StaleRejected != 0 {
		t.Errorf("%d stale fenced operations without a fault", res.Resource.StaleRejected)
	}
	fencedReads := count(events, func(e history.Event) bool { return e.F == history.Read && e.Kind == history.OK && e.Fence > 0 })
	if fencedReads != res.Mutex.Holds {
		t.Errorf("%d fenced reads for %d holds: every read must carry its token", fencedReads, res.Mutex.Holds)
	}
}

// The lock breaks as token-lua does; the resource does not: the paused
// client's late read or write carries an older token than one the resource
// has seen since, and is refused.
func TestFencedPausedClientBreaksTheLockButNotTheResource(t *testing.T) {
	res, _ := run(t, runCfg(t, "fenced", "pause-client"))
	wantVerdict(t, res, checker.Violation)
	r := res.Resource
	if r.StaleAccepted != 0 || r.LostUpdates != 0 || r.StaleReads != 0 || !r.Safe {
		t.Errorf("the resource took damage: %+v", r)
	}
	if r.StaleRejected == 0 {
		t.Errorf("no stale fenced operation was rejected: %+v", r)
	}
	if want := "the resource stayed correct thanks to fencing"; len(r.Summary) < len(want) || r.Summary[:len(want)] != want {
		t.Errorf("resource summary %q, want it to start with %q", r.Summary, want)
	}
}
