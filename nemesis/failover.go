package nemesis

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// Failover loses a lock the way asynchronous replication does: it cuts
// replication from the primary to its replicas, waits until a client
// acquires a lock on the primary (the key now exists there and nowhere
// else), kills the primary, and promotes a replica by hand (REPLICAOF NO
// ONE), the way an operator or a script would. Every client's link to the
// lock node is pointed at the promoted replica, so clients follow without
// knowing. The promoted replica never saw the key: the next client acquires
// a lock that is still held. With cut=none (replication healthy), the key
// reached the replica before the kill, and the lock survives. Healing
// restarts the old primary as a replica of the new one and restores
// replication. Needs --replicas 1 or more.
type Failover struct {
	onNode
	onVotes
	Cut      string        `opt:"cut" default:"all" oneof:"all,promoted,none" help:"replication cut before the acquire, in every lock node's group (Redis) or to the standby (PostgreSQL, MariaDB): all, promoted (only the replica that will be promoted) or none (replication stays healthy; a PostgreSQL standby replays all before its promotion). A consensus store has nothing to cut"`
	Duration time.Duration `opt:"duration" default:"3ttl" help:"how long after the promotion the old primary stays dead (then it restarts as a replica)"`
}

func init() {
	Register(Spec{
		Name:        "failover",
		Description: "Redis: cut replication, let a client acquire on the primary, kill it, promote a replica (needs --replicas); PostgreSQL, MariaDB: cut replication, let a client acquire, promote the standby; etcd, ZooKeeper, NATS, Hazelcast: kill the leader",
		Action:      history.ActionFailover,
		New:         func() Nemesis { return new(Failover) },
	})
}

// Applies: the run needs replicas to promote, and no sentinels to promote
// one too.
func (f *Failover) Applies(t Topology) error {
	if !t.OnRedis() {
		if s, err := cluster.LookupStore(t.Store); err == nil && !s.FailsOver {
			return fmt.Errorf("failover asks the store's ensemble to elect another leader or promote a standby, and %s's does neither", t.Store)
		}
		return f.onNode.Applies(t) // the store's ensemble fails over its own way
	}
	if t.Replicas < 1 {
		return errors.New("failover needs replicas to promote: add --replicas 1 (or more)")
	}
	if t.Sentinels > 0 {
		return errors.New("failover promotes a replica by hand, and the run's sentinels would promote one too: use failover-sentinel with --sentinels, or drop --sentinels")
	}
	return f.onNode.Applies(t)
}

func (f *Failover) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	if !env.Topology().OnRedis() {
		return f.storeFailover(ctx, env, step)
	}
	repl, err := replicationOf(env)
	if err != nil {
		return nil, err
	}
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	// The replica each group would promote is chosen before anything is
	// cut: cut=promoted cuts only that one.
	promote := map[*cluster.Group]int{}
	for _, g := range repl.Groups() {
		if rs := g.Replicas(); len(rs) > 0 {
			promote[g] = rs[env.Rand().IntN(len(rs))]
		}
	}
	cutOf := func(g *cluster.Group) []int {
		return map[string][]int{"all": g.Replicas(), "promoted": {promote[g]}, "none": nil}[f.Cut]
	}
	pre, err := prepareFailover(ctx, env, repl, step, failing{cut: f.Cut, votes: f.Votes, node: f.Node}, cutOf)
	if pre != nil && pre.missed != "" {
		return pre.cutOnly(), err
	}
	if err != nil {
		return pre.partial("replication cut", nil), err
	}
	g, i := pre.g, pre.g.Index
	old, oldNode := g.Primary()
	if len(g.Replicas()) == 0 {
		return pre.partial("replication cut", nil), fmt.Errorf("failover of lock node %d: it has no replicas (--replicas)", i)
	}
	if pre.letGo(env) {
		return pre.cutOnly(), nil
	}
	target := fmt.Sprintf("lock node %d: primary %s killed", i, oldNode.Name())
	killed := history.Now()
	if err := oldNode.Signal(syscall.SIGKILL); err != nil {
		return pre.partial(target+" (the kill failed)", nil), fmt.Errorf("failover of lock node %d: kill the primary %s: %w", i, oldNode.Name(), err)
	}
	pre.params["killed"] = oldNode.Name()
	newNode := g.Members()[promote[g]]
	if err := g.Promote(ctx, promote[g]); err != nil {
		return pre.partial(target+", no promotion", oldNode.Restart), fmt.Errorf("failover of lock node %d: %w", i, err)
	}
	pre.params["promoted"], pre.params["promoted-by"] = newNode.Name(), "REPLICAOF NO ONE"
	heal := func(ctx context.Context) error { return rejoin(ctx, g, old, oldNode.Restart, true) }
	target = fmt.Sprintf("lock node %d: primary %s killed, replica %s promoted", i, oldNode.Name(), newNode.Name())
	if err := redirect(net.Proxies(), i, newNode.Addr()); err != nil {
		return pre.partial(target, heal), fmt.Errorf("failover of lock node %d: %w", i, err)
	}
	fault := pre.partial(target, heal)
	fault.Effect, err = pre.effect(ctx, env, fmt.Sprintf("replica %s of lock node %d was primary %s after the kill", newNode.Name(), i, round(time.Duration(history.Now()-killed))))
	fault.Duration = time.Until(timeOf(killed).Add(f.Duration))
	return fault, err
}
