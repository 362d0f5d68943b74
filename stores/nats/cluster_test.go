package nats

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/lockchaos/lockchaos/stores/storetest"
)

// Three servers in a JetStream cluster: the bucket is replicated on all,
// so a lease survives the death of its stream's leader. The others elect
// a new leader, which still holds the key: a second client is refused, the
// holder releases it; the old leader comes back (heal) and follows.
func TestAClusterKeepsTheLeaseThroughAFailover(t *testing.T) {
	ctx := context.Background()
	e := storetest.Ensemble(t, Name, cluster.EnsembleSpec{Members: 3, Lease: 30 * time.Second}).(cluster.Elected)
	var addrs []string
	for _, m := range e.Serving() {
		addrs = append(addrs, m.Addr())
	}
	if len(addrs) != 3 {
		t.Fatalf("serving %v, want every member", addrs)
	}
	client := func(owner string) locks.Locker {
		spec, err := locks.Lookup("nats-kv-lock")
		if err != nil {
			t.Fatal(err)
		}
		l, err := spec.New(locks.Config{Addrs: addrs, OpTimeout: 2 * time.Second, TTL: 30 * time.Second, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.(interface{ Close() error }).Close() })
		return l
	}
	a, b := client("client-a"), client("client-b")
	la, err := a.Acquire(ctx, "lock:0")
	if err != nil {
		t.Fatal(err)
	}
	from, to, heal, err := e.FailOver(ctx)
	if err != nil || from == to || heal == nil {
		t.Fatalf("failover: from %d to %d, heal %v: %v", from, to, heal != nil, err)
	}
	if err := e.Members()[from].(*cluster.Server).Signal(0); !errors.Is(err, cluster.ErrNotRunning) {
		t.Fatalf("the old leader %d still runs after the failover: %v", from, err)
	}
	if held, err := e.Members()[to].(*cluster.Server).HoldsLease(ctx, "lock:0", la.Token); err != nil || !held {
		t.Fatalf("the new leader does not keep a's token: %v %v", held, err)
	}
	// b dials again past the dead member (its connection may have been
	// to it) and is refused: the key is a's.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := b.Acquire(ctx, "lock:0")
		if errors.Is(err, locks.ErrNotAcquired) {
			break
		}
		if err == nil {
			t.Fatal("b acquired a's lock after the failover")
		}
		if time.Now().After(deadline) {
			t.Fatalf("b after the failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatalf("a's release after the failover: %v", err)
	}
	if _, err := b.Acquire(ctx, "lock:0"); err != nil {
		t.Errorf("b after a's release: %v", err)
	}
	if l, err := e.Leader(ctx); err != nil {
		t.Errorf("no leader after the heal: %v (%d)", err, l)
	}
}

// In a run, the servers reach each other's route ports through relays
// (the run's proxies), which is where links=peers acts: with every relay
// disabled the stream's leader cannot replicate a create, and no client
// gets the lock; enabled again, the cluster commits it.
func TestTheRoutesRunThroughRelays(t *testing.T) {
	ps := proxy.New()
	t.Cleanup(ps.Close)
	e := storetest.Ensemble(t, Name, cluster.EnsembleSpec{Members: 3, Lease: 30 * time.Second, Relays: ps})
	relays := ps.Relays(-1)
	if len(relays) != 3 {
		t.Fatalf("%d relays, want one per member", len(relays))
	}
	var addrs []string
	for _, m := range e.Serving() {
		addrs = append(addrs, m.Addr())
	}
	spec, err := locks.Lookup("nats-kv-lock")
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.New(locks.Config{Addrs: addrs, OpTimeout: 2 * time.Second, TTL: 30 * time.Second, Owner: "client-a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.(interface{ Close() error }).Close() })
	ctx := context.Background()
	if _, err := l.Acquire(ctx, "lock:warm"); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	for _, r := range relays {
		r.Disable()
	}
	if lease, err := l.Acquire(ctx, "lock:0"); err == nil {
		t.Fatalf("granted %+v with every route cut: the servers do not talk through the relays", lease)
	}
	for _, r := range relays {
		if err := r.Enable(); err != nil {
			t.Fatal(err)
		}
	}
	// A fresh key each try: a try that timed out while the cluster came
	// back may still have been committed, and its key refuses the next.
	deadline := time.Now().Add(30 * time.Second)
	for try := 1; ; try++ {
		_, err := l.Acquire(ctx, "lock:1-"+strconv.Itoa(try))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no grant within 30 s of the routes' return: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
