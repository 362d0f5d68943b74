package locks_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/locks"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A waiter whose session ends while it queues behind the holder (its lease
// revoked, as the leader does when a paused client's lease expires): once
// the holder lets go, etcd's Mutex.Lock checks its own key and refuses
// (the fix of etcd#11456), while Election.Campaign, which never got that
// check, tells the waiter it leads with no key left — and a third client
// then leads too. By construction: the real library, no timing.
func TestAWaiterWhoseSessionEndedIsToldItLeadsByCampaignNotByLock(t *testing.T) {
	e := startStore(t, "etcd", 3)
	raw := etcdClient(t, e)

	for _, tc := range []struct {
		lock     string
		twoHolds bool
	}{{"etcd-mutex", false}, {"etcd-election", true}} {
		t.Run(tc.lock, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			key := "k-" + tc.lock
			// Leases long enough that no keep-alive misses one under load:
			// the one session that ends is ended by the test.
			a := newEtcdLocker(t, tc.lock, e, "a", 5*time.Second, 5*time.Second)
			b := newEtcdLocker(t, tc.lock, e, "b", 5*time.Second, 5*time.Second)
			c := newEtcdLocker(t, tc.lock, e, "c", 5*time.Second, 5*time.Second)
			la, err := a.Acquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				lease locks.Lease
				err   error
			}
			waited := make(chan result, 1)
			go func() {
				l, err := b.(locks.Waiter).AcquireWait(ctx, key, 30*time.Second)
				waited <- result{l, err}
			}()
			// The waiter's key, queued behind the holder's.
			var waiter string
			for waiter == "" {
				r, err := raw.Get(ctx, key+"/", clientv3.WithPrefix())
				if err != nil {
					t.Fatal(err)
				}
				for _, kv := range r.Kvs {
					if string(kv.Key) != la.Token {
						waiter = string(kv.Key)
					}
				}
				select {
				case w := <-waited:
					t.Fatalf("the waiter returned while the holder held: %+v, %v", w.lease, w.err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			id, err := strconv.ParseInt(strings.TrimPrefix(waiter, key+"/"), 16, 64)
			if err != nil {
				t.Fatalf("waiter's key %q: %v", waiter, err)
			}
			if _, err := raw.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
				t.Fatal(err)
			}
			everyMember(t, e, key, waiter, false)
			if err := a.Release(ctx, la); err != nil {
				t.Fatal(err)
			}
			var w result
			select {
			case w = <-waited:
			case <-ctx.Done():
				t.Fatal("the waiter never returned after the holder let go")
			}
			if !tc.twoHolds {
				if !errors.Is(w.err, locks.ErrNotAcquired) {
					t.Fatalf("waiter whose session ended: %+v, %v; want ErrNotAcquired (its session expired)", w.lease, w.err)
				}
				return
			}
			if w.err != nil {
				t.Fatalf("waiter whose session ended: %v; Campaign told it it leads in v3.5.17 — did the library gain the check?", w.err)
			}
			if w.lease.Token != waiter {
				t.Fatalf("the waiter leads with %q, want its revoked key %q", w.lease.Token, waiter)
			}
			lc, err := c.Acquire(ctx, key)
			if err != nil {
				t.Fatalf("a third client, beside a leader with no key: %v; want it to lead too", err)
			}
			everyMember(t, e, key, lc.Token, true)
			t.Logf("two leaders: %s (no key) and %s", w.lease.Token, lc.Token)
			if err := c.Release(ctx, lc); err != nil {
				t.Error(err)
			}
			if err := b.Release(ctx, w.lease); !errors.Is(err, locks.ErrNotHeld) {
				t.Errorf("release of the keyless lead: %v, want ErrNotHeld", err)
			}
		})
	}
}
