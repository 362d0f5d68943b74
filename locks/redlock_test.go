package locks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/ports"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/redis/go-redis/v9"
)

// quietLogger drops go-redis's log lines (its dial failures to dead nodes).
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// deadNode is a client of a port nobody listens on: every request fails.
func deadNode(t *testing.T) *redis.Client {
	t.Helper()
	redis.SetLogger(quietLogger{})
	port, err := ports.Free(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Which nodes answered what decides the outcome, not how fast they did: the
// lease and each node's timeout are long enough for a loaded machine (a
// node that does not answer here is one nobody listens on, refused at once).
func TestRedlockTakesAMajorityAndUndoesAMinority(t *testing.T) {
	ctx := context.Background()
	ttl := 10 * time.Second
	for _, tc := range []struct {
		name     string
		taken    int // nodes where someone else already holds the key
		dead     int // nodes that do not answer
		acquired bool
		unknown  bool
	}{
		{name: "all five", acquired: true},
		{name: "two taken", taken: 2, acquired: true},
		{name: "three taken", taken: 3},
		{name: "two dead", dead: 2, acquired: true},
		{name: "three dead", dead: 3, unknown: true},
	} {
		for _, parallel := range []string{"false", "true"} {
			t.Run(tc.name+"/parallel="+parallel, func(t *testing.T) {
				live := nodes(t, 5-tc.dead)
				all := live
				for i := 0; i < tc.dead; i++ {
					all = append(all, deadNode(t))
				}
				for _, rdb := range live[:tc.taken] {
					rdb.Set(ctx, "k", "someone-else", 0)
				}
				l := newLockOn(t, "redlock", all, "a", ttl, map[string]string{"parallel": parallel, "node-timeout": "2s"})
				before := history.Now()
				lease, err := l.Acquire(ctx, "k")
				after := history.Now()
				switch {
				case tc.acquired && err != nil:
					t.Fatalf("acquire: %v", err)
				case tc.unknown && (err == nil || errors.Is(err, locks.ErrNotAcquired)):
					t.Fatalf("acquire with a majority unreachable: %v, want an unknown outcome", err)
				case !tc.acquired && !tc.unknown && !errors.Is(err, locks.ErrNotAcquired):
					t.Fatalf("acquire without a majority: %v, want ErrNotAcquired", err)
				}
				for i, rdb := range live[tc.taken:] {
					v := rdb.Get(ctx, "k").Val()
					if tc.acquired && v != lease.Token {
						t.Errorf("free node %d holds %q, want this lease's token", i, v)
					}
					if !tc.acquired && v != "" {
						t.Errorf("a failed attempt left its key on node %d", i)
					}
				}
				if !tc.acquired {
					return
				}
				// Validity: TTL − elapsed − drift (1% of the TTL + 2 ms), from the attempt's start.
				drift := int64(ttl/100 + 2*ms)
				if lease.Deadline < before+int64(ttl)-drift || lease.Deadline > after+int64(ttl)-drift {
					t.Errorf("deadline %d ms after the attempt began, want TTL − drift = %d ms", (lease.Deadline-before)/1e6, (int64(ttl)-drift)/1e6)
				}
				if err := l.Release(ctx, lease); err != nil {
					t.Errorf("release: %v", err)
				}
				for i, rdb := range live[tc.taken:] {
					if rdb.Exists(ctx, "k").Val() != 0 {
						t.Errorf("node %d still has the key after release", i)
					}
				}
			})
		}
	}
}

func TestRedlockRenewAndReleaseNeedTheMajority(t *testing.T) {
	ctx := context.Background()
	ttl := time.Second // half of it left at the renewal: room for a busy machine
	rdbs := nodes(t, 3)
	a := newLockOn(t, "redlock", rdbs, "a", ttl, nil)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl / 2)
	renewed, err := a.(locks.Renewer).Renew(ctx, la)
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	if renewed.Deadline <= la.Deadline {
		t.Error("a renewal did not move the deadline")
	}
	if pttl := rdbs[2].PTTL(ctx, "k").Val(); pttl < ttl*3/4 {
		t.Errorf("PTTL %v after renewal, want close to %v", pttl, ttl)
	}
	// Two of three nodes lose the key: the lease has lost its majority.
	rdbs[0].Del(ctx, "k")
	rdbs[1].Set(ctx, "k", "someone-else", 0)
	if _, err := a.(locks.Renewer).Renew(ctx, renewed); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("renew without a majority: %v, want ErrNotHeld", err)
	}
	if err := a.Release(ctx, renewed); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("release without a majority: %v, want ErrNotHeld", err)
	}
	if rdbs[1].Get(ctx, "k").Val() != "someone-else" {
		t.Error("release deleted another client's key")
	}
}

func TestRedlockWaiterRetriesUntilFree(t *testing.T) {
	ctx := context.Background()
	ttl := time.Second
	rdbs := nodes(t, 3)
	a := newLockOn(t, "redlock", rdbs, "a", ttl, map[string]string{"retry-delay": "50ms"})
	b := newLockOn(t, "redlock", rdbs, "bb", ttl, map[string]string{"retry-delay": "50ms"})
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * ms)
		a.Release(ctx, la)
	}()
	start := time.Now()
	if _, err := b.(locks.Waiter).AcquireWait(ctx, "k", 5*time.Second); err != nil {
		t.Fatalf("waiting for a lock released after 200ms: %v", err)
	}
	if d := time.Since(start); d < 200*ms {
		t.Errorf("got the lock after %v, before its 200ms release", d)
	}
	start = time.Now()
	if _, err := a.(locks.Waiter).AcquireWait(ctx, "k", 200*ms); !errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("waiting on a held lock: %v, want ErrNotAcquired", err)
	}
	if d := time.Since(start); d < 200*ms {
		t.Errorf("gave up after %v for a 200ms wait", d)
	}
}

func TestRedlockWithoutFaultsIsSafe(t *testing.T) {
	res, _ := run(t, runCfg(t, "redlock"))
	wantVerdict(t, res, checker.Safe)
	if res.Mutex.Holds < 10 {
		t.Errorf("only %d holds", res.Mutex.Holds)
	}
}

// A client paused past its validity learns on waking that the validity ran
// out, and skips its write; but it was paused holding the lock while
// another client took it: the check-then-act race of the Redlock debate.
func TestRedlockPausedClientViolates(t *testing.T) {
	res, events := run(t, runCfg(t, "redlock", "pause-client"))
	wantVerdict(t, res, checker.Violation)
	paused := map[int]bool{}
	for _, f := range res.Faults {
		for _, c := range f.Clients {
			paused[c] = true
		}
	}
	if n := count(events, func(e history.Event) bool { return e.Kind == history.Lost && paused[e.Client] }); n == 0 {
		t.Error("no paused client noticed that its validity ran out")
	}
}
