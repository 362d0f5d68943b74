package nemesis

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/redis/go-redis/v9"
)

// startGroup starts a primary and n replicas on local redis-servers, each
// replica replicating through its relay.
func startGroup(t *testing.T, n int) (*cluster.Group, *proxy.Proxies) {
	t.Helper()
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	ps := proxy.New()
	t.Cleanup(ps.Close)
	var members []cluster.Node
	var relays []*proxy.Link
	for m := 0; m <= n; m++ {
		node, err := local.StartNode(context.Background(), cluster.NodeSpec{Name: "g" + string(rune('a'+m))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { node.Stop() })
		members = append(members, node)
	}
	for _, node := range members {
		l, err := ps.AddRelay("repl-"+node.Name(), 0, members[0].Addr())
		if err != nil {
			t.Fatal(err)
		}
		relays = append(relays, l)
	}
	g := cluster.NewGroup(0, members, relays)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for m := 1; m <= n; m++ {
		if err := g.Attach(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	return g, ps
}

func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// A write on the primary reaches a replica through its relay within
// milliseconds of WaitSynced, and a promoted replica takes writes while the
// other one follows it.
func TestGroupReplicatesThroughRelaysAndPromotes(t *testing.T) {
	t.Parallel()
	g, _ := startGroup(t, 2)
	ctx := context.Background()
	_, primary := g.Primary()
	members := g.Members()
	if err := client(t, primary.Addr()).Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, m := range []int{1, 2} {
		rc := client(t, members[m].Addr())
		for {
			if v, _ := rc.Get(ctx, "k").Result(); v == "1" {
				break
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("replica %s did not get the write within 10 s (offsets: primary %s, replica %s)", members[m].Name(),
					replOffset(ctx, primary.Addr(), "master_repl_offset"), replOffset(ctx, members[m].Addr(), "slave_repl_offset"))
			}
			time.Sleep(time.Millisecond)
		}
	}
	t.Logf("both replicas had the write %v after it", time.Since(start))

	// The primary dies; member 1 is promoted; member 2 follows it through
	// its relay without being told; the old primary comes back as a replica.
	if err := primary.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := g.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if m, p := g.Primary(); m != 1 || p != members[1] {
		t.Fatalf("primary is member %d after promoting 1", m)
	}
	if err := client(t, members[1].Addr()).Set(ctx, "k", "2", 0).Err(); err != nil {
		t.Fatalf("the promoted replica refuses writes: %v", err)
	}
	if err := primary.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Attach(ctx, 0); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := g.WaitSynced(wctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{0, 2} {
		if v, _ := client(t, members[m].Addr()).Get(ctx, "k").Result(); v != "2" {
			t.Errorf("member %s reads %q after the failover, want the new primary's 2", members[m].Name(), v)
		}
	}
}
