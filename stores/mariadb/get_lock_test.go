package mariadb

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/stores/storetest"
)

// GET_LOCK against a real server: one holder at a time; the server says
// which session holds a key, by the lease's token; a release frees it, and
// so does the end of the holder's connection.
func TestGetLockExcludesAndTheServerNamesItsHolder(t *testing.T) {
	s := storetest.Server(t, Name)
	ctx := context.Background()
	a, b := storetest.Client(t, "mariadb-get-lock", s.Addr(), "client-a", time.Second), storetest.Client(t, "mariadb-get-lock", s.Addr(), "client-b", time.Second)
	la, err := a.Acquire(ctx, "lock:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "lock:0"); !errors.Is(err, locks.ErrNotAcquired) {
		t.Fatalf("b acquired a held lock: %v", err)
	}
	if held, err := s.HoldsLease(ctx, "lock:0", la.Token); err != nil || !held {
		t.Errorf("the server does not name a's session (%s) as the holder: %v %v", la.Token, held, err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a second release of one lease: %v, want ErrNotHeld", err)
	}
	lb, err := b.Acquire(ctx, "lock:0")
	if err != nil {
		t.Fatalf("b after a's release: %v", err)
	}
	if held, _ := s.HoldsLease(ctx, "lock:0", la.Token); held {
		t.Error("the server names a's session as the holder of b's lock")
	}
	// b's connection ends: the server frees its lock.
	b.(interface{ Close() error }).Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		la, err = a.Acquire(ctx, "lock:0")
		if err == nil {
			break
		}
		if !errors.Is(err, locks.ErrNotAcquired) || time.Now().After(deadline) {
			t.Fatalf("a after b's connection closed: %v (b's lease %s)", err, lb.Token)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A restarted server forgets every named lock and hands out connection ids
// from the start again: the session that took the key after the restart
// may have the old holder's id, and must not be taken for it.
func TestARestartedServerDoesNotNameTheOldHolder(t *testing.T) {
	s := storetest.Server(t, Name)
	ctx := context.Background()
	a := storetest.Client(t, "mariadb-get-lock", s.Addr(), "client-a", time.Second)
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
	// The first connection after the restart gets the id a's had, or close.
	c := storetest.Client(t, "mariadb-get-lock", s.Addr(), "client-c", time.Second)
	lc, err := c.Acquire(ctx, "lock:0")
	if err != nil {
		t.Fatalf("c after the restart: %v (the server forgot a's lock)", err)
	}
	if held, err := s.HoldsLease(ctx, "lock:0", la.Token); err != nil || held {
		t.Errorf("after the restart the server names a's old session as the holder: %v %v", held, err)
	}
	if held, err := s.HoldsLease(ctx, "lock:0", lc.Token); err != nil || !held {
		t.Errorf("c's lease %s: held %v %v", lc.Token, held, err)
	}
	// a learns only now, at its next request, that its session is gone.
	if err := a.Release(ctx, la); err == nil || errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a's release on its broken connection: %v, want an unknown outcome", err)
	}
}
