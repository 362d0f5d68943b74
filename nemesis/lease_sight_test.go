package nemesis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/redis/go-redis/v9"
)

// nodesEnv is fakeEnv with real lock nodes.
type nodesEnv struct {
	*fakeEnv
	nodes []cluster.Node
}

func (e nodesEnv) LockNodes() []cluster.Node { return e.nodes }

// localNode starts a redis-server, stopped when the test ends.
func localNode(t *testing.T, name string) cluster.Node {
	t.Helper()
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	node, err := local.StartNode(context.Background(), cluster.NodeSpec{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Stop() })
	return node
}

// patientClient is a client of addr that waits up to 10 s for a reply, as
// a test's own commands may on a busy machine (cluster.RedisClient's wait
// 2 s), and never sends a command twice.
func patientClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
		DialTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
}

// The lease left at a grant is read on the lock's nodes even when it ran
// out there before the acquire returned — as a lock that asks its nodes
// one after another holds it under late replies, each node's lease set a
// delay after the last (issue 42.9). Asked only after the grant, the node
// no longer has the key, and nothing was read of the lease: slow-reply fell
// back to the bound at the latest reply (the lease less one delay), which
// called such a lease long enough for the hold. Seen while the acquire was
// in flight, the node says when it ran out: before the grant.
func TestTheLeaseLeftIsReadOnTheNodesWhileTheAcquireIsInFlight(t *testing.T) {
	t.Parallel()
	node := localNode(t, "sight")
	env := nodesEnv{newFakeEnv(), []cluster.Node{node}}
	ctx := context.Background()
	c := patientClient(node.Addr())
	defer c.Close()

	// sight sets a 500 ms lease and grants it once it ran out on the node;
	// it says why the run was no evidence ("" when it was).
	var seen *leaseSight
	var invoked, granted int64
	sight := func() string {
		var stop func()
		seen, stop = watchLease(ctx, env, "lock:0")
		defer stop()
		invoked = history.Now()
		if err := c.Set(ctx, "lock:0", "tok-1", 500*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			n, err := c.Exists(ctx, "lock:0").Result()
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a 500 ms lease still on the node after 10 s")
			}
		}
		time.Sleep(100 * time.Millisecond) // it ran out on the node, then the grant comes
		granted = history.Now()
		stop()
		// The watcher reads every hundredth of the TTL; a busy machine
		// may keep it from reading the key in its 500 ms, or delay its
		// clock reading past the grant.
		switch expiry, saw := seen.expiry(0, "tok-1", invoked); {
		case !saw:
			return "the watcher never read the key while it lived"
		case expiry >= granted:
			return fmt.Sprintf("the watcher's read of the key was taken %v after the grant", time.Duration(expiry-granted))
		}
		return ""
	}
	for attempt := 1; ; attempt++ {
		why := sight()
		if why == "" {
			break
		}
		if attempt == 3 {
			t.Fatalf("no evidence in %d attempts: %s", attempt, why)
		}
		t.Logf("no evidence (%s); running it again", why)
	}
	h := Holding{Client: 0, Key: "lock:0", Token: "tok-1", Invoked: invoked, OK: granted}

	if _, ok := leaseLeftAtGrant(ctx, env, h, nil); ok {
		t.Errorf("asked only after the grant, the node said something of a lease it no longer has")
	}
	left, ok := leaseLeftAtGrant(ctx, env, h, seen)
	if !ok || left != 0 {
		t.Errorf("lease left at the grant %v (read %v), want 0: it ran out on the node before the grant", left, ok)
	}
	// Another lease's mark, or one seen only before the acquire, is not it.
	if _, ok := leaseLeftAtGrant(ctx, env, Holding{Key: "lock:0", Token: "tok-2", Invoked: invoked, OK: granted}, seen); ok {
		t.Errorf("a lease the node never held was read")
	}
	if _, ok := leaseLeftAtGrant(ctx, env, Holding{Key: "lock:0", Token: "tok-1", Invoked: granted, OK: granted}, seen); ok {
		t.Errorf("a lease seen before its acquire was invoked was taken for it")
	}
}
