package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/redis/go-redis/v9"
)

// Group is one lock node's replication group: a primary and its replicas.
// Every member replicates, when it is a replica, through its own relay (a
// proxy whose upstream is the current primary), so a nemesis can cut or
// delay replication alone, and a member demoted after a failover replicates
// through its relay like the others. Clients never see a Group: their links
// to the lock node are pointed at whichever member is the primary.
type Group struct {
	Index int    // the lock node
	Name  string // what sentinels call it: "lock0", …

	mu      sync.Mutex
	members []cluster.Node
	relays  []*proxy.Link
	primary int
}

// NewGroup makes the group of lock node index: members[0] is the primary,
// relays[k] is member k's relay.
func NewGroup(index int, members []cluster.Node, relays []*proxy.Link) *Group {
	return &Group{Index: index, Name: fmt.Sprintf("lock%d", index), members: members, relays: relays}
}

// Primary returns the current primary and its member index.
func (g *Group) Primary() (int, cluster.Node) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.primary, g.members[g.primary]
}

// Members returns every member, in member order.
func (g *Group) Members() []cluster.Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]cluster.Node(nil), g.members...)
}

// Replicas returns the member indices that are not the primary.
func (g *Group) Replicas() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int
	for m := range g.members {
		if m != g.primary {
			out = append(out, m)
		}
	}
	return out
}

// Relay is member m's replication link.
func (g *Group) Relay(m int) *proxy.Link {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.relays[m]
}

// prepare makes node start a full synchronisation at once when it is the
// primary, instead of after Redis 7's default 5 s wait for more replicas. A
// restarted node forgets it, so Attach sets it every time, on both ends.
func prepare(ctx context.Context, n cluster.Node) error {
	if _, err := redisDo(ctx, n.Addr(), "CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
		return fmt.Errorf("configure redis node %s for replication: %w", n.Name(), err)
	}
	return nil
}

// Attach makes member m a replica of the current primary, through its relay.
func (g *Group) Attach(ctx context.Context, m int) error {
	g.mu.Lock()
	primary, relay, node := g.members[g.primary], g.relays[m], g.members[m]
	g.mu.Unlock()
	if err := errors.Join(prepare(ctx, primary), prepare(ctx, node)); err != nil {
		return err
	}
	if relay.Upstream() != primary.Addr() {
		if err := relay.SetUpstream(primary.Addr()); err != nil {
			return err
		}
	}
	_, port, _ := net.SplitHostPort(relay.Addr())
	if _, err := redisDo(ctx, node.Addr(), "REPLICAOF", "127.0.0.1", port); err != nil {
		return fmt.Errorf("make redis node %s a replica of %s through relay %s: %w", node.Name(), primary.Name(), relay.Name, err)
	}
	return nil
}

// Promote makes member m the primary, as an operator would after the
// primary died: REPLICAOF NO ONE, then every relay points at it, so the
// other replicas (which replicate from their relay) follow at once.
func (g *Group) Promote(ctx context.Context, m int) error {
	node := g.Members()[m]
	if _, err := redisDo(ctx, node.Addr(), "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("promote redis node %s (REPLICAOF NO ONE): %w", node.Name(), err)
	}
	return g.adopt(m)
}

// Adopt records that the member at addr became the primary by someone
// else's decision (Sentinel's), and points every relay at it.
func (g *Group) Adopt(addr string) (int, error) {
	for m, n := range g.Members() {
		if n.Addr() == addr {
			return m, g.adopt(m)
		}
	}
	return -1, fmt.Errorf("replication group %s has no member at %s", g.Name, addr)
}

func (g *Group) adopt(m int) error {
	g.mu.Lock()
	g.primary = m
	addr := g.members[m].Addr()
	relays := append([]*proxy.Link(nil), g.relays...)
	g.mu.Unlock()
	var errs []error
	for _, r := range relays {
		if r.Upstream() != addr {
			errs = append(errs, r.SetUpstream(addr))
		}
	}
	return errors.Join(errs...)
}

// WaitSynced waits until every replica streams from the primary: its link
// is up, and a write on the primary is acknowledged by all of them (WAIT).
// The link alone is not enough: after a diskless full synchronisation the
// primary holds the stream back until the replica's first acknowledgement,
// which can come up to a second later, and a failover in that second would
// find the replicas behind although replication looks healthy.
func (g *Group) WaitSynced(ctx context.Context) error {
	replicas := g.Replicas()
	for _, m := range replicas {
		n := g.Members()[m]
		for {
			info, err := redisDo(ctx, n.Addr(), "INFO", "replication")
			s, _ := info.(string)
			if err == nil && strings.Contains(s, "master_link_status:up") && !strings.Contains(s, "master_sync_in_progress:1") {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("replica %s of %s did not synchronise: %w (last INFO error: %v)", n.Name(), g.Name, ctx.Err(), err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if len(replicas) == 0 {
		return nil
	}
	_, primary := g.Primary()
	c := redis.NewClient(&redis.Options{Addr: primary.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true, ReadTimeout: -1})
	defer c.Close()
	for {
		// PUBLISH replicates without touching the keyspace; WAIT, on the
		// same connection, waits for the replicas to acknowledge it.
		var wait *redis.Cmd
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Publish(ctx, "lockchaos:sync", "1")
			wait = p.Do(ctx, "WAIT", len(replicas), 500)
			return nil
		})
		if n, _ := wait.Int(); err == nil && n >= len(replicas) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the replicas of %s did not acknowledge a write of %s: %w (last error: %v)", g.Name, primary.Name(), ctx.Err(), err)
		}
	}
}

// redisDo sends one command to a node directly (control traffic, never
// through a client's link) and returns the reply.
func redisDo(ctx context.Context, addr string, args ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})
	defer c.Close()
	return c.Do(ctx, args...).Result()
}

// Relays returns the relays of the given members.
func (g *Group) Relays(members []int) []*proxy.Link {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*proxy.Link
	for _, m := range members {
		out = append(out, g.relays[m])
	}
	return out
}

// groupOf is lock node n's replication group, or nil (also when the run's
// environment has no replication groups).
func groupOf(env Env, n int) *Group {
	repl, err := replicationOf(env)
	if err != nil {
		return nil
	}
	if gs := repl.Groups(); n < len(gs) {
		return gs[n]
	}
	return nil
}
