package locks_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// newEtcdLocker builds lock's Locker for one client, closed with the test.
func newEtcdLocker(t *testing.T, lock string, e cluster.Ensemble, owner string, ttl, opTimeout time.Duration) locks.Locker {
	t.Helper()
	spec, err := locks.Lookup(lock)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Store != "etcd" || spec.Nodes != 3 {
		t.Fatalf("%s: store %q with %d nodes, want etcd with 3", lock, spec.Store, spec.Nodes)
	}
	l, err := spec.New(locks.Config{
		Addrs: servingAddrs(e), OpTimeout: opTimeout, TTL: ttl, Owner: owner,
		Rand: rand.New(rand.NewPCG(1, uint64(len(owner)))),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.(io.Closer).Close() })
	return l
}

// etcdClient is a plain client of the ensemble, to act behind the locks'
// backs; closed with the test.
func etcdClient(t *testing.T, e cluster.Ensemble) *clientv3.Client {
	t.Helper()
	var eps []string
	for _, addr := range servingAddrs(e) {
		eps = append(eps, "http://"+addr)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// everyMember polls until every member's own copy agrees that token is
// held (want) or gone: followers apply a commit shortly after the leader.
func everyMember(t *testing.T, e cluster.Ensemble, key, token string, want bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, m := range e.Members() {
		for {
			held, err := m.(cluster.LeaseHolder).HoldsLease(ctx, key, token)
			if err == nil && held == want {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("member %s: holds %s = %v (%v), want %v", m.Name(), token, held, err, want)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

func TestEtcdMutexExcludesReleasesAndFences(t *testing.T) {
	e := startStore(t, "etcd", 3)
	ctx := context.Background()
	// Leases long enough that no keep-alive misses one under load: this
	// test is about exclusion, not expiry.
	a := newEtcdLocker(t, "etcd-mutex-fenced", e, "a", 4500*time.Millisecond, 5*time.Second)
	b := newEtcdLocker(t, "etcd-mutex-fenced", e, "b", 4500*time.Millisecond, 5*time.Second)
	if got := a.(locks.Leaser).Lease(); got != 5*time.Second {
		t.Errorf("Lease() = %v for a 4.5 s TTL, want 5s (whole seconds, rounded up)", got)
	}

	var last int64
	holder, other := a, b
	for i := 0; i < 3; i++ {
		l, err := holder.Acquire(ctx, "k")
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if !strings.HasPrefix(l.Token, "k/") || l.Fence <= last {
			t.Fatalf("grant %d: token %q, fence %d after %d; want a key under k/ and a higher fence", i, l.Token, l.Fence, last)
		}
		last = l.Fence
		everyMember(t, e, "k", l.Token, true)
		if _, err := other.Acquire(ctx, "k"); !errors.Is(err, locks.ErrNotAcquired) {
			t.Fatalf("grant %d: the other client's acquire: %v, want ErrNotAcquired", i, err)
		}
		select {
		case <-l.Lost:
			t.Fatalf("grant %d: Lost closed while the lease is held", i)
		default:
		}
		if err := holder.Release(ctx, l); err != nil {
			t.Fatalf("grant %d: release: %v", i, err)
		}
		everyMember(t, e, "k", l.Token, false)
		holder, other = other, holder
	}

	plain := newEtcdLocker(t, "etcd-mutex", e, "c", time.Second, 5*time.Second)
	if got := plain.(locks.Leaser).Lease(); got != time.Second {
		t.Errorf("Lease() = %v for a 1 s TTL", got)
	}
	l, err := plain.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence != 0 {
		t.Errorf("etcd-mutex issued fence %d; only etcd-mutex-fenced issues one", l.Fence)
	}
	if err := plain.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// A lease revoked behind the holder's back (as the leader does when a
// lease expires): the library's keep-alive learns it and Lost closes,
// Release says ErrNotHeld, and another client gets the lock.
func TestEtcdMutexLeaseRevokedBehindItsBack(t *testing.T) {
	e := startStore(t, "etcd", 3)
	ctx := context.Background()
	a := newEtcdLocker(t, "etcd-mutex", e, "a", 3*time.Second, 5*time.Second)
	b := newEtcdLocker(t, "etcd-mutex", e, "b", 3*time.Second, 5*time.Second)
	l, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// The mutex's key is its prefix and its lease id, in hex.
	id, err := strconv.ParseInt(strings.TrimPrefix(l.Token, "k/"), 16, 64)
	if err != nil {
		t.Fatalf("token %q: %v", l.Token, err)
	}
	c := etcdClient(t, e)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Revoke(rctx, clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost:
	case <-rctx.Done():
		t.Fatal("Lost never closed after the lease was revoked")
	}
	everyMember(t, e, "k", l.Token, false)
	if err := a.Release(ctx, l); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("release of a revoked lease: %v, want ErrNotHeld", err)
	}
	lb, err := b.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire after the revoke: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Error(err)
	}
}

// A member that stops answering (SIGSTOP) makes the requests sent to it
// fail at the client's deadline; none hangs, and each outcome is a lease,
// ErrNotAcquired or an error.
func TestEtcdMutexReturnsWhileAMemberIsStopped(t *testing.T) {
	e := startStore(t, "etcd", 3)
	ctx := context.Background()
	l := newEtcdLocker(t, "etcd-mutex", e, "a", time.Second, 300*time.Millisecond)
	// Every member gets a ready connection first: a connection still in
	// its handshake is skipped by the balancer, not waited on.
	for i := 0; i < 6; i++ {
		lease, err := l.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	m := e.Members()[0]
	if err := m.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer m.Signal(syscall.SIGCONT)
	for i := 0; i < 6; i++ {
		done := make(chan error, 1)
		go func() {
			lease, err := l.Acquire(ctx, "k")
			if err == nil {
				err = l.Release(ctx, lease)
			}
			done <- err
		}()
		select {
		case err := <-done:
			t.Logf("attempt %d: %v", i, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("attempt %d hung with a member stopped", i)
		}
	}
}
