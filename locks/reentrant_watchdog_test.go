package locks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/runner/runtest"
	"github.com/redis/go-redis/v9"
)

func TestReentrantWatchdogCountsReentriesInItsHash(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	a := newLock(t, "reentrant-watchdog", rdb, "a", time.Second, map[string]string{"watchdog-timeout": "1ttl"})
	b := newLock(t, "reentrant-watchdog", rdb, "bb", time.Second, map[string]string{"watchdog-timeout": "1ttl"})
	outer, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	inner, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("re-entering its own lock: %v", err)
	}
	if !strings.HasSuffix(outer.Owner, ":1") || len(outer.Owner) != 36+2 || inner.Owner != outer.Owner {
		t.Errorf("owner fields %q and %q, want one `<uuid>:<thread id>`", outer.Owner, inner.Owner)
	}
	if got := rdb.HGetAll(ctx, "k").Val(); len(got) != 1 || got[outer.Owner] != "2" {
		t.Errorf("hash after two acquires: %v, want {%s: 2}", got, outer.Owner)
	}
	_, err = b.Acquire(ctx, "k")
	if !errors.Is(err, locks.ErrNotAcquired) || !strings.Contains(err.Error(), "ms more") {
		t.Errorf("another owner's acquire: %v, want ErrNotAcquired with the holder's PTTL", err)
	}
	if err := a.Release(ctx, inner); err != nil {
		t.Fatal(err)
	}
	if got := rdb.HGet(ctx, "k", outer.Owner).Val(); got != "1" {
		t.Errorf("count after one release: %q, want 1", got)
	}
	if _, err := b.Acquire(ctx, "k"); !errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("the lock was free after releasing one of two levels: %v", err)
	}
	if err := a.Release(ctx, outer); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, "k").Val(); n != 0 {
		t.Error("the hash survived the outermost release")
	}
	if err := a.Release(ctx, outer); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a third release: %v, want ErrNotHeld", err)
	}
}

// The outermost release publishes on the lock's channel, and a waiter wakes
// on it at once instead of waiting out the holder's lease.
func TestReentrantWatchdogWakesWaitersOnUnlock(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	opts := map[string]string{"watchdog-timeout": "3s"}
	a := newLock(t, "reentrant-watchdog", rdb, "a", time.Second, opts)
	b := newLock(t, "reentrant-watchdog", rdb, "bb", time.Second, opts)
	sub := rdb.Subscribe(ctx, "redisson_lock__channel:{k}")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		lease locks.Lease
		err   error
		at    time.Time
	}
	got := make(chan result, 1)
	go func() {
		l, err := b.(locks.Waiter).AcquireWait(ctx, "k", 2*time.Second)
		got <- result{l, err, time.Now()}
	}()
	time.Sleep(300 * ms)
	released := time.Now()
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "0" {
		t.Errorf("unlock message %v, %v; want payload 0 on the lock's channel", msg, err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	// Without the message it would have slept until the holder's lease
	// ran out, seconds later.
	if wake := r.at.Sub(released); wake > 1500*ms {
		t.Errorf("the waiter took %v after the unlock; the holder's lease had ~3 s left, so it was not woken by the message", wake)
	}
	if err := b.Release(ctx, r.lease); err != nil {
		t.Error(err)
	}
}

func TestReentrantWatchdogWaiterGivesUpWhenTheWaitRunsOut(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	opts := map[string]string{"watchdog-timeout": "3s"}
	a := newLock(t, "reentrant-watchdog", rdb, "a", time.Second, opts)
	b := newLock(t, "reentrant-watchdog", rdb, "bb", time.Second, opts)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx, la)
	start := time.Now()
	_, err = b.(locks.Waiter).AcquireWait(ctx, "k", 250*ms)
	if !errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("waiting on a held lock: %v, want ErrNotAcquired", err)
	}
	if d := time.Since(start); d < 250*ms {
		t.Errorf("waited %v for a 250ms wait", d)
	}
}

// The watchdog keeps a lease alive long past its TTL, and stops at release.
func TestReentrantWatchdogRenewsUntilRelease(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	ttl := 150 * ms
	a := newLock(t, "reentrant-watchdog", rdb, "a", ttl, map[string]string{"watchdog-timeout": "1ttl"})
	b := newLock(t, "reentrant-watchdog", rdb, "bb", ttl, map[string]string{"watchdog-timeout": "1ttl"})
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * ttl)
	if _, err := b.Acquire(ctx, "k"); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("the lease ran out under the watchdog: %v", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Lost:
		t.Error("the lease was reported lost after a clean release")
	case <-time.After(2 * ttl):
	}
}

// When a renewal finds the field gone (the lease ran out while the client
// was frozen), the client is told.
func TestReentrantWatchdogReportsALostLease(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	ttl := 150 * ms
	a := newLock(t, "reentrant-watchdog", rdb, "a", ttl, map[string]string{"watchdog-timeout": "1ttl"})
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if la.Lost == nil {
		t.Fatal("a watched lease without a Lost channel")
	}
	rdb.Del(ctx, "k")
	select {
	case <-la.Lost:
	case <-time.After(2 * ttl):
		t.Fatal("the watchdog did not report the lost lease")
	}
	if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("release of a lost lease: %v, want ErrNotHeld", err)
	}
}

// As in Redisson, a renewal that fails (here: times out while the node
// holds scripts back) stops the watchdog for good, and nobody tells the
// owner: its lease runs out under it while it still believes it holds it.
func TestReentrantWatchdogStopsSilentlyWhenARenewalFails(t *testing.T) {
	ctx := context.Background()
	admin := node(t)
	impatient := redis.NewClient(&redis.Options{Addr: admin.Options().Addr, ReadTimeout: 30 * ms, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { impatient.Close() })
	ttl := 150 * ms
	a := newLock(t, "reentrant-watchdog", impatient, "a", ttl, map[string]string{"watchdog-timeout": "1ttl"})
	b := newLock(t, "reentrant-watchdog", admin, "bb", ttl, map[string]string{"watchdog-timeout": "1ttl"})
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// Scripts wait for 120 ms: the renewal at ttl/3 times out after 30 ms.
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 120, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	lb, err := b.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("b could not take the lock: %v (the watchdog went on renewing)", err)
	}
	select {
	case <-la.Lost:
		t.Error("the owner was told; Redisson does not tell it")
	default:
	}
	if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a's release: %v, want ErrNotHeld", err)
	}
	b.Release(ctx, lb)
}

// The same fault — one renewal times out while the node holds scripts
// back for half the lease — against both watchdogs: Redisson's before
// 3.44.0 stops for good (redisson#775) and the lease runs out under its
// owner; with keep-renewing (Redisson 3.44.0 and later) the next renewal,
// after the pause, keeps the lease alive.
//
// With keep-renewing the lease outlives the pause by 50 ms only (renewals
// every 200 ms with a 50 ms timeout): beside a busy machine's other jobs
// the next renewal can come, or time out, too late, and b takes the lock
// although the watchdog renews on. Which of the two happened is told apart
// without a clock: a watchdog still renewing finds its field gone at its
// next renewal and closes Lost; a stopped one never does. A run in which
// the renewals were late, none of them failed, or the acquire timed out is
// no evidence, and runs again (three times in all).
func TestReentrantWatchdogKeepRenewingRidesOutAFailedRenewal(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep-renewing=%v", keep), func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				late := rideOutAFailedRenewal(t, keep)
				if late == "" || t.Failed() {
					return
				}
				if attempt == 3 {
					t.Fatalf("three runs in a row were no evidence: %s", late)
				}
				t.Logf("no evidence: %s; running it again", late)
			}
		})
	}
}

// rideOutAFailedRenewal is one run of TestReentrantWatchdogKeepRenewingRidesOutAFailedRenewal:
// it says why the run is no evidence ("" when it is).
func rideOutAFailedRenewal(t *testing.T, keep bool) (late string) {
	ctx := context.Background()
	admin := node(t)
	impatient := redis.NewClient(&redis.Options{Addr: admin.Options().Addr, ReadTimeout: 50 * ms, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { impatient.Close() })
	// Renewals at 200, 400, 600 ms…: the pause covers the first
	// one only, with 100 ms to spare on either side.
	ttl := 600 * ms
	opts := map[string]string{"watchdog-timeout": "1ttl", "keep-renewing": fmt.Sprint(keep)}
	a := newLock(t, "reentrant-watchdog", impatient, "a", ttl, opts)
	b := newLock(t, "reentrant-watchdog", admin, "bb", ttl, opts)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		// Its 50 ms timeout is for the renewals; the next run has a node
		// of its own.
		return fmt.Sprintf("a's acquire got no answer within its 50 ms timeout (%v)", err)
	}
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 300, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	// A request that failed drops its connection: none dropped, no
	// renewal failed (the pause held none back: a's watchdog, descheduled,
	// sent none while it lasted), and the run tried nothing.
	noneFailed := ""
	if impatient.PoolStats().StaleConns == 0 {
		noneFailed = "no renewal of a's failed: the pause held none back"
	}
	lb, err := b.Acquire(ctx, "k")
	if !keep {
		if err != nil && noneFailed != "" {
			return noneFailed
		}
		if err != nil {
			t.Fatalf("b could not take the lock: %v (the watchdog went on renewing after the failure)", err)
		}
		b.Release(ctx, lb)
		return ""
	}
	if err == nil {
		b.Release(ctx, lb)
		select {
		case <-la.Lost:
			return "b took the lock, and a's watchdog, renewing on, found its lease gone: its renewals came too late"
		case <-time.After(10 * ttl):
		}
		t.Fatal("b took the lock: the watchdog stopped after one failed renewal")
	}
	if !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatal(err)
	}
	select {
	case <-la.Lost:
		t.Error("the owner was told it lost a lease it kept")
	default:
	}
	if err := a.Release(ctx, la); err != nil {
		t.Errorf("a's release of the lease its watchdog kept: %v", err)
	}
	return noneFailed
}

func TestReentrantWatchdogExplicitLeaseTimeJustExpires(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	a := newLock(t, "reentrant-watchdog", rdb, "a", time.Second, map[string]string{"lease-time": "100ms"})
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if la.Lost != nil {
		t.Error("an explicit lease time still got a watchdog")
	}
	time.Sleep(150 * ms)
	if n := rdb.Exists(ctx, "k").Val(); n != 0 {
		t.Error("the lease outlived its explicit lease time")
	}
}

// The watchdog lives in the client's process: frozen with it, it cannot
// renew, the lease runs out, and another client gets in.
func TestReentrantWatchdogPausedClientViolates(t *testing.T) {
	c := runCfg(t, "reentrant-watchdog", "pause-client")
	c.LockOptions = map[string]string{"watchdog-timeout": "1ttl"}
	res, events := run(t, c)
	wantVerdict(t, res, checker.Violation)
	paused := map[int]bool{}
	for _, f := range res.Faults {
		for _, c := range f.Clients {
			paused[c] = true
		}
	}
	// Woken up, the paused client finds its field gone: its watchdog's
	// renewal reports the loss, or, when its release comes first (a race it
	// usually loses: its write is already out), the release does.
	o := res.Mutex.Overlaps[0]
	if h := o.Holds[0]; !paused[h.Client] || (h.End != "lost" && h.End != "release-not-held") {
		t.Errorf("the first overlap's earlier hold is client %d's, ended by %s: want a paused client that found its lease gone", h.Client, h.End)
	}
	t.Logf("%d lost events from the paused clients' watchdogs", count(events, func(e history.Event) bool { return e.Kind == history.Lost && paused[e.Client] }))
}

// Unlike token-lua (runner's TestHoldLongerThanTTLViolatesWithoutFaults),
// holds twice the lease are safe: the watchdog renews them.
func TestReentrantWatchdogKeepsLongHoldsSafe(t *testing.T) {
	// A 600 ms lease renewed every 200 ms: a stall of the busy machine
	// shorter than 400 ms loses nothing.
	c := runCfg(t, "reentrant-watchdog")
	c.LockOptions = map[string]string{"watchdog-timeout": "1ttl"}
	c.TTL = 600 * ms
	c.Hold, c.Duration = 2*c.TTL, 4500*ms
	res, events := run(t, c)
	wantVerdict(t, res, checker.Safe)
	if res.Mutex.Holds < 3 || res.Release.NotHeld != 0 {
		t.Errorf("%d holds, %d releases not held: want several holds, every lease alive at release", res.Mutex.Holds, res.Release.NotHeld)
	}
	if n := count(events, func(e history.Event) bool { return e.Kind == history.Lost }); n != 0 {
		t.Errorf("%d leases lost without a fault", n)
	}
}

// With --reentry, holds acquire their lock again inside and release it
// twice; the checker's reentrant model accepts it.
func TestReentrantRunIsSafeAndReenters(t *testing.T) {
	c := runCfg(t, "reentrant-watchdog")
	c.LockOptions = map[string]string{"watchdog-timeout": "1ttl"}
	c.Reentry, c.Hold, c.Duration = 0.5, 20*ms, 2*time.Second
	res, events := run(t, c)
	wantVerdict(t, res, checker.Safe)
	depth := map[int]int{}
	reentries := 0
	for _, e := range runtest.SortedByTime(events) {
		switch {
		case e.F == history.Acquire && e.Kind == history.OK:
			if depth[e.Client] > 0 {
				reentries++
			}
			depth[e.Client]++
		case e.F == history.Release && e.Kind == history.Invoke:
			depth[e.Client]--
		}
	}
	if reentries < 5 {
		t.Errorf("%d reentrant acquires in the history, want several", reentries)
	}
	if res.Acquire.OK != res.Release.Attempted || res.Mutex.Holds != res.Acquire.OK-reentries {
		t.Errorf("acquires ok %d, releases %d, holds %d, reentries %d: every acquire needs its own release, and a reentry is no new hold",
			res.Acquire.OK, res.Release.Attempted, res.Mutex.Holds, reentries)
	}
}
