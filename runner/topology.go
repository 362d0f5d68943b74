package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/redis/go-redis/v9"
)

// topology is what a run starts before its workers, beyond the nodes
// themselves: the store's ensemble (for Redis, each lock node's
// replication group, the sentinels and the nodes' clocks).
type topology struct {
	ensemble cluster.Ensemble
}

// sentinels are the run's sentinels: Redis's, when it has any.
func (r *run) sentinels() []cluster.Sentinel {
	if rep := r.topo.replicated(); rep != nil {
		return rep.Sentinels()
	}
	return nil
}

// replicated is the ensemble as Redis's (groups, sentinels, clocks), or
// nil for another store's.
func (t topology) replicated() cluster.Replicated {
	rep, _ := t.ensemble.(cluster.Replicated)
	return rep
}

// shape is the run's topology as the nemeses see it.
func shape(c settings.Run, lockNodes int, lock locks.Spec) nemesis.Topology {
	quorum := 1
	if lock.Quorum {
		quorum = lockNodes/2 + 1
	}
	return nemesis.Topology{
		Topology: c.Topology, Workload: c.Workload, Lock: c.Lock, Store: lock.Store, LockNodes: lockNodes, Quorum: quorum,
		Leaseless: lock.Leaseless, KeyPrefix: lock.KeyPrefix, KeepsAlive: lock.KeepsAlive, Renews: c.Renew || c.Reentry > 0 || lock.Reentrant,
		Cancels: lock.Adapter == nil || lock.Adapter.Cancel,
		Adapter: adapterLanguage(lock),
	}
}

// aof maps --persistence to the nodes' appendfsync.
func aof(persistence string) string {
	if persistence == "none" {
		return ""
	}
	return persistence
}

// startTopology starts the lock's store (for Redis, its lock nodes, each
// a primary and --replicas replicas that replicate through their own
// relays, and the sentinels), the resource node, and every client's link
// to every lock node. Everything it started is in r.nodes and r.topo, for
// stopTopology. It returns each client's lock node addresses (its links)
// and the resource node.
func (r *run) startTopology(ctx context.Context, backend cluster.Backend, rs resolved) ([][]string, cluster.Node, error) {
	name := rs.lock.Store
	store, err := cluster.LookupStore(name)
	if err != nil {
		return nil, nil, err
	}
	clocks := false
	for _, n := range rs.nemeses {
		if s, err := nemesis.Lookup(n.Name); err == nil && s.NodeClock {
			clocks = true
		}
	}
	e, err := store.Start(ctx, backend, cluster.EnsembleSpec{
		Members: r.cfg.Nodes, Lease: r.cfg.TTL, Replicas: r.cfg.Replicas, Sentinels: r.cfg.Sentinels, AOF: aof(r.cfg.Persistence),
		FailoverTimeout: 2 * r.cfg.Duration, Clocks: clocks, Relays: r.proxies, Pooler: r.cfg.Pooler,
		ServerVersion: r.cfg.ServerVersion,
	})
	if err != nil {
		return nil, nil, settings.StartError{Err: fmt.Errorf("start the %s ensemble: %w", name, err)}
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
		if !r.cfg.Direct && len(r.sentinels()) > 0 {
			view, err := r.sentinelView(c)
			if err != nil {
				return nil, nil, err
			}
			r.sentinelViews = append(r.sentinelViews, view)
		}
	}
	return resource, addrs, nil
}

// sentinelView gives client c its own link to every member of every lock
// node, for a client that asks the sentinels for the primary and connects
// to it itself (locks.Sentinels): the failover nemeses leave these links
// where they lead, and a fault on the client's links to a lock node acts
// on them too.
func (r *run) sentinelView(c int) (*locks.Sentinels, error) {
	v := &locks.Sentinels{NAT: map[string]string{}}
	for _, s := range r.sentinels() {
		v.Addrs = append(v.Addrs, s.Addr())
	}
	for _, g := range r.topo.replicated().Groups() {
		v.Masters = append(v.Masters, g.Name)
		for _, m := range g.Members() {
			l, err := r.proxies.AddMember(c, g.Index, m.Name(), m.Addr())
			if err != nil {
				return nil, err
			}
			v.NAT[m.Addr()] = l.Addr()
		}
	}
	return v, nil
}

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

// stopTopology keeps the sentinels' logs (how each saw the failover), and
// closes the ensemble: it stops the sentinels and removes the clock files;
// the nodes are stopped with r.nodes.
func (r *run) stopTopology() error {
	if r.topo.ensemble == nil {
		return nil
	}
	var errs []error
	for _, s := range r.sentinels() {
		errs = append(errs, r.keepLog(s.Log(), "sentinels", s.Name()))
	}
	return errors.Join(append(errs, r.topo.ensemble.Close())...)
}

// currentLockNodes are the lock nodes' primaries now (after any failover).
// lockServers are the servers of the lock's store, every member and
// replica: r.nodes but the resource node, which comes last.
func (r *run) lockServers() []cluster.Node { return r.nodes[:len(r.nodes)-1] }

func (r *run) currentLockNodes() []cluster.Node {
	if r.topo.ensemble == nil {
		return nil
	}
	return r.topo.ensemble.Serving()
}

// preflight lets the lock find a mistake in its own input against the real
// nodes before any worker starts (locks.Preflighter): a Lua script that
// does not compile is a usage error now, not a run in which nothing was
// ever held.
func (r *run) preflight(ctx context.Context, rs resolved) error {
	p, ok := rs.probe.(locks.Preflighter)
	if !ok || r.topo.replicated() == nil {
		return nil
	}
	var clients []*redis.Client
	for _, n := range r.currentLockNodes() {
		c := cluster.RedisClient(n.Addr())
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

// adapterLanguage is the language of lock's adapter ("adapter" when its
// manifest names none), "" for a lock written in Go.
func adapterLanguage(lock locks.Spec) string {
	switch {
	case lock.Adapter == nil:
		return ""
	case lock.Adapter.Language == "":
		return "adapter"
	}
	return lock.Adapter.Language
}
