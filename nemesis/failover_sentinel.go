package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// FailoverSentinel is failover with real Redis Sentinels deciding
// the promotion (--sentinels N, usually 3, quorum a majority): the nemesis
// cuts replication, waits for an acquire on the primary, kills it, and waits
// until the sentinels have elected a leader and promoted a replica. Clients
// do not use a sentinel-aware client: the coordinator asks the sentinels
// for the new primary (SENTINEL get-master-addr-by-name) and points every
// client's link at it, as a virtual IP that follows Sentinel would — so all
// of the run's per-link faults still apply to the clients. The replicas
// Sentinel reconfigures, and the old primary it converts when it comes
// back, then replicate directly, no longer through their relays. Sentinel
// refuses to fail the same primary over again within twice its failover
// timeout, so this nemesis injects once per run.
//
// With manual, nothing is killed and replication is not cut: the nemesis
// asks a sentinel for a manual failover (SENTINEL FAILOVER <name>, what an
// operator runs before maintenance) and waits until the sentinels name the
// promoted replica. The old primary is still a primary then — Sentinel
// converts it into a replica only seconds later — and the clients' links
// still point at it, as a client that has not yet followed the switch
// would: the step's client acquires there, on a primary that no longer
// replicates to anyone. Then the links follow Sentinel to the new primary,
// which never saw the key, and the next client acquires it (the write loss
// of redis/redis#6062).
type FailoverSentinel struct {
	onNode
	onVotes
	Cut      string        `opt:"cut" default:"all" oneof:"all,none" help:"replication cut, in every lock node's group, before the acquire: all or none (replication stays healthy); manual cuts nothing"`
	Duration time.Duration `opt:"duration" default:"3ttl" help:"how long after the promotion the old primary stays dead (then it restarts as a replica)"`
	Timeout  time.Duration `opt:"timeout" default:"20s" help:"how long the sentinels may take to promote a replica"`
	Manual   bool          `opt:"manual" default:"false" help:"a manual failover (SENTINEL FAILOVER) of a live, healthy primary instead of a kill: once the sentinels name the new primary, the step's client acquires on the old one, which still accepts writes, then the clients follow Sentinel (redis#6062); single-node locks"`

	done atomic.Bool
}

func init() {
	Register(Spec{
		Name:        "failover-sentinel",
		Description: "failover decided by redis-sentinel: cut replication, acquire on the primary, kill it, sentinels promote (needs --replicas, --sentinels)",
		Action:      history.ActionFailover,
		New:         func() Nemesis { return new(FailoverSentinel) },
	})
}

// Applies: the run needs replicas and sentinels to promote one.
func (f *FailoverSentinel) Applies(t Topology) error {
	if !t.OnRedis() {
		return fmt.Errorf("failover-sentinel: Redis Sentinel promotes Redis replicas, and lock %s keeps its state in %s: use failover, which fails %s over its own way", t.Lock, t.Store, t.Store)
	}
	if t.Replicas < 1 || t.Sentinels < 1 {
		return fmt.Errorf("failover-sentinel needs replicas and sentinels (this run: --replicas %d, --sentinels %d): use e.g. --replicas 2 --sentinels 3", t.Replicas, t.Sentinels)
	}
	if f.Manual && t.Quorum > 1 {
		return fmt.Errorf("failover-sentinel manual=true fails a node over before the hold it aims at, and a quorum lock's hold (%s) may not take that node: use it with a single-node lock", t.Lock)
	}
	return f.onNode.Applies(t)
}

func (f *FailoverSentinel) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	if f.done.Load() {
		return nil, ErrDone
	}
	if f.Manual {
		return f.manual(ctx, env, step)
	}
	repl, net, sentinels, err := sentinelsOf(env)
	if err != nil {
		return nil, err
	}
	cutOf := func(g *cluster.Group) []int {
		if f.Cut == "all" {
			return g.Replicas()
		}
		return nil
	}
	pre, err := prepareFailover(ctx, env, repl, step, failing{cut: f.Cut, votes: f.Votes, node: f.Node}, cutOf)
	if pre != nil && pre.missed != "" {
		return pre.cutOnly(), err
	}
	if err != nil {
		return pre.partial("replication cut", nil), err
	}
	g, i := pre.g, pre.g.Index
	if len(g.Replicas()) == 0 {
		return pre.partial("replication cut", nil), fmt.Errorf("failover-sentinel of lock node %d: it has no replicas", i)
	}
	if pre.letGo(env) {
		return pre.cutOnly(), nil
	}
	old, oldNode := g.Primary()
	f.done.Store(true)
	target := fmt.Sprintf("lock node %d: primary %s killed", i, oldNode.Name())
	killed := history.Now()
	if err := oldNode.Signal(syscall.SIGKILL); err != nil {
		return pre.partial(target+" (the kill failed)", nil), fmt.Errorf("failover-sentinel of lock node %d: kill the primary %s: %w", i, oldNode.Name(), err)
	}
	pre.params["killed"] = oldNode.Name()
	// Sentinel converts the old primary into a replica itself once it is
	// back, so healing only restarts it.
	restart := func(ctx context.Context) error { return rejoin(ctx, g, old, oldNode.Restart, false) }
	addr, err := awaitPromotion(ctx, sentinels, g.Name, oldNode.Addr(), f.Timeout)
	if err != nil {
		// Healing restarts the old primary, empty unless persisted, with
		// the clients still pointed at it: a crash-restart of its own.
		pre.params["promoted"] = "none yet after " + round(time.Duration(history.Now()-killed)).String()
		return pre.partial(target+", no promotion", restart), fmt.Errorf("failover-sentinel of lock node %d: %w", i, err)
	}
	pre.params["sentinel-decision"] = round(time.Duration(history.Now() - killed)).String()
	m, err := g.Adopt(addr)
	if err != nil {
		return pre.partial(target, restart), err
	}
	newNode := g.Members()[m]
	pre.params["promoted"], pre.params["promoted-by"] = newNode.Name(), fmt.Sprintf("%d sentinels", len(sentinels))
	target = fmt.Sprintf("lock node %d: primary %s killed, sentinels promoted %s", i, oldNode.Name(), newNode.Name())
	if err := redirect(net.Proxies(), i, addr); err != nil {
		return pre.partial(target, restart), fmt.Errorf("failover-sentinel of lock node %d: %w", i, err)
	}
	fault := pre.partial(target, restart)
	fault.Effect, err = pre.effect(ctx, env, fmt.Sprintf("the sentinels promoted %s %s after the kill", newNode.Name(), pre.params["sentinel-decision"]))
	fault.Duration = time.Until(timeOf(killed).Add(f.Duration))
	return fault, err
}

// awaitPromotion asks the sentinels, in turn, for the primary of name until
// one names another address than old.
func awaitPromotion(ctx context.Context, sentinels []string, name, old string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for k := 0; time.Now().Before(deadline); k++ {
		s := sentinels[k%len(sentinels)]
		reply, err := cluster.RedisDo(ctx, s, "SENTINEL", "get-master-addr-by-name", name)
		if err == nil {
			if hp, ok := reply.([]any); ok && len(hp) == 2 {
				addr := fmt.Sprintf("%v:%v", hp[0], hp[1])
				if addr != old {
					return addr, nil
				}
			}
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("the sentinels did not promote a replica of %s within %v (last error: %v); see the sentinel logs", name, timeout, last)
}

// manual is the manual=true failover (see FailoverSentinel): SENTINEL
// FAILOVER of a healthy primary, an acquire on the old primary once the
// sentinels have promoted a replica, then the clients follow Sentinel.
func (f *FailoverSentinel) manual(ctx context.Context, env Env, step Step) (*Fault, error) {
	_, net, sentinels, err := sentinelsOf(env)
	if err != nil {
		return nil, err
	}
	g := groupOf(env, f.Node.pick(env, step, nil))
	if g == nil || len(g.Replicas()) == 0 {
		return nil, fmt.Errorf("failover-sentinel manual: lock node %d has no replicas to promote", step.Node)
	}
	i := g.Index
	_, oldNode := g.Primary()
	params := map[string]string{"manual": "true", "cut": "none", "node": strconv.Itoa(i)}
	fault := &Fault{Params: params, Nodes: []int{i}, Start: history.Now(),
		Target: fmt.Sprintf("lock node %d: manual failover of primary %s", i, oldNode.Name())}
	f.done.Store(true)
	// A sentinel refuses while it does not yet see a replica it can
	// promote (NOGOODSLAVE) or another failover is on: ask again.
	deadline := time.Now().Add(f.Timeout)
	for {
		_, err = cluster.RedisDo(ctx, sentinels[0], "SENTINEL", "FAILOVER", g.Name)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fault, fmt.Errorf("failover-sentinel manual of lock node %d: SENTINEL FAILOVER %s: %w", i, g.Name, err)
	}
	asked := history.Now()
	addr, err := awaitPromotion(ctx, sentinels, g.Name, oldNode.Addr(), f.Timeout)
	if err != nil {
		params["promoted"] = "none yet after " + round(time.Duration(history.Now()-asked)).String()
		return fault, fmt.Errorf("failover-sentinel manual of lock node %d: %w", i, err)
	}
	promotedAt := history.Now()
	params["sentinel-decision"] = round(time.Duration(promotedAt - asked)).String()
	var newNode cluster.Node
	for _, n := range g.Members() {
		if n.Addr() == addr {
			newNode = n
		}
	}
	if newNode == nil {
		return fault, fmt.Errorf("failover-sentinel manual of lock node %d: the sentinels promoted %s, which is no member of %s", i, addr, g.Name)
	}
	params["promoted"], params["promoted-by"] = newNode.Name(), fmt.Sprintf("SENTINEL FAILOVER, %d sentinels", len(sentinels))
	fault.Target = fmt.Sprintf("lock node %d: manual failover, sentinels promoted %s; the clients stayed on %s", i, newNode.Name(), oldNode.Name())
	// The links still point at the old primary: the step's client's next
	// hold is taken there, after the promotion.
	a, err := aimAt(ctx, env, step, stretchBound(env))
	if err != nil {
		// No hold came: point the clients at the new primary anyway.
		_, aerr := g.Adopt(addr)
		return fault, errors.Join(err, aerr, redirect(net.Proxies(), i, addr))
	}
	fault.Aim = a.aim()
	fault.Heal = func(context.Context) error { return aRelease(a) }
	role, _ := cluster.RedisDo(ctx, oldNode.Addr(), "ROLE")
	if r, ok := role.([]any); ok && len(r) > 0 {
		params["old-primary-role"] = fmt.Sprint(r[0])
	}
	params["old-primary-had-key"] = fmt.Sprint(len(holdersOf(ctx, env, env.LockNodes(), a.Holding)) > 0)
	params["acquired-on-old-primary"] = fmt.Sprintf("client %d, %s, %s after the promotion", a.Client, a.Key, round(time.Duration(a.OK-promotedAt)))
	// Now the clients follow Sentinel, the way a sentinel-aware client
	// does on +switch-master or on its first READONLY error.
	if _, err := g.Adopt(addr); err != nil {
		return fault, err
	}
	if err := redirect(net.Proxies(), i, addr); err != nil {
		return fault, fmt.Errorf("failover-sentinel manual of lock node %d: %w", i, err)
	}
	// Whether the lease survived: the new primary never saw it. The holder
	// stays inside for its whole stretch, past the next client's acquire.
	after := holdersOf(ctx, env, env.LockNodes(), a.Holding)
	e := &history.Effect{Landed: true, Note: fmt.Sprintf("client %d acquired %s on the old primary %s after the sentinels had promoted %s, then the clients followed them; ", a.Client, a.Key, oldNode.Name(), newNode.Name())}
	if len(after) > 0 {
		e.Lease, e.Note = history.LeaseKept, e.Note+"the new primary had the key"
		fault.Effect = e
		return fault, a.release()
	}
	e.Lease, e.Note = history.LeaseLost, e.Note+"the new primary did not have the key"
	taker, err := a.throughBound(ctx)
	if taker >= 0 {
		e.Note += fmt.Sprintf("; client %d then acquired %s while client %d still held it", taker, a.Key, a.Client)
	} else {
		e.Note += fmt.Sprintf("; no other client acquired %s before client %d let go", a.Key, a.Client)
	}
	fault.Effect = e
	return fault, err
}

// sentinelsOf returns what a failover through Sentinel needs of the run:
// its replication groups, its links and its sentinels.
func sentinelsOf(env Env) (Replication, Links, []string, error) {
	repl, err := replicationOf(env)
	if err != nil {
		return nil, nil, nil, err
	}
	net, err := linksOf(env)
	if err != nil {
		return nil, nil, nil, err
	}
	sentinels := repl.Sentinels()
	if len(sentinels) == 0 {
		return nil, nil, nil, errors.New("failover-sentinel: the run has no sentinels")
	}
	return repl, net, sentinels, nil
}
