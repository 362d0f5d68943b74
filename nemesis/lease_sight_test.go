package nemesis

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
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

// The lease left at a grant is read on the lock's nodes even when it ran
// out there before the acquire returned — as a lock that asks its nodes
// one after another holds it under late replies, each node's lease set a
// delay after the last (issue 42.9). Asked only after the grant, the node
// no longer has the key, and nothing was read of the lease: slow-reply fell
// back to the bound at the latest reply (the lease less one delay), which
// called such a lease long enough for the hold. Seen while the acquire was
// in flight, the node says when it ran out: before the grant.
func TestTheLeaseLeftIsReadOnTheNodesWhileTheAcquireIsInFlight(t *testing.T) {
	node := localNode(t, "sight")
	env := nodesEnv{newFakeEnv(), []cluster.Node{node}}
	ctx := context.Background()

	seen, stop := watchLease(ctx, env, "lock:0")
	invoked := history.Now()
	c := cluster.RedisClient(node.Addr())
	defer c.Close()
	if err := c.Set(ctx, "lock:0", "tok-1", 50*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // it runs out on the node, then the grant comes
	granted := history.Now()
	stop()
	h := Holding{Client: 0, Key: "lock:0", Token: "tok-1", Invoked: invoked, OK: granted}

	if _, ok := leaseLeftAtGrant(ctx, env, h, nil); ok {
		t.Errorf("asked only after the grant, the node said something of a lease it no longer has")
	}
	left, ok := leaseLeftAtGrant(ctx, env, h, seen)
	if !ok || left != 0 {
		t.Errorf("lease left at the grant %v (read %v), want 0: it ran out on the node 100 ms before the grant", left, ok)
	}
	// Another lease's mark, or one seen only before the acquire, is not it.
	if _, ok := leaseLeftAtGrant(ctx, env, Holding{Key: "lock:0", Token: "tok-2", Invoked: invoked, OK: granted}, seen); ok {
		t.Errorf("a lease the node never held was read")
	}
	if _, ok := leaseLeftAtGrant(ctx, env, Holding{Key: "lock:0", Token: "tok-1", Invoked: granted, OK: granted}, seen); ok {
		t.Errorf("a lease seen before its acquire was invoked was taken for it")
	}
}
