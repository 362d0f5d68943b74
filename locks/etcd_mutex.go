package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// EtcdMutex is etcd's own lock recipe, used as its documentation shows:
// a concurrency.Mutex on a concurrency.Session, whose lease the library
// keeps alive in the background. The lock key lives exactly as long as the
// lease, and the lease as long as keep-alives reach the leader; a client
// paused past its lease, or cut off from the cluster, still believes it
// holds the lock until the library notices (Lease.Lost), so nothing but a
// fencing token protects the resource from it.
type EtcdMutex struct {
	cfg    Config
	client *clientv3.Client
	ttl    int64 // the session's lease, whole seconds
	op     time.Duration
	fenced bool
}

func init() {
	Register(Spec{
		Name:        "etcd-mutex",
		Description: "etcd's concurrency.Mutex (TryLock) on a session lease of the TTL in whole seconds, kept alive by the library",
		Store:       "etcd",
		KeepsAlive:  true,
		Nodes:       3,
		New:         func(cfg Config) (Locker, error) { return newEtcdMutex(cfg, false) },
	})
}

func newEtcdMutex(cfg Config, fenced bool) (*EtcdMutex, error) {
	l := &EtcdMutex{cfg: cfg, ttl: etcdLeaseSeconds(cfg.TTL), op: etcdOpTimeout(cfg), fenced: fenced}
	if len(cfg.Addrs) == 0 {
		return l, nil // asked what it can do, before any server runs: no client
	}
	c, err := dialEtcd(cfg)
	if err != nil {
		return nil, err
	}
	l.client = c
	return l, nil
}

// etcdHold is what a lease of EtcdMutex carries for its release.
type etcdHold struct {
	session *concurrency.Session
	mutex   *concurrency.Mutex
}

// Acquire grants a fresh lease, opens a session on it and tries the mutex
// once. A session per acquire, not one per client: a session whose lease
// expired is dead for good, and one lease per grant makes Token name this
// grant's key alone.
func (l *EtcdMutex) Acquire(ctx context.Context, key string) (Lease, error) {
	opCtx, cancel := context.WithTimeout(ctx, l.op)
	defer cancel()
	// Granted here, under the deadline: NewSession would grant under the
	// context it keeps its keep-alive on, which must not end with this call.
	g, err := l.client.Grant(opCtx, l.ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("etcd-mutex: grant a %d s lease: %w", l.ttl, err)
	}
	s, err := concurrency.NewSession(l.client, concurrency.WithLease(g.ID), concurrency.WithTTL(int(l.ttl)))
	if err != nil {
		l.revoke(ctx, g.ID)
		return Lease{}, fmt.Errorf("etcd-mutex: session: %w", err)
	}
	m := concurrency.NewMutex(s, key)
	if err := m.TryLock(opCtx); err != nil {
		// Revoking also deletes the key of a TryLock whose outcome is
		// unknown; the error stays indeterminate, since the key may have
		// held the lock until then.
		s.Orphan()
		l.revoke(ctx, g.ID)
		if errors.Is(err, concurrency.ErrLocked) {
			return Lease{}, ErrNotAcquired
		}
		return Lease{}, fmt.Errorf("etcd-mutex: try lock: %w", err)
	}
	lease := Lease{Key: key, Owner: l.cfg.Owner, Token: m.Key(), Lost: s.Done(), Data: &etcdHold{session: s, mutex: m}}
	if l.fenced {
		lease.Fence = createRevision(m)
	}
	return lease, nil
}

// createRevision is the revision that created the mutex's own key, as the
// mutex itself compares it (IsOwner): the header revision of TryLock's
// transaction is the same number only when that transaction created the
// key, not when a retried one found it already there.
func createRevision(m *concurrency.Mutex) int64 {
	if cr, ok := m.IsOwner().TargetUnion.(*pb.Compare_CreateRevision); ok {
		return cr.CreateRevision
	}
	return 0
}

// Release deletes the key only while it is still this grant's (the
// mutex's IsOwner comparison), then ends the session and revokes its
// lease. Mutex.Unlock would delete unconditionally and succeed on a key
// already gone; the comparison tells a lease that expired or was revoked
// (ErrNotHeld, certain: the read is linearizable) from one given back.
func (l *EtcdMutex) Release(ctx context.Context, lease Lease) error {
	h, ok := lease.Data.(*etcdHold)
	if !ok {
		return fmt.Errorf("etcd-mutex: release of a lease it did not grant (%T)", lease.Data)
	}
	opCtx, cancel := context.WithTimeout(ctx, l.op)
	defer cancel()
	r, err := l.client.Txn(opCtx).If(h.mutex.IsOwner()).Then(clientv3.OpDelete(h.mutex.Key())).Commit()
	h.session.Orphan()
	l.revoke(ctx, h.session.Lease())
	if err != nil {
		return fmt.Errorf("etcd-mutex: unlock: %w", err)
	}
	if !r.Succeeded {
		return ErrNotHeld
	}
	return nil
}

// revoke ends a lease this client no longer uses, under a deadline of its
// own. A failure leaves a lease with no lock key, which expires by itself.
func (l *EtcdMutex) revoke(ctx context.Context, id clientv3.LeaseID) {
	rctx, cancel := cleanupCtx(ctx, l.op)
	defer cancel()
	_, _ = l.client.Revoke(rctx, id)
}

// Lease is the session's lease: the TTL rounded up to whole seconds.
func (l *EtcdMutex) Lease() time.Duration { return time.Duration(l.ttl) * time.Second }

// Close closes the client, which ends every keep-alive it still sends.
func (l *EtcdMutex) Close() error {
	if l.client == nil {
		return nil
	}
	return l.client.Close()
}
