package locks_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
)

var pgLocks = []string{"pg-advisory", "pg-advisory-xact", "pg-row"}

// newPGLocker is one client of lock, straight to the server at addr.
func newPGLocker(t *testing.T, lock, addr, owner string) locks.Locker {
	t.Helper()
	spec, err := locks.Lookup(lock)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Store != "postgres" || spec.Nodes != 2 {
		t.Fatalf("%s: store %s, %d nodes", lock, spec.Store, spec.Nodes)
	}
	l, err := spec.New(locks.Config{
		Addrs: []string{addr}, OpTimeout: 2 * time.Second, TTL: time.Second,
		Owner: owner, Rand: rand.New(rand.NewPCG(1, 2)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.(interface{ Close() error }).Close() })
	return l
}

// pgAdmin runs sql on its own connection straight to the member.
func pgAdmin(t *testing.T, n cluster.Node, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	host, port, _ := net.SplitHostPort(n.Addr())
	c, err := pgx.Connect(ctx, "host="+host+" port="+port+" user=lockchaos dbname=postgres sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

func holds(t *testing.T, n cluster.Node, lease locks.Lease) bool {
	t.Helper()
	ok, err := n.(cluster.LeaseHolder).HoldsLease(context.Background(), lease.Key, lease.Token)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func mustAcquire(t *testing.T, l locks.Locker, key string) locks.Lease {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lease, err := l.Acquire(context.Background(), key)
		if err == nil {
			return lease
		}
		if errors.Is(err, locks.ErrNotAcquired) || time.Now().After(deadline) {
			t.Fatalf("acquire %s: %v", key, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// In mustAcquire and wantNotAcquired, an attempt that ends in another
// error than the two outcomes (a reconnect that outlasted the op timeout
// on a busy machine) says nothing either way, and is tried again.
func wantNotAcquired(t *testing.T, l locks.Locker, key string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := l.Acquire(context.Background(), key)
		if errors.Is(err, locks.ErrNotAcquired) {
			return
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("acquire of a held %s: %v, want ErrNotAcquired", key, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Each lock excludes, releases, and is gone with its holder's session;
// and each is lost across a failover, since the standby never had it.
func TestPGLocks(t *testing.T) {
	for _, lock := range pgLocks {
		t.Run(lock, func(t *testing.T) {
			e := startStore(t, "postgres", 2)
			ctx := context.Background()
			primary, standby := e.Members()[0], e.Members()[1]
			a := newPGLocker(t, lock, primary.Addr(), "a")
			b := newPGLocker(t, lock, primary.Addr(), "b")

			// Exclusion and release.
			la := mustAcquire(t, a, "k")
			wantNotAcquired(t, b, "k")
			if !holds(t, primary, la) || holds(t, standby, la) {
				t.Error("HoldsLease: want held on the primary only")
			}
			if err := a.Release(ctx, la); err != nil {
				t.Fatalf("release: %v", err)
			}
			if holds(t, primary, la) {
				t.Error("HoldsLease: held after release")
			}
			if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
				t.Errorf("second release of one lease: %v, want ErrNotHeld", err)
			}
			lb := mustAcquire(t, b, "k")
			other := mustAcquire(t, a, "other") // keys are independent
			if err := b.Release(ctx, lb); err != nil {
				t.Fatal(err)
			}
			if err := a.Release(ctx, other); err != nil {
				t.Fatal(err)
			}

			// The holder's session ended by the server: the lock goes with it,
			// and the holder's release does not claim success.
			la = mustAcquire(t, a, "k")
			pid := strings.Split(la.Token, ":")[1]
			pgAdmin(t, primary, "SELECT pg_terminate_backend($1)", mustInt(t, pid))
			deadline := time.Now().Add(5 * time.Second)
			for {
				var err error
				if lb, err = b.Acquire(ctx, "k"); err == nil {
					break
				}
				if !errors.Is(err, locks.ErrNotAcquired) || time.Now().After(deadline) {
					t.Fatalf("acquire after the holder's session was terminated: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if holds(t, primary, la) {
				t.Error("HoldsLease: the terminated session's lease still held")
			}
			if err := a.Release(ctx, la); err == nil {
				t.Error("release by a terminated session claimed success")
			} else {
				t.Logf("release by a terminated session: %v", err)
			}
			wantNotAcquired(t, a, "k") // a reconnected, and b holds it
			if err := b.Release(ctx, lb); err != nil {
				t.Fatal(err)
			}

			// Failover: the standby, promoted, never had the lock.
			la = mustAcquire(t, a, "k")
			_, to, _, err := e.FailOver(ctx)
			if err != nil {
				t.Fatal(err)
			}
			c := newPGLocker(t, lock, e.Members()[to].Addr(), "c")
			lc, err := c.Acquire(ctx, "k")
			if err != nil {
				t.Fatalf("acquire on the promoted standby: %v, want the lock a still holds on the old primary", err)
			}
			if !holds(t, primary, la) || !holds(t, e.Members()[to], lc) {
				t.Error("HoldsLease: want a's lease on the old primary and c's on the new one, both at once")
			}
			if err := a.Release(ctx, la); err != nil {
				t.Errorf("a's release on the old primary: %v", err)
			}
			if err := c.Release(ctx, lc); err != nil {
				t.Errorf("c's release on the new primary: %v", err)
			}
		})
	}
}

// The server's own lock queue: a waiter gets the lock when its holder
// lets go, and gives up with ErrNotAcquired when the wait runs out.
func TestPGAdvisoryWaits(t *testing.T) {
	e := startStore(t, "postgres", 2)
	ctx := context.Background()
	addr := e.Members()[0].Addr()
	a := newPGLocker(t, "pg-advisory", addr, "a")
	b := newPGLocker(t, "pg-advisory", addr, "b").(locks.Waiter)
	la := mustAcquire(t, a, "k")
	if _, err := b.AcquireWait(ctx, "k", 50*time.Millisecond); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("wait on a held lock: %v, want ErrNotAcquired", err)
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		released <- a.Release(ctx, la)
	}()
	lb, err := b.AcquireWait(ctx, "k", 5*time.Second)
	if err != nil {
		t.Fatalf("wait for a lock its holder releases: %v", err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if err := b.(locks.Locker).Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

func mustInt(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
