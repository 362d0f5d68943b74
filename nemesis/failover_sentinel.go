package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

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
type FailoverSentinel struct {
	onNode
	onVotes
	Cut      string        `opt:"cut" default:"all" oneof:"all,none" help:"replication cut, in every lock node's group, before the acquire: all or none (replication stays healthy)"`
	Duration time.Duration `opt:"duration" default:"3ttl" help:"how long after the promotion the old primary stays dead (then it restarts as a replica)"`
	Timeout  time.Duration `opt:"timeout" default:"20s" help:"how long the sentinels may take to promote a replica"`

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
	if t.Replicas < 1 || t.Sentinels < 1 {
		return fmt.Errorf("failover-sentinel needs replicas and sentinels (this run: --replicas %d, --sentinels %d): use e.g. --replicas 2 --sentinels 3", t.Replicas, t.Sentinels)
	}
	return f.onNode.Applies(t)
}

func (f *FailoverSentinel) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	if f.done.Load() {
		return nil, ErrDone
	}
	repl, err := replicationOf(env)
	if err != nil {
		return nil, err
	}
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	sentinels := repl.Sentinels()
	if len(sentinels) == 0 {
		return nil, errors.New("failover-sentinel: the run has no sentinels")
	}
	cutOf := func(g *Group) []int {
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
		reply, err := redisDo(ctx, s, "SENTINEL", "get-master-addr-by-name", name)
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
