package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
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
	// noRecheck: a blocking acquire does not check its own session after
	// waiting (EtcdMutexOptions.Recheck).
	noRecheck bool
}

// EtcdMutexOptions are etcd-mutex's options.
type EtcdMutexOptions struct {
	Recheck bool `opt:"recheck" default:"true" help:"a blocking acquire (--wait) is Mutex.Lock, which after waiting for the holders before it checks that its own key, and so its session, still exists (etcd's fix of etcd#11456); false: it returns the lock without that check, as Lock did before the fix — a client whose session expired while it waited is handed a lock it no longer has"`
}

func init() {
	Register(Spec{
		Name:        "etcd-mutex",
		Description: "etcd's concurrency.Mutex (TryLock; Lock for a blocking acquire) on a session lease of the TTL in whole seconds, kept alive by the library",
		Library:     "Go, etcd client/v3 3.5.17 `concurrency`",
		Weakness:    "a paused client outlives its lease, like Redis; a waiter paused past its session is refused (`Lock` re-checks its session after waiting)",
		Store:       "etcd",
		KeepsAlive:  true,
		Nodes:       3,
		Options:     EtcdMutexOptions{},
		New: func(cfg Config) (Locker, error) {
			l, err := newEtcdMutex(cfg, false)
			if o, ok := cfg.Options.(*EtcdMutexOptions); ok && l != nil {
				l.noRecheck = !o.Recheck
			}
			return l, err
		},
	})
}

func init() {
	// etcd-mutex-unchecked is etcd-mutex with recheck=false, as a lock of
	// its own so that the grid has its row: a blocking acquire that does
	// not check its session after waiting, as before etcd#11456's fix.
	Register(Spec{
		Name:        "etcd-mutex-unchecked",
		Description: "etcd-mutex whose blocking acquire (--wait) returns the lock without checking that its session survived the wait (Mutex.Lock before the fix of etcd#11456; etcd-mutex.recheck=false)",
		Library:     "Go, lockchaos's variant of etcd client/v3 3.5.17 `concurrency`",
		Weakness:    "a waiter paused past its session wakes holding a lock it no longer has (`pause-client phase=wait`, or a link fault with `when=wait`)",
		Store:       "etcd",
		KeepsAlive:  true,
		Nodes:       3,
		New: func(cfg Config) (Locker, error) {
			l, err := newEtcdMutex(cfg, false)
			if l != nil {
				l.noRecheck = true
			}
			return l, err
		},
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

// etcdHold is what a lease of EtcdMutex carries for its release: the
// session, and the grant's own key with the revision that created it.
type etcdHold struct {
	session *concurrency.Session
	key     string
	rev     int64
}

// session grants a fresh lease and opens a session on it. A session per
// acquire, not one per client: a session whose lease expired is dead for
// good, and one lease per grant makes Token name this grant's key alone.
func (l *EtcdMutex) session(ctx context.Context) (*concurrency.Session, error) {
	opCtx, cancel := context.WithTimeout(ctx, l.op)
	defer cancel()
	// Granted here, under the deadline: NewSession would grant under the
	// context it keeps its keep-alive on, which must not end with this call.
	g, err := l.client.Grant(opCtx, l.ttl)
	if err != nil {
		return nil, fmt.Errorf("etcd-mutex: grant a %d s lease: %w", l.ttl, err)
	}
	s, err := concurrency.NewSession(l.client, concurrency.WithLease(g.ID), concurrency.WithTTL(int(l.ttl)))
	if err != nil {
		l.revoke(ctx, g.ID)
		return nil, fmt.Errorf("etcd-mutex: session: %w", err)
	}
	return s, nil
}

// lease is the Lease of a grant whose key is key, created at rev.
func (l *EtcdMutex) lease(s *concurrency.Session, key, myKey string, rev int64) Lease {
	lease := Lease{Key: key, Owner: l.cfg.Owner, Token: myKey, Lost: s.Done(), Data: &etcdHold{session: s, key: myKey, rev: rev}}
	if l.fenced {
		lease.Fence = rev
	}
	return lease
}

// Acquire opens a session and tries the mutex once.
func (l *EtcdMutex) Acquire(ctx context.Context, key string) (Lease, error) {
	s, err := l.session(ctx)
	if err != nil {
		return Lease{}, err
	}
	opCtx, cancel := context.WithTimeout(ctx, l.op)
	defer cancel()
	m := concurrency.NewMutex(s, key)
	if err := m.TryLock(opCtx); err != nil {
		// Revoking also deletes the key of a TryLock whose outcome is
		// unknown; the error stays indeterminate, since the key may have
		// held the lock until then.
		s.Orphan()
		l.revoke(ctx, s.Lease())
		if errors.Is(err, concurrency.ErrLocked) {
			return Lease{}, ErrNotAcquired
		}
		return Lease{}, fmt.Errorf("etcd-mutex: try lock: %w", err)
	}
	return l.lease(s, key, m.Key(), createRevision(m)), nil
}

// AcquireWait is a blocking acquire, Mutex.Lock: it queues its key behind
// the holder's and waits, up to wait, for the keys before it to go. Then
// Lock checks that its own key still exists — that its session did not
// expire while it waited (etcd#11456, fixed in the library) — and refuses
// with ErrSessionExpired otherwise. With recheck=false it returns the lock
// without that check (lockWithoutRecheck).
func (l *EtcdMutex) AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	s, err := l.session(ctx)
	if err != nil {
		return Lease{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait+l.op)
	defer cancel()
	var myKey string
	var rev int64
	if l.noRecheck {
		myKey, rev, err = lockWithoutRecheck(wctx, s, key)
	} else {
		m := concurrency.NewMutex(s, key)
		if err = m.Lock(wctx); err == nil {
			myKey, rev = m.Key(), createRevision(m)
		}
	}
	if err != nil {
		s.Orphan()
		l.revoke(ctx, s.Lease()) // deletes its key, whatever became of it
		switch {
		case errors.Is(err, concurrency.ErrSessionExpired):
			return Lease{}, fmt.Errorf("%w: its session expired while it waited", ErrNotAcquired)
		case wctx.Err() != nil && ctx.Err() == nil:
			return Lease{}, fmt.Errorf("%w: waited %v", ErrNotAcquired, wait)
		}
		return Lease{}, fmt.Errorf("etcd-mutex: lock: %w", err)
	}
	return l.lease(s, key, myKey, rev), nil
}

// lockWithoutRecheck is Mutex.Lock as it was before the fix of etcd#11456:
// put this session's key under the lock's prefix (unless there), and if a
// key created before it is there, wait until every such key is deleted —
// then return the lock, without asking whether its own key still exists.
// A session that expired while it waited lost its key with it, and the
// lock it returns is held by nobody: the next client takes it too.
func lockWithoutRecheck(ctx context.Context, s *concurrency.Session, key string) (string, int64, error) {
	c, pfx := s.Client(), key+"/"
	myKey := fmt.Sprintf("%s%x", pfx, s.Lease())
	resp, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(myKey), "=", 0)).
		Then(clientv3.OpPut(myKey, "", clientv3.WithLease(s.Lease())), clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)).
		Else(clientv3.OpGet(myKey), clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)).Commit()
	if err != nil {
		return "", 0, err
	}
	rev := resp.Header.Revision
	if !resp.Succeeded {
		rev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	if owner := resp.Responses[1].GetResponseRange().Kvs; len(owner) == 0 || owner[0].CreateRevision == rev {
		return myKey, rev, nil
	}
	// Wait for every key created before ours to be deleted, the newest
	// first (the library's waitDeletes).
	for {
		before, err := c.Get(ctx, pfx, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1))...)
		if err != nil {
			return "", 0, err
		}
		if len(before.Kvs) == 0 {
			return myKey, rev, nil
		}
		last := before.Kvs[0]
		wch := c.Watch(clientv3.WithRequireLeader(ctx), string(last.Key), clientv3.WithRev(before.Header.Revision+1))
		deleted := false
		for w := range wch {
			for _, ev := range w.Events {
				if ev.Type == mvccpb.DELETE {
					deleted = true
				}
			}
			if deleted {
				break
			}
		}
		if !deleted {
			return "", 0, errors.Join(ctx.Err(), errors.New("etcd-mutex: the watch for the holder's key ended"))
		}
	}
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
	r, err := l.client.Txn(opCtx).If(clientv3.Compare(clientv3.CreateRevision(h.key), "=", h.rev)).Then(clientv3.OpDelete(h.key)).Commit()
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
