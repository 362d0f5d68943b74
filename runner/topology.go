package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/redis/go-redis/v9"
)

// topology is what a run starts before its workers, beyond the nodes
// themselves: each lock node's replication group, the sentinels, and the
// clock files of nodes that run under the clock shim.
type topology struct {
	// ensemble is the store's one ensemble, for a lock whose store is not
	// redis (it has no groups, sentinels or clocks).
	ensemble  cluster.Ensemble
	groups    []*nemesis.Group
	sentinels []cluster.Sentinel
	clocks    map[cluster.Node]*cluster.Clock
	clockDir  string
}

// shape is the run's topology as the nemeses see it.
func shape(c settings.Run, lockNodes int, lock locks.Spec) nemesis.Topology {
	quorum := 1
	if lock.Quorum {
		quorum = lockNodes/2 + 1
	}
	return nemesis.Topology{
		Topology: c.Topology, Workload: c.Workload, Lock: c.Lock, Store: lock.StoreName(), LockNodes: lockNodes, Quorum: quorum,
		Leaseless: lock.Leaseless, KeyPrefix: lock.KeyPrefix, KeepsAlive: lock.KeepsAlive, Renews: c.Renew || c.Reentry > 0 || lock.Reentrant,
	}
}

// aof maps --persistence to the nodes' appendfsync.
func aof(persistence string) string {
	if persistence == "none" {
		return ""
	}
	return persistence
}

// startTopology starts the lock nodes (each a primary and --replicas
// replicas that replicate through their own relays), the resource node,
// every client's link to every lock node, and the sentinels. Everything it
// started is in r.nodes and r.topo, for stopTopology. It returns each
// client's lock node addresses (its links) and the resource node.
func (r *run) startTopology(ctx context.Context, backend cluster.Backend, rs resolved) ([][]string, cluster.Node, error) {
	if rs.lock.StoreName() != cluster.StoreRedis {
		return r.startStore(ctx, backend, rs.lock.StoreName())
	}
	nemeses := rs.nemeses
	var shim string
	for _, n := range nemeses {
		if s, err := nemesis.Lookup(n.Name); err == nil && s.NodeClock && shim == "" {
			var err error
			if shim, err = cluster.ClockShim(); err != nil {
				return nil, nil, err
			}
			if r.topo.clockDir, err = os.MkdirTemp("", "lockchaos-clocks-"); err != nil {
				return nil, nil, fmt.Errorf("make a directory for the clock files: %w", err)
			}
		}
	}
	r.topo.clocks = map[cluster.Node]*cluster.Clock{}
	for i := 0; i < r.cfg.Nodes; i++ {
		var members []cluster.Node
		for m := 0; m <= r.cfg.Replicas; m++ {
			name := fmt.Sprintf("n%d", i)
			if m > 0 {
				name = fmt.Sprintf("n%dr%d", i, m)
			}
			spec := cluster.NodeSpec{Name: name, AOF: aof(r.cfg.Persistence)}
			var clock *cluster.Clock
			if shim != "" {
				var err error
				if clock, err = cluster.NewClock(filepath.Join(r.topo.clockDir, name+".clock")); err != nil {
					return nil, nil, err
				}
				spec.ClockShim, spec.ClockFile = shim, clock.Path()
			}
			n, err := backend.StartNode(ctx, spec)
			if err != nil {
				return nil, nil, err
			}
			r.nodes = append(r.nodes, n)
			members = append(members, n)
			if clock != nil {
				r.topo.clocks[n] = clock
			}
		}
		g, err := r.startGroup(ctx, i, members)
		if err != nil {
			return nil, nil, err
		}
		r.topo.groups = append(r.topo.groups, g)
	}
	resource, addrs, err := r.startResourceAndLinks(ctx, backend)
	if err != nil {
		return nil, nil, err
	}
	if err := r.startSentinels(ctx, backend); err != nil {
		return nil, nil, err
	}
	return addrs, resource, nil
}

// startStore starts the ensemble of a lock whose store is not redis, the
// resource node (always a redis-server: the resource is the same for every
// lock), and every client's link to every serving member.
func (r *run) startStore(ctx context.Context, backend cluster.Backend, name string) ([][]string, cluster.Node, error) {
	store, err := cluster.LookupStore(name)
	if err != nil {
		return nil, nil, err
	}
	e, err := store.Start(ctx, backend, cluster.EnsembleSpec{Members: r.cfg.Nodes})
	if err != nil {
		return nil, nil, fmt.Errorf("start the %s ensemble: %w", name, err)
	}
	r.topo.ensemble = e
	r.nodes = append(r.nodes, e.Members()...)
	resource, addrs, err := r.startResourceAndLinks(ctx, backend)
	return addrs, resource, err
}

// startResourceAndLinks starts the resource node and gives every client a
// link (its own proxy) to every lock node, in lock-node order, unless the
// run is --direct.
func (r *run) startResourceAndLinks(ctx context.Context, backend cluster.Backend) (cluster.Node, [][]string, error) {
	resource, err := backend.StartNode(ctx, cluster.NodeSpec{Name: "resource"})
	if err != nil {
		return nil, nil, err
	}
	r.nodes = append(r.nodes, resource)
	addrs := make([][]string, r.cfg.Clients)
	for c := 0; c < r.cfg.Clients; c++ {
		for i, n := range r.currentLockNodes() {
			if r.cfg.Direct {
				addrs[c] = append(addrs[c], n.Addr())
				continue
			}
			l, err := r.proxies.Add(c, i, n.Addr())
			if err != nil {
				return nil, nil, err
			}
			addrs[c] = append(addrs[c], l.Addr())
		}
	}
	return resource, addrs, nil
}

// startGroup gives every member of lock node i a relay and makes the
// replicas replicate from the primary through theirs.
func (r *run) startGroup(ctx context.Context, i int, members []cluster.Node) (*nemesis.Group, error) {
	relays := make([]*proxy.Link, 0, len(members))
	for _, n := range members {
		l, err := r.proxies.AddRelay("repl-"+n.Name(), i, members[0].Addr())
		if err != nil {
			return nil, err
		}
		relays = append(relays, l)
	}
	g := nemesis.NewGroup(i, members, relays)
	if len(members) == 1 {
		return g, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for m := 1; m < len(members); m++ {
		if err := g.Attach(ctx, m); err != nil {
			return nil, err
		}
	}
	if err := g.WaitSynced(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// startSentinels starts --sentinels sentinels (containers on the docker
// backend, redis-sentinel processes on local) that watch every lock node's
// primary, and waits until each knows all the replicas and all the other
// sentinels: a sentinel that has not heard of the others cannot gather a
// majority to fail over.
func (r *run) startSentinels(ctx context.Context, backend cluster.Backend) error {
	if r.cfg.Sentinels == 0 {
		return nil
	}
	var monitors []cluster.Monitor
	for _, g := range r.topo.groups {
		_, primary := g.Primary()
		monitors = append(monitors, cluster.Monitor{Name: g.Name, Addr: primary.Addr(), Quorum: r.cfg.Sentinels/2 + 1})
	}
	for k := 0; k < r.cfg.Sentinels; k++ {
		s, err := cluster.StartSentinel(ctx, backend, cluster.SentinelSpec{
			Name: fmt.Sprintf("sentinel%d", k), Masters: monitors,
			DownAfter: sentinelDownAfter,
			// Longer than the run: Sentinel would otherwise, after this
			// long, re-point replicas that replicate through a relay
			// straight at the primary.
			FailoverTimeout: max(2*r.cfg.Duration, time.Minute),
		})
		if err != nil {
			return err
		}
		r.topo.sentinels = append(r.topo.sentinels, s)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, s := range r.topo.sentinels {
		for _, g := range r.topo.groups {
			if err := awaitSentinel(ctx, s, g.Name, r.cfg.Replicas, r.cfg.Sentinels-1); err != nil {
				return fmt.Errorf("%w; its log is kept in %s", err, r.sentinelLog(s))
			}
		}
	}
	return nil
}

// sentinelDownAfter: how long a primary must be silent before a sentinel
// calls it down. Short, so a failover fits in a short run; not shorter,
// because Sentinel will not promote a replica that has been cut off from
// its primary for more than ten times this (plus the time the primary has
// been down), and the failover nemeses cut replication first, then wait
// for the step's client to acquire: with 250 ms, a cut of three seconds
// delayed the promotion by seconds.
const sentinelDownAfter = time.Second

func awaitSentinel(ctx context.Context, s cluster.Sentinel, name string, replicas, others int) error {
	var got string
	for {
		nr, err1 := sentinelCount(ctx, s.Addr(), "replicas", name)
		ns, err2 := sentinelCount(ctx, s.Addr(), "sentinels", name)
		if err1 == nil && err2 == nil && nr >= replicas && ns >= others {
			return nil
		}
		got = fmt.Sprintf("%d replicas, %d other sentinels (errors: %v)", nr, ns, errors.Join(err1, err2))
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinel %s did not discover %s's %d replicas and %d other sentinels: it knows %s", s.Name(), name, replicas, others, got)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func sentinelCount(ctx context.Context, addr, what, name string) (int, error) {
	reply, err := redisDo(ctx, addr, "SENTINEL", what, name)
	if err != nil {
		return 0, err
	}
	list, _ := reply.([]any)
	n := 0
	for _, e := range list {
		// Each entry is a flat list of field, value, … ; skip the ones a
		// sentinel already thinks are down or gone.
		fields, _ := e.([]any)
		down := false
		for j := 0; j+1 < len(fields); j += 2 {
			if fmt.Sprint(fields[j]) == "flags" {
				f := fmt.Sprint(fields[j+1])
				down = strings.Contains(f, "down") || strings.Contains(f, "disconnected")
			}
		}
		if !down {
			n++
		}
	}
	return n, nil
}

// redisDo sends one control command straight to a node or sentinel.
func redisDo(ctx context.Context, addr string, args ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	defer c.Close()
	return c.Do(ctx, args...).Result()
}

// sentinelLog is where a sentinel's log is kept after the run: in the run's
// directory, since the sentinel's own goes with it.
func (r *run) sentinelLog(s cluster.Sentinel) string { return r.keptLog("sentinels", s.Name()) }

// keptLog is where keepLog puts a log: OUT/kind/name.log.
func (r *run) keptLog(kind, name string) string {
	return filepath.Join(r.cfg.Out, kind, name+".log")
}

// keepLog copies a node's or sentinel's log into the run's directory
// before the process and its directory go: how it saw the run (a restart,
// a failover) stays with the run. A process that wrote no log is no error.
func (r *run) keepLog(src, kind, name string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return nil
	}
	dst := r.keptLog(kind, name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// stopTopology keeps the sentinels' logs (how each saw the failover), stops
// the sentinels and removes the clock files; the nodes are stopped with
// r.nodes.
func (r *run) stopTopology() error {
	var errs []error
	for _, s := range r.topo.sentinels {
		errs = append(errs, r.keepLog(s.Log(), "sentinels", s.Name()), s.Stop())
	}
	if r.topo.clockDir != "" {
		errs = append(errs, os.RemoveAll(r.topo.clockDir))
	}
	if r.topo.ensemble != nil {
		errs = append(errs, r.topo.ensemble.Close())
	}
	return errors.Join(errs...)
}

// currentLockNodes are the lock nodes' primaries now (after any failover).
// lockServers are the servers of the lock's store, every member and
// replica: r.nodes but the resource node, which comes last.
func (r *run) lockServers() []cluster.Node { return r.nodes[:len(r.nodes)-1] }

func (r *run) currentLockNodes() []cluster.Node {
	if r.topo.ensemble != nil {
		return r.topo.ensemble.Serving()
	}
	var out []cluster.Node
	for _, g := range r.topo.groups {
		_, n := g.Primary()
		out = append(out, n)
	}
	return out
}

// preflight lets the lock find a mistake in its own input against the real
// nodes before any worker starts (locks.Preflighter): a Lua script that
// does not compile is a usage error now, not a run in which nothing was
// ever held.
func (r *run) preflight(ctx context.Context, rs resolved) error {
	p, ok := rs.probe.(locks.Preflighter)
	if !ok || rs.lock.StoreName() != cluster.StoreRedis {
		return nil
	}
	var clients []*redis.Client
	for _, n := range r.currentLockNodes() {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
		defer c.Close()
		clients = append(clients, c)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Preflight(pctx, clients); err != nil {
		return settings.UsageError{Err: fmt.Errorf("lock %s: %w", rs.lock.Name, err)}
	}
	return nil
}
