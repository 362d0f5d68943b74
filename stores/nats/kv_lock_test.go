package nats

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/stores/storetest"
)

// Against a real nats-server: one holder at a time; the key's value is the
// lease's token; the server expires it after the bucket's TTL; a release
// that comes after the next holder's grant deletes nothing of it.
func TestKVLockExcludesExpiresAndReleasesOnlyItsOwn(t *testing.T) {
	s := storetest.Server(t, Name)
	ctx := context.Background()
	ttl := 500 * time.Millisecond
	a, b := storetest.Client(t, "nats-kv-lock", s.Addr(), "client-a", ttl), storetest.Client(t, "nats-kv-lock", s.Addr(), "client-b", ttl)
	la, err := a.Acquire(ctx, "lock:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "lock:0"); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("b acquired a held lock: %v", err)
	}
	if held, err := s.HoldsLease(ctx, "lock:0", la.Token); err != nil || !held {
		t.Errorf("the server does not keep a's token %s: %v %v", la.Token, held, err)
	}
	// The lease runs out on the server: b takes the key.
	var lb locks.Lease
	deadline := time.Now().Add(10 * ttl)
	for {
		lb, err = b.Acquire(ctx, "lock:0")
		if err == nil {
			break
		}
		if !errors.Is(err, locks.ErrNotAcquired) || time.Now().After(deadline) {
			t.Fatalf("b after a's lease: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// a's late release must not end b's lease.
	if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a's release after its lease ran out: %v, want ErrNotHeld", err)
	}
	if held, _ := s.HoldsLease(ctx, "lock:0", lb.Token); !held {
		t.Error("a's late release deleted b's key")
	}
	// A renewal restarts the key's age.
	r := b.(locks.Renewer)
	for i := 0; i < 4; i++ {
		time.Sleep(ttl / 2)
		if lb, err = r.Renew(ctx, lb); err != nil {
			t.Fatalf("renew %d: %v", i, err)
		}
	}
	if held, _ := s.HoldsLease(ctx, "lock:0", lb.Token); !held {
		t.Error("a lease renewed every half TTL ran out")
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if held, err := s.HoldsLease(ctx, "lock:0", lb.Token); err != nil || held {
		t.Errorf("the server keeps b's token after its release (the key's delete marker): %v %v", held, err)
	}
	if _, err := a.Acquire(ctx, "lock:0"); err != nil {
		t.Errorf("a after b's release (the key's delete marker): %v", err)
	}
}

// JetStream keeps the key in its file store: a server killed and
// restarted still holds the lease.
func TestKVLockSurvivesARestartOfTheServer(t *testing.T) {
	s := storetest.Server(t, Name)
	ctx := context.Background()
	a := storetest.Client(t, "nats-kv-lock", s.Addr(), "client-a", 30*time.Second)
	la, err := a.Acquire(ctx, "lock:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if held, err := s.HoldsLease(ctx, "lock:0", la.Token); err != nil || !held {
		t.Errorf("after the restart: held %v, %v", held, err)
	}
	b := storetest.Client(t, "nats-kv-lock", s.Addr(), "client-b", 30*time.Second)
	if _, err := b.Acquire(ctx, "lock:0"); !errors.Is(err, locks.ErrNotAcquired) {
		t.Errorf("b after the restart: %v, want ErrNotAcquired", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Errorf("a's release after the restart (it dials again): %v", err)
	}
}
