package locks_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/redis/go-redis/v9"
)

// node starts a real redis-server for the test and a client to it.
func node(t *testing.T) *redis.Client {
	t.Helper()
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	n, err := local.StartNode(context.Background(), cluster.NodeSpec{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// nodes starts n independent redis-servers (Redlock's masters).
func nodes(t *testing.T, n int) []*redis.Client {
	t.Helper()
	var out []*redis.Client
	for i := 0; i < n; i++ {
		out = append(out, node(t))
	}
	return out
}

func newLock(t *testing.T, name string, rdb *redis.Client, owner string, ttl time.Duration, given map[string]string) locks.Locker {
	t.Helper()
	return newLockOn(t, name, []*redis.Client{rdb}, owner, ttl, given)
}

// newLockOn builds one client's lock over the given nodes.
func newLockOn(t *testing.T, name string, rdbs []*redis.Client, owner string, ttl time.Duration, given map[string]string) locks.Locker {
	t.Helper()
	spec, err := locks.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	opts := decode(t, spec, given, ttl)
	l, err := spec.New(locks.Config{Nodes: rdbs, TTL: ttl, Owner: owner, Options: opts, Rand: rand.New(rand.NewPCG(1, uint64(len(owner))))})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// decode decodes the options given to spec's lock, as a run does: the value
// for Config.Options.
func decode(t *testing.T, spec locks.Spec, given map[string]string, ttl time.Duration) any {
	t.Helper()
	opts, _, err := spec.Decode(given, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// contractOptions are the options under which each lock is checked against
// the basic contract: one node, a lease that just expires.
var contractOptions = map[string]map[string]string{
	"setnx-expire":       nil,
	"set-nx-px":          nil,
	"token-lua":          nil,
	"fenced":             nil,
	"token-lua-wait":     nil,
	"redlock":            nil,
	"redsync":            nil,
	"redislock":          nil,
	"lua":                {"file": "lua/token.lua"},
	"reentrant-watchdog": {"lease-time": "1ttl"}, // no watchdog: the lease must run out
}

// Every lock: exclusive while held, free after release, "not held" when
// released twice, and free again once the TTL ran out.
func TestEveryLockBasicContract(t *testing.T) {
	ctx := context.Background()
	for _, spec := range locks.All() {
		// The locks of other stores check the same contract against their
		// own servers (etcd_mutex_test.go, zk_lock_test.go, pg_test.go).
		if spec.Store != "redis" {
			continue
		}
		// An adapter lock's contract is adapter check's
		// (adaptercheck/check_test.go, and CI for each shipped one).
		if spec.Adapter != nil {
			continue
		}
		if _, ok := contractOptions[spec.Name]; !ok {
			t.Errorf("lock %s is not in contractOptions: add it so its basic contract is checked", spec.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(contractOptions)) {
		t.Run(name, func(t *testing.T) {
			rdb := node(t)
			ttl := 200 * time.Millisecond
			a := newLock(t, name, rdb, "a", ttl, contractOptions[name])
			b := newLock(t, name, rdb, "bb", ttl, contractOptions[name])
			la, err := a.Acquire(ctx, "k")
			if err != nil {
				t.Fatalf("a acquire: %v", err)
			}
			if _, err := b.Acquire(ctx, "k"); !errors.Is(err, locks.ErrNotAcquired) {
				t.Fatalf("b acquired a held lock: %v", err)
			}
			if pttl := rdb.PTTL(ctx, "k").Val(); pttl <= 0 || pttl > ttl {
				t.Errorf("lock key PTTL %v, want within (0, %v]", pttl, ttl)
			}
			if err := a.Release(ctx, la); err != nil {
				t.Fatalf("a release: %v", err)
			}
			if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
				t.Errorf("second release: %v, want ErrNotHeld", err)
			}
			if _, err := b.Acquire(ctx, "k"); err != nil {
				t.Fatalf("b acquire after release: %v", err)
			}
			time.Sleep(ttl + 50*time.Millisecond)
			if _, err := a.Acquire(ctx, "k"); err != nil {
				t.Errorf("a acquire after b's lease expired: %v", err)
			}
		})
	}
}

// The seeds' flaw, kept faithfully: a plain DEL frees whoever holds the lock.
func TestDelReleaseRemovesTheNextHoldersLock(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"setnx-expire", "set-nx-px"} {
		t.Run(name, func(t *testing.T) {
			rdb := node(t)
			ttl := 100 * time.Millisecond
			a := newLock(t, name, rdb, "a", ttl, nil)
			b := newLock(t, name, rdb, "bb", ttl, nil)
			la, _ := a.Acquire(ctx, "k")
			time.Sleep(ttl + 30*time.Millisecond)
			if _, err := b.Acquire(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if err := a.Release(ctx, la); err != nil {
				t.Fatalf("a's late release: %v (it deletes b's lock and reports success)", err)
			}
			if n := rdb.Exists(ctx, "k").Val(); n != 0 {
				t.Error("b's lock survived a's late DEL")
			}
		})
	}
}

func TestTokenLuaLateReleaseLeavesTheNextHolderAlone(t *testing.T) {
	ctx := context.Background()
	rdb := node(t)
	ttl := 100 * time.Millisecond
	a := newLock(t, "token-lua", rdb, "a", ttl, nil)
	// b's lease outlasts what follows its acquire by far, on a busy
	// machine too: only a's is meant to run out.
	b := newLock(t, "token-lua", rdb, "bb", 20*ttl, nil)
	la, _ := a.Acquire(ctx, "k")
	time.Sleep(ttl + 30*time.Millisecond)
	lb, err := b.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a's late release: %v, want ErrNotHeld", err)
	}
	if _, err := a.(locks.Renewer).Renew(ctx, la); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a's late renewal: %v, want ErrNotHeld", err)
	}
	if _, err := b.(locks.Renewer).Renew(ctx, lb); err != nil {
		t.Errorf("b's renewal: %v", err)
	}
	if rdb.Get(ctx, "k").Val() != lb.Token {
		t.Error("b's lock is gone after a's late release")
	}
}

// A client that dies between SETNX and EXPIRE leaves a key with no expiry.
func TestSetnxExpireGapLeavesAKeyWithoutExpiry(t *testing.T) {
	rdb := node(t)
	l := newLock(t, "setnx-expire", rdb, "a", 100*time.Millisecond, map[string]string{"gap": "300ms"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	go l.Acquire(ctx, "k") // its EXPIRE comes after the context ended: it never runs
	time.Sleep(150 * time.Millisecond)
	if pttl := rdb.PTTL(context.Background(), "k").Val(); pttl != -1 {
		t.Errorf("PTTL during the gap = %v, want -1 (no expiry)", pttl)
	}
}

func TestLookupListsKnownLocks(t *testing.T) {
	_, err := locks.Lookup("nope")
	if err == nil || !strings.Contains(err.Error(), `unknown lock "nope"; known locks: `) || !strings.Contains(err.Error(), "token-lua") {
		t.Errorf("Lookup error = %v", err)
	}
}

// Every lock's defaults decode into what its New takes; a bad value is
// refused by decoding, with an error that names the lock and the key.
func TestLockOptions(t *testing.T) {
	ttl := time.Second
	for _, spec := range locks.All() {
		opts, used, err := spec.Decode(nil, ttl)
		if err != nil {
			t.Errorf("%s: defaults: %v", spec.Name, err)
			continue
		}
		if len(used) != len(spec.OptionSpecs()) {
			t.Errorf("%s: defaults used %v, want one value for each of %v", spec.Name, used, spec.OptionSpecs())
		}
		_, err = spec.New(locks.Config{TTL: ttl, Owner: "check", Options: opts, Rand: rand.New(rand.NewPCG(1, 1))})
		if spec.Name == "lua" { // its file has no default
			if err == nil || !strings.Contains(err.Error(), "lua.file is required") {
				t.Errorf("lua without a file: %v", err)
			}
		} else if err != nil {
			t.Errorf("%s with its defaults: %v", spec.Name, err)
		}
	}
	for _, tc := range []struct {
		lock, key, value string
		want             string // in the error; by default the decoder's LOCK.KEY="VALUE"
	}{
		{lock: "redlock", key: "drift-factor", value: "2"},
		{lock: "redlock", key: "parallel", value: "maybe"},
		{lock: "redlock", key: "node-timeout", value: "soon"},
		{lock: "redlock", key: "node-timeout", value: "0s", want: "redlock: node-timeout: want a positive duration"},
		{lock: "redsync", key: "tries", value: "x"},
		{lock: "redsync", key: "tries", value: "0"},
		{lock: "redsync", key: "retry-delay", value: "soon"},
		{lock: "redsync", key: "drift-factor", value: "-0.1"},
		{lock: "redsync", key: "timeout-factor", value: "1"},
		{lock: "redsync", key: "setnx-on-extend", value: "yes please"},
		{lock: "redsync", key: "expiry", value: "1e300ttl"},
		{lock: "redsync", key: "expiry", value: "500us", want: "redsync: expiry: want at least 1ms"},
		{lock: "redislock", key: "retry", value: "nope"},
		{lock: "redislock", key: "limit", value: "-1"},
		{lock: "redislock", key: "min-backoff", value: "x"},
		{lock: "redislock", key: "backoff", value: "0s", want: "redislock: backoff: a linear strategy needs a positive interval"},
		{lock: "token-lua-wait", key: "numreplicas", value: "-1"},
		{lock: "token-lua-wait", key: "timeout", value: "x"},
		{lock: "setnx-expire", key: "gap", value: "x"},
		{lock: "reentrant-watchdog", key: "watchdog-timeout", value: "2ms", want: "reentrant-watchdog: watchdog-timeout: lease 2ms is too short"},
		{lock: "reentrant-watchdog", key: "lease-time", value: "1ms", want: "reentrant-watchdog: lease-time: lease 1ms is too short"},
		{lock: "reentrant-watchdog", key: "lease-time", value: "-1s"},
		{lock: "token-lua", key: "nope", value: "1", want: `token-lua has no option "nope"`},
	} {
		t.Run(tc.lock+"."+tc.key+"="+tc.value, func(t *testing.T) {
			spec, err := locks.Lookup(tc.lock)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == "" {
				want = fmt.Sprintf("option %s.%s=%q: ", tc.lock, tc.key, tc.value)
			}
			if _, _, err := spec.Decode(map[string]string{tc.key: tc.value}, ttl); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want one with %q", err, want)
			}
		})
	}
	// Values that decode become the fields New reads.
	opts := decode(t, mustLookup(t, "redsync"), map[string]string{"retry-delay": "0.02ttl", "tries": "3", "timeout-factor": "0.5"}, ttl)
	if o := opts.(*locks.RedsyncOptions); o.RetryDelay == nil || *o.RetryDelay != 20*ms || o.Tries != 3 || o.TimeoutFactor != 0.5 || o.Expiry != ttl {
		t.Errorf("redsync options %+v", o)
	}
	if o := decode(t, mustLookup(t, "redsync"), nil, ttl).(*locks.RedsyncOptions); o.RetryDelay != nil {
		t.Errorf("redsync's retry-delay is %v by default, want nil (the library's own)", *o.RetryDelay)
	}
}

func mustLookup(t *testing.T, name string) locks.Spec {
	t.Helper()
	spec, err := locks.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The locks a store names for others (its audit references, its fenced
// lock) are registered locks of that store, or, for a reference, a fenced
// one of another; the last reference and the fenced lock say they give out
// a fencing token (the resource's rejections of their stale writes are
// tested with the locks).
func TestEveryStoresNamedLocksExist(t *testing.T) {
	fences := func(name string) (locks.Spec, bool) {
		l, err := locks.Lookup(name)
		return l, err == nil && strings.Contains(strings.ToLower(l.Description), "fencing token")
	}
	for _, name := range cluster.StoreNames() {
		s, err := cluster.LookupStore(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.References) == 0 {
			t.Errorf("store %s names no reference locks for audit", name)
		}
		for i, r := range s.References {
			l, err := locks.Lookup(r)
			if err != nil {
				t.Errorf("store %s: reference %s: %v", name, r, err)
				continue
			}
			if _, fenced := fences(r); i == len(s.References)-1 && !fenced {
				t.Errorf("store %s: the last reference %s gives out no fencing token (its description does not say so)", name, r)
			} else if i == 0 && l.Store != name {
				t.Errorf("store %s: its first reference %s keeps its state in %s", name, r, l.Store)
			}
		}
		if s.Fenced == "" {
			continue
		}
		if l, fenced := fences(s.Fenced); !fenced || l.Store != name {
			t.Errorf("store %s: its fenced lock %q is not a lock of the store that says it gives out a fencing token", name, s.Fenced)
		}
	}
}
