// Package storetest starts a store's servers and its locks' clients for
// the tests of a store in a folder of its own (stores/NAME): real servers
// on the local backend, stopped when the test ends.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
)

// Server starts the store named store, one member (or a primary and
// nothing more, for a store with one), and returns the member that serves
// clients, or skips the test
// when its servers are not installed (make setup installs them).
func Server(t *testing.T, store string) *cluster.Server {
	t.Helper()
	return Ensemble(t, store, cluster.EnsembleSpec{Members: 1}).Serving()[0].(*cluster.Server)
}

// Ensemble starts one ensemble of the store named store as spec says, on
// the local backend, stopped when the test ends, or skips the test when
// its servers are not installed.
func Ensemble(t *testing.T, store string, spec cluster.EnsembleSpec) cluster.Ensemble {
	t.Helper()
	s, err := cluster.LookupStore(store)
	if err != nil {
		t.Fatal(err)
	}
	if s.Missing() != nil {
		t.Skipf("%s's servers are not installed: %s (or make setup as root)", store, s.Install())
	}
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Start(context.Background(), local, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range e.Members() {
			m.Stop()
		}
		e.Close()
	})
	return e
}

// Client is a client of the lock named lock, on the server at addr, as
// owner, with a 2 s op timeout and the lease ttl; it is closed when the
// test ends.
func Client(t *testing.T, lock, addr, owner string, ttl time.Duration) locks.Locker {
	t.Helper()
	spec, err := locks.Lookup(lock)
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.New(locks.Config{Addrs: []string{addr}, OpTimeout: 2 * time.Second, TTL: ttl, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.(interface{ Close() error }).Close() })
	return l
}
