// Promotion: what the failovers of a Redis primary share (failover,
// failover-sentinel) — replication cut before the aimed acquire, the
// replicas checked for stale keys, client links pointed at the promoted
// replica, and the old primary rejoined as a replica.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/lockchaos/lockchaos/workload"
	"github.com/redis/go-redis/v9"
)

// failing are the options of a failover (failover, failover-sentinel):
// which replicas to cut, which hold to wait for, which node to fail over.
type failing struct {
	cut, votes string
	node       nodeChoice
}

// prepared is the state of a failover before the kill.
type prepared struct {
	uncut  func(context.Context) error
	params map[string]string
	a      *aimed
	held   []int          // the lock nodes that held the aimed lease before the kill
	g      *cluster.Group // the group that fails over
	start  int64          // the kill
	// missed says why no hold came while replication was cut: then there
	// is nothing to fail over.
	missed string
}

// cutOnly is the fault of a failover that found no hold to aim at: the
// replication cut alone, which did not land.
func (p *prepared) cutOnly() *Fault {
	f := p.partial("replication cut; no failover", nil)
	f.Effect = &history.Effect{Note: "no hold to fail over: " + p.missed}
	return f
}

// letGo says, just before the kill, whether the aimed holder has let go
// already. On a busy machine the preparation (waiting out a stale key on
// the replicas, reading their offsets) can outlast the stretch that keeps
// the holder inside, and a kill then strikes whatever hold came next: one
// the fault never aimed at, which may sit on a bare majority by chance
// (seen in make chaos beside CPU hogs: node-redlock+failover, a violation
// under a failover that did not land). Then the failover does not happen:
// the fault is the cut alone, and p.missed says why.
func (p *prepared) letGo(env Env) bool {
	if _, held := holdingOf(env, p.a.Client, p.a.Key, p.a.Invoked); held {
		return false
	}
	p.missed = fmt.Sprintf("client %d let go of %s before the kill (preparing the failover outlasted its hold)", p.a.Client, p.a.Key)
	return true
}

// partial is the fault as far as it went: the cut (if any) and whatever
// then undoes the rest. A nil prepared (nothing done yet) gives nil.
func (p *prepared) partial(target string, rest func(context.Context) error) *Fault {
	if p == nil {
		return nil
	}
	f := &Fault{Target: target, Params: p.params, Start: p.start}
	if p.a != nil {
		f.Aim = p.a.aim()
	}
	if p.g != nil {
		f.Nodes = []int{p.g.Index}
	}
	f.Heal = func(ctx context.Context) error {
		err := errors.Join(p.uncut(ctx), aRelease(p.a))
		if rest != nil {
			err = errors.Join(err, rest(ctx))
		}
		return err
	}
	return f
}

// effect asks the lock nodes, now that clients point at the promoted
// replica, whether the aimed lease survived (aimed.lostEffect). A lost
// lease keeps its holder inside until another client holds the key under
// a fencing token no lower than the holder's: the promoted replica lacks
// every write since the cut, not only the aimed acquire's, so the first
// clients to take the key there may get tokens older than the holder's
// (which a fenced resource rejects), and the holder's own token, issued
// again, must go to another client while the holder still holds — not
// to the holder coming back for the key. A lock without fencing tokens
// lets it go at the first taker.
func (p *prepared) effect(ctx context.Context, env Env, what string) (*history.Effect, error) {
	v := votes{nodes: len(env.LockNodes()), before: p.held, after: holdersOf(ctx, env, env.LockNodes(), p.a.Holding), quorum: quorum(env)}
	p.a.sameToken = true
	return p.a.lostEffect(ctx, history.Now(), v, what)
}

// prepareFailover cuts replication in every lock node's group (the members
// cutOf names), then waits for the step's client to acquire the step's key
// while they are cut (aimHolder, keeping it inside its critical section;
// with votes=bare, a hold on exactly the lock's quorum of nodes), and picks
// the group to fail over among the nodes that hold the lease (fo.node). The
// cut comes first so that the lease can never have reached the replicas,
// and it is made at a moment when those replicas serve no live lock key: a
// key that reached them before the cut, whose release did not, would
// shield the new holder until its TTL ran out and hide the failure. It
// first tries, for up to a TTL, to cut while nobody holds a lock (then no
// stale key can reach them), and otherwise cuts anyway and waits for the
// stale key to expire. The params say how it went.
func prepareFailover(ctx context.Context, env Env, repl Replication, step Step, fo failing, cutOf func(*cluster.Group) []int) (*prepared, error) {
	p := &prepared{uncut: func(context.Context) error { return nil }, params: map[string]string{"cut": fo.cut}, start: history.Now()}
	var (
		relays   []*proxy.Link
		cutNodes []cluster.Node
		names    []string
	)
	for _, g := range repl.Groups() {
		members := cutOf(g)
		relays = append(relays, g.Relays(members)...)
		for _, m := range members {
			cutNodes = append(cutNodes, g.Members()[m])
			names = append(names, g.Members()[m].Name())
		}
	}
	cut := func() error {
		if len(relays) == 0 {
			return nil
		}
		heal, err := addToxics(relays, "failover-cut", "timeout", []string{"upstream", "downstream"}, map[string]any{"timeout": 0})
		if err != nil {
			return fmt.Errorf("failover: cut replication: %w", err)
		}
		p.uncut = heal
		p.params["cut-replicas"] = strings.Join(names, ",")
		return nil
	}
	check := liveKeyChecker(env, cutNodes)
	defer check.close()
	p.params["cut-while-free"] = "no"
	// The lock may be free for only a millisecond or two between a release
	// and the next acquire, too short for a busy machine to see it: after
	// a moment of looking, every client is asked to rest once it has done
	// what it is doing, which makes the lock fall free, and let go again
	// once replication is cut. Every hold shorter than the TTL ends within
	// one, so one TTL normally shows a free moment; after that, cut
	// anyway.
	unhush, hushed := func() {}, false
	defer func() { unhush() }()
	hushAt := time.Now().Add(min(env.TTL()/4, time.Second))
	for deadline := time.Now().Add(env.TTL()); ; {
		if !hushed && time.Now().After(hushAt) {
			unhush, hushed = hush(ctx, env, step.Key), true
			p.params["hushed"] = "yes"
		}
		// The release's DEL must have reached the replicas before the cut.
		if len(env.Holders()) == 0 && check.live(ctx) == 0 {
			if err := cut(); err != nil {
				return nil, err
			}
			if check.live(ctx) == 0 {
				p.params["cut-while-free"] = "yes"
				break
			}
			// Someone acquired in between, and it reached the replicas.
			if err := p.uncut(ctx); err != nil {
				return p, err
			}
			p.uncut = func(context.Context) error { return nil }
		}
		if time.Now().After(deadline) {
			if err := cut(); err != nil {
				return nil, err
			}
			break
		}
		// The lock may be free for only a millisecond or two between a
		// release and the next acquire: look often (Holders is cheap).
		select {
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), p.uncut(context.Background()))
		case <-time.After(200 * time.Microsecond):
		}
	}
	unhush()
	unhush = func() {}
	a, held, err := aimHolder(ctx, env, step, stretchBound(env), fo.votes)
	switch {
	case err != nil && errors.Is(err, ErrNoTarget):
		// Replication was cut, and nobody took the lock meanwhile (a lock
		// that WAITs for a replica cannot): a fault that happened, and
		// met no lease. The caller records it; the heal uncuts.
		p.missed = err.Error()
		return p, nil
	case err != nil:
		p.missed = "the run ended before a hold came"
		return p, err // the schedule records the cut and heals it
	}
	p.a, p.held = a, held
	p.g = groupOf(env, fo.node.pick(env, step, held))
	p.params["node"] = strconv.Itoa(p.g.Index)
	p.params["acquired-after-cut"] = fmt.Sprintf("client %d, %s", a.Client, a.Key)
	// A stale lease that reached the replicas before the cut must be gone
	// before the kill, or it would shield the lock on the promoted replica.
	for check.live(ctx) > 0 && a.liveAt(history.Now()+env.TTL().Nanoseconds()/10) {
		time.Sleep(time.Millisecond)
	}
	// How far the replicas lag: the evidence that the key never reached them.
	_, primary := p.g.Primary()
	p.params["primary-offset"] = replOffset(ctx, primary.Addr(), "master_repl_offset")
	var lag []string
	for _, m := range p.g.Replicas() {
		n := p.g.Members()[m]
		lag = append(lag, n.Name()+"="+replOffset(ctx, n.Addr(), "slave_repl_offset"))
	}
	p.params["replica-offsets"] = strings.Join(lag, ",")
	return p, nil
}

// hush asks every client to hold nothing and acquire nothing once it has
// finished what it is doing (a stretch's rest, workload/control.go), so
// that the lock falls free; the func it returns lets them go again, at
// once. Without the Processes capability it asks nothing.
func hush(ctx context.Context, env Env, key string) (unhush func()) {
	proc, err := processesOf(env)
	if err != nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	clients := env.Topology().Clients
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A rest longer than any preparation: unhush ends it. The
			// stretch after it keeps no hold (bound 1 ns), and never
			// begins. An exited client has nothing to hold.
			_, _ = proc.Stretch(ctx, c, key, time.Nanosecond, 100*env.TTL(), false)
		}()
	}
	return func() {
		// Every rest was asked for (each Stretch sent its line before it
		// returned) before any is withdrawn.
		cancel()
		wg.Wait()
		for c := range clients {
			_ = proc.Unstretch(c)
		}
	}
}

// keyChecker asks replicas, over connections of its own, how many live
// lock keys they serve: only the keys where the lock keeps its leases (a
// library's other keys — python-redis-lock's signal lists, refreshed by
// every release — would never let the count reach zero).
type keyChecker struct {
	clients []*redis.Client
	names   []string
}

// liveKeyChecker checks the lock's keys, as the lock names them on its
// nodes (Topology.KeyPrefix + the workload's key), on nodes.
func liveKeyChecker(env Env, nodes []cluster.Node) keyChecker {
	k := keyChecker{}
	t := env.Topology()
	for i := 0; i < max(t.Keys, 1); i++ {
		k.names = append(k.names, t.KeyPrefix+workload.KeyName(i))
	}
	for _, n := range nodes {
		k.clients = append(k.clients, redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true,
			DialTimeout: time.Second, ReadTimeout: time.Second, PoolSize: 1}))
	}
	return k
}

// live counts the lock keys the replicas would serve: keys with a TTL still
// running (a replica hides keys whose TTL passed, even before its primary
// deletes them), and keys with no TTL (a lock key left without an expiry
// still holds the lock). -1 when a replica does not answer.
func (k keyChecker) live(ctx context.Context) int {
	n := 0
	for _, c := range k.clients {
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, key := range k.names {
				p.PTTL(ctx, key)
			}
			return nil
		})
		if err != nil {
			return -1
		}
		for _, cmd := range cmds {
			if d, err := cmd.(*redis.DurationCmd).Result(); err == nil && (d > 0 || d == -1) {
				n++
			}
		}
	}
	return n
}

func (k keyChecker) close() {
	for _, c := range k.clients {
		c.Close()
	}
}

// redirect points every client link of lock node i at addr, but those
// that lead to one member (a client that follows Sentinel itself).
func redirect(ps *proxy.Proxies, i int, addr string) error {
	var errs []error
	for _, l := range ps.Links(nil, is(i)) {
		if l.Member == "" {
			errs = append(errs, l.SetUpstream(addr))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("point clients at the new primary %s: %w", addr, err)
	}
	return nil
}

// rejoin restarts the old primary (member m) and, when attach is set, makes
// it a replica of the new primary through its relay.
func rejoin(ctx context.Context, g *cluster.Group, m int, restart func(context.Context) error, attach bool) error {
	if err := restart(ctx); err != nil {
		return fmt.Errorf("restart the old primary of lock node %d: %w", g.Index, err)
	}
	if !attach {
		return nil
	}
	if err := g.Attach(ctx, m); err != nil {
		return err
	}
	// Healed means replicating again, so the next fault starts from a
	// healthy group.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return g.WaitSynced(ctx)
}

// replOffset reads one offset field of INFO replication, or "?".
func replOffset(ctx context.Context, addr, field string) string {
	info, err := cluster.RedisDo(ctx, addr, "INFO", "replication")
	s, _ := info.(string)
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return "?"
}
