package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// onLinks is the option of every nemesis that acts on client links (one
// that defaults to other links than all declares its own Links field).
type onLinks struct {
	Links linkChoice `opt:"links" default:"all" help:"which links: all (every client↔lock-node link), holder (the step's client's, once it holds its key), client (the step's client's), node (the step's lock node's), client=N (client N's: the fault is aimed at, judged on and described by N), node=N, peers (the servers' links to each other: Redis replication with --replicas, a NATS cluster's routes)"`
	When  string     `opt:"when" default:"hold" oneof:"hold,wait" help:"hold: once the step's client holds the key; wait: once it waits in a blocking acquire behind another client's hold (needs --wait) — the faults on its links then slow or cut a waiter's keep-alives"`
}

// Applies checks a fixed client or node number against the topology, and
// that a run whose faults wait for a waiter (when=wait) has one.
func (o onLinks) Applies(t Topology) error {
	if o.When == "wait" {
		if err := blocking("a link fault", "with when=wait", t); err != nil {
			return err
		}
	}
	return o.Links.available(t)
}

// linkChoice is a links option.
type linkChoice struct {
	kind string // all, holder, client, node
	n    int    // -1: random
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *linkChoice) UnmarshalText(b []byte) error {
	kind, arg, has := strings.Cut(string(b), "=")
	*c = linkChoice{kind: kind, n: -1}
	switch kind {
	case "all", "holder", "peers":
		if !has {
			return nil
		}
	case "client", "node":
		if !has {
			return nil
		}
		n, err := strconv.Atoi(arg)
		if err == nil && n >= 0 {
			c.n = n
			return nil
		}
	}
	return errors.New("want all, holder, client, node, client=N, node=N or peers")
}

// available checks a fixed client or node number against the topology.
func (c linkChoice) available(t Topology) error {
	switch {
	case c.kind == "client" && c.n >= t.Clients:
		return fmt.Errorf("links=client=%d, but the run has clients 0 to %d", c.n, t.Clients-1)
	case c.kind == "node" && c.n >= t.LockNodes:
		return fmt.Errorf("links=node=%d, but the run has lock nodes 0 to %d", c.n, t.LockNodes-1)
	case c.kind == "peers" && t.OnRedis() && t.Replicas == 0:
		return errors.New("links=peers: Redis lock nodes talk to no other server without replicas (--replicas)")
	case c.kind == "peers" && !t.OnRedis():
		if s, err := cluster.LookupStore(t.Store); err != nil || !s.Peers {
			return fmt.Errorf("links=peers: %s's servers do not talk to each other through the run's proxies (Redis replication with --replicas and a NATS cluster's routes do)", t.Store)
		}
		if t.LockNodes < 2 {
			return errors.New("links=peers: a single server has no peers (--nodes)")
		}
	}
	return nil
}

// clientsOnly is available for a fault that acts on client links alone
// (its replies are a client's): links=peers is refused.
func (c linkChoice) clientsOnly(nemesis string, t Topology) error {
	if c.kind == "peers" {
		return fmt.Errorf("links=peers: %s acts on what a client is answered, on client links only", nemesis)
	}
	return c.available(t)
}

// aimedAt is step aimed at the client the choice names (client=N): the
// fault is then aimed, judged and described on the client whose links it
// acts on. Any other choice keeps the step's own client (client without a
// number picks it; holder aims at its hold).
func (c linkChoice) aimedAt(step Step) Step {
	if c.kind == "client" && c.n >= 0 {
		step.Client = c.n
	}
	return step
}

// pick returns the chosen links, a description of the target, and the
// clients whose links they are when the choice was one client: the aimed
// holder's (holder), the step's client or node (client, node), or fixed.
func (c linkChoice) pick(env Env, ps *proxy.Proxies, step Step, a *aimed) ([]*proxy.Link, string, []int) {
	switch c.kind {
	case "holder":
		return ps.Links(is(a.Client), nil), fmt.Sprintf("links of client %d (holding %s)", a.Client, a.Key), []int{a.Client}
	case "client":
		n := c.n
		if n < 0 {
			n = step.Client
		}
		return ps.Links(is(n), nil), fmt.Sprintf("links of client %d", n), []int{n}
	case "node":
		n := c.n
		if n < 0 {
			n = step.Node % max(len(env.LockNodes()), 1)
		}
		return ps.Links(nil, is(n)), fmt.Sprintf("links to lock node %d", n), nil
	case "peers":
		links := ps.Relays(-1)
		return links, fmt.Sprintf("all %d links between servers", len(links)), nil
	}
	links := ps.Links(nil, nil)
	return links, fmt.Sprintf("all %d client links", len(links)), nil
}

// noPeers is the error of links=peers that found no link between servers
// (Applies refuses a run without them; this guards the rest).
func noPeers(choice linkChoice, links []*proxy.Link) error {
	if choice.kind == "peers" && len(links) == 0 {
		return errors.New("links=peers: this run's servers have no links to each other through its proxies")
	}
	return nil
}

// linkFault is a fault on links: it waits for the step's client to hold
// the step's key (a live lease under the fault), installs the fault on the
// chosen links, and records whether the fault lasted past that lease. what
// says what the fault does to the links ("slow", "cut").
//
// With when=wait it waits instead for the step's client to be blocked in an
// acquire behind another client's hold, and acts on it while it waits: a
// lock that keeps a session alive loses it if the fault outlasts it.
func linkFault(ctx context.Context, env Env, step Step, o onLinks, duration time.Duration, what string, params map[string]string,
	install func(links []*proxy.Link) (heal func(context.Context) error, err error)) (*Fault, error) {
	choice := o.Links
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	step = choice.aimedAt(step)
	if o.When == "wait" {
		return waiterLinkFault(ctx, env, step, choice, net, duration, what, params, install)
	}
	a, err := aimHeld(ctx, env, step)
	if err != nil {
		return nil, err
	}
	links, target, clients := choice.pick(env, net.Proxies(), step, a)
	if err := noPeers(choice, links); err != nil {
		_ = a.release()
		return nil, err
	}
	start := history.Now()
	heal, err := install(links)
	if rerr := a.release(); err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	params["links"] = strconv.Itoa(len(links))
	f := &Fault{Target: target, Params: params, Clients: clients, Aim: a.aim(), Start: start, Duration: duration}
	f.Heal = func(ctx context.Context) error {
		err := heal(ctx)
		f.Effect = a.lastedEffect(start, history.Now(), "the links were "+what, false)
		return err
	}
	return f, nil
}

// waiterLinkFault is linkFault with when=wait: on the links of a client
// blocked in an acquire of the step's key behind another's hold.
func waiterLinkFault(ctx context.Context, env Env, step Step, choice linkChoice, net Links, duration time.Duration, what string, params map[string]string,
	install func(links []*proxy.Link) (heal func(context.Context) error, err error)) (*Fault, error) {
	proc, err := processesOf(env)
	if err != nil {
		return nil, err
	}
	c, key := step.Client, step.Key
	if err := awaitWaiter(ctx, env, proc, c, key); err != nil {
		return nil, err
	}
	if choice.kind == "holder" {
		// The step's client holds nothing yet: the links are the waiter's.
		choice = linkChoice{kind: "client", n: c}
	}
	links, target, clients := choice.pick(env, net.Proxies(), step, nil)
	if err := noPeers(choice, links); err != nil {
		return nil, err
	}
	start := history.Now()
	answered := followAcquire(env, c)
	heal, err := install(links)
	if err != nil {
		answered()
		return nil, err
	}
	params["links"], params["when"] = strconv.Itoa(len(links)), "wait"
	f := &Fault{Target: target + " (client " + strconv.Itoa(c) + " waiting)", Params: params, Clients: clients, Start: start, Duration: duration}
	f.Heal = func(ctx context.Context) error {
		err := heal(ctx)
		end := history.Now()
		f.Effect = waitedEffect(env, c, key, answered(), start, end, "the links were "+what)
		return err
	}
	return f, nil
}

// followAcquire follows client c's acquire in flight now until it is
// answered; the function it returns stops following and says when it was
// (0: not yet).
func followAcquire(env Env, c int) func() int64 {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		invoked int64
		at      atomic.Int64
		done    = make(chan struct{})
	)
	if a := snapshot(env).Acquires[c]; a.Outcome == "" {
		invoked = a.Invoked
	}
	go func() {
		defer close(done)
		// Await sees every event: the answer comes before any later acquire.
		_ = env.Await(ctx, func(v View) bool {
			a := v.Acquires[c]
			switch {
			case invoked == 0:
				at.Store(history.Now()) // none was in flight
			case a.Invoked != invoked:
				at.Store(history.Now())
			case a.Outcome != "":
				at.Store(a.Done)
			default:
				return false
			}
			return true
		})
	}()
	return func() int64 {
		cancel()
		<-done
		return at.Load()
	}
}

// waitedEffect is the effect of a fault from start to end on client c
// while its acquire of key waited behind another's hold (answered is when
// that acquire was answered, 0 if it still waits): it landed when the
// acquire still waited a lease after the fault began, so that its session
// or lease had to outlive the fault while it waited, not while it held.
func waitedEffect(env Env, c int, key string, answered, start, end int64, what string) *history.Effect {
	lasted, lease := time.Duration(end-start), env.Lease()
	e := &history.Effect{Note: fmt.Sprintf("%s for %s while client %d's blocking acquire of %s waited (its lease is %s)", what, round(lasted), c, key, lease)}
	switch {
	case lasted < lease:
		e.Note += ": shorter than its lease"
	case answered != 0 && time.Duration(answered-start) < lease:
		e.Note += fmt.Sprintf(": its acquire was answered %s after the fault began, before a lease had passed", round(max(time.Duration(answered-start), 0)))
	default:
		e.Landed = true
	}
	return e
}

// renewalFault is a fault on the holder's links that lasts exactly across
// one renewal of its lease. A watchdog that renews every third of the
// lease (Redisson's, the worker's --renew) counts from the moment its
// client took in the grant, which the history places at the acquire's
// return (only a stall of the client's process, which the worker records,
// comes between the two): its first renewal is due a third of the lease
// after the return and has failed failAfter later (how long the fault
// takes to fail a request), its second is due at two thirds. The fault
// waits for the step's client's next hold begun after it has held nothing
// for rest (a library's renewal timers of earlier grants have fired by
// then: Redisson 3.52 keeps one per grant running until it fires while
// its client holds nothing), begins at once, and heals
// halfway between the first renewal's failure and the second renewal, so
// either side has a sixth of the lease (less half of failAfter) to spare.
// It keeps the holder in its critical section until hold after its
// acquire's invoke, past its lease (or, with hold 0, only until the heal):
// a lock that renews again after a failure keeps its lease; one that gives
// up on the first failure loses it while its holder works on, and the
// overlap lasts until the holder leaves.
//
// reset says how many of the links' connections carried a request and were
// reset so far: exactly one means exactly one renewal was lost, none that
// the lock sent nothing in the span, more that it sent more than the one
// renewal the span was timed for (or other requests).
func renewalFault(ctx context.Context, env Env, step Step, failAfter, hold, rest time.Duration, what string, params map[string]string,
	reset func() int, install func(links []*proxy.Link) (heal func(context.Context) error, err error)) (*Fault, error) {
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	bound := hold
	if bound == 0 {
		bound = stretchBound(env)
	}
	a, err := aimStop(ctx, env, step, bound, rest, false)
	if err != nil {
		return nil, err
	}
	third := env.Lease().Nanoseconds() / 3
	first, failed, second := a.OK+third, a.OK+third+failAfter.Nanoseconds(), a.OK+2*third
	healAt := (failed + second) / 2
	links, target, clients := holderLinks.pick(env, net.Proxies(), step, a)
	start := history.Now()
	heal, err := install(links)
	if err != nil {
		return nil, errors.Join(err, a.release())
	}
	params["links"] = strconv.Itoa(len(links))
	d := max(time.Until(timeOf(healAt)), 0)
	params["resets"] = round(d).String()
	f := &Fault{Target: target + " across one renewal", Params: params, Clients: clients, Aim: a.aim(), Start: start, Duration: d}
	f.Heal = func(ctx context.Context) error {
		n := reset() // before the toxics go: what passes after is not reset
		err := heal(ctx)
		e := a.renewalEffect(start, history.Now(), first, failed, second, n, "the links were "+what)
		f.Effect = e
		if hold == 0 {
			return errors.Join(err, a.release())
		}
		// Keep the holder at work past its lease until hold has passed,
		// as a long critical section would: a lease no longer renewed is
		// taken by another client long before the holder leaves.
		taker, rerr := a.throughBound(ctx)
		if taker >= 0 {
			e.Note += fmt.Sprintf("; client %d acquired %s while client %d, kept in its critical section for %v after its acquire, still held it", taker, a.Key, a.Client, hold)
		} else {
			e.Note += fmt.Sprintf("; client %d stayed in its critical section for %v after its acquire, and no other client acquired %s meanwhile", a.Client, hold, a.Key)
		}
		return errors.Join(err, rerr)
	}
	return f, nil
}

var holderLinks = linkChoice{kind: "holder", n: -1}

// renewalEffect is the effect of a renewalFault from start to end: the
// first renewal of the aimed lease was due at first and had failed by
// failed, the second was due at second; reset connections carried a
// request and were reset. It landed when it began before the first
// renewal, lasted until it had failed, and healed before the second,
// while the holder still held, and reset exactly one request: the
// renewal. What became of the lease is the history's (a lock that gave up
// renewing loses it while its holder works on).
func (a *aimed) renewalEffect(start, end, first, failed, second int64, reset int, what string) *history.Effect {
	since := func(t int64) time.Duration { return round(time.Duration(t - a.OK)) }
	e := &history.Effect{Note: fmt.Sprintf("%s from %v to %v after client %d's acquire of %s returned; its %s lease's first renewal was due at %v and failed by %v, its second was due at %v",
		what, since(start), since(end), a.Client, a.Key, a.env.Lease(), since(first), since(failed), since(second))}
	_, holding := holdingOf(a.env, a.Client, a.Key, a.Invoked)
	switch {
	case start >= first:
		e.Note += ": it began too late, the first renewal may have gone through"
	case end <= failed:
		e.Note += ": it healed before the first renewal had certainly failed"
	case end >= second:
		e.Note += ": it healed too late, the second renewal may have failed too"
	case !holding:
		e.Note += fmt.Sprintf(": client %d no longer held %s when it healed", a.Client, a.Key)
	case reset == 0:
		e.Note += fmt.Sprintf(": no request of client %d reached them meanwhile, so no renewal was lost", a.Client)
	case reset > 1:
		// Redisson 3.52 runs a renewal timer for every grant since the
		// client last held nothing for a third of the lease
		// (RenewalTask.stop leaves its pending timer, the next grant
		// starts another), so its renewals come more often than every
		// third of the lease.
		e.Note += fmt.Sprintf(": %d connections carried a request and were reset, not one: client %d sent more than the one renewal the span was timed for", reset, a.Client)
	default:
		e.Landed = true
		e.Note += ": exactly the first renewal failed (one request was reset), with a third of the lease left for the next"
	}
	return e
}

func is(n int) func(int) bool { return func(x int) bool { return x == n } }

// streams is a stream option: upstream (requests), downstream (replies)
// or both.
type streams string

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *streams) UnmarshalText(b []byte) error {
	switch v := string(b); v {
	case "both", "upstream", "downstream":
		*s = streams(v)
		return nil
	}
	return errors.New("want upstream, downstream or both")
}

// dirs are the toxiproxy streams it names.
func (s streams) dirs() []string {
	if s == "both" {
		return []string{"upstream", "downstream"}
	}
	return []string{string(s)}
}

// addToxics installs one toxic per stream on every link, named after the
// nemesis so that toxics of different nemeses compose on one link. If one
// fails, the ones already added are removed. The heal removes them all.
func addToxics(links []*proxy.Link, name, typ string, streams []string, attrs map[string]any) (func(context.Context) error, error) {
	var undo []func() error
	heal := func(context.Context) error {
		var errs []error
		for _, u := range undo {
			errs = append(errs, u())
		}
		return errors.Join(errs...)
	}
	for _, l := range links {
		for _, dir := range streams {
			tname := name + "-" + dir
			if err := l.AddToxic(proxy.Toxic{Name: tname, Type: typ, Stream: dir, Attributes: attrs}); err != nil {
				return nil, errors.Join(err, heal(context.Background()))
			}
			undo = append(undo, func() error { return l.RemoveToxic(tname) })
		}
	}
	return heal, nil
}
