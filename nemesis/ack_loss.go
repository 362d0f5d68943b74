package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// AckLoss loses the answers to requests the server carried out: on one
// client's links, the first reply on each connection is dropped, and the
// connection delivers no reply again until the fault heals, when it is
// closed (proxy.AckLossToxic). The client's command times out; it cannot
// tell that the server ran it. A library that retries the command, or
// gives up on a lock it was in fact granted, meets the fault there: a key
// set for a client that believes it failed, a retried release that finds
// someone else's lock.
//
// It lands by construction: the answers are lost first, then the fault
// waits for the step's client to finish an acquire of the step's key begun
// under it, during which an answer to the client was dropped: the server
// carried the acquire out, and the client did not learn how. It waits for
// one that left the key set on a quorum of the lock's nodes while no
// client holds it — a grant nobody knows of — for as long as the answers
// stay lost; a lock that never leaves one (a Redlock cleans up a failed
// attempt on every node) has met the fault with the acquires whose
// answers were lost, and its effect says so.
type AckLoss struct {
	Duration time.Duration `opt:"duration" default:"3ttl" margin:"0.1ttl..5ttl" help:"how long answers stay lost (from the fault's start)"`
	Links    linkChoice    `opt:"links" default:"client" help:"which client↔lock-node links: all, holder (the freshest holder's), client (a random client's), node (a random lock node's), client=N, node=N"`
}

func init() {
	Register(Spec{
		Name:        "ack-loss",
		Description: "the server carries out a client's request and its answer is lost: the first reply on each of the client's connections is dropped, and the connection stays silent",
		Action:      history.ActionNetwork,
		New:         func() Nemesis { return new(AckLoss) },
	})
}

// Applies needs a Redis lock: the toxic lets a Redis handshake's reply
// pass, and the fault asks the nodes for the key.
func (a *AckLoss) Applies(t Topology) error {
	if !t.OnRedis() {
		return fmt.Errorf("ack-loss reads the Redis protocol (a reconnecting client's HELLO is answered) and asks the lock's nodes for the key: lock %s keeps its state in %s", t.Lock, t.Store)
	}
	return a.Links.clientsOnly("ack-loss", t)
}

func (a *AckLoss) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	step = a.Links.aimedAt(step)
	c, key := step.Client, step.Key
	links, target, clients := a.Links.pick(env, net.Proxies(), step, &aimed{Holding: Holding{Client: c, Key: key}})
	start := history.Now()
	tag := fmt.Sprintf("ack-loss-%d-%d", start, c)
	removeToxics, err := addToxics(links, "ack-loss", "ack-loss", []string{"downstream"}, map[string]any{"tag": tag})
	if err != nil {
		return nil, err
	}
	// A connection that lost an answer must carry none again (TCP delivers
	// nothing after a lost byte): close every connection of the links
	// before the toxics go, then let them accept again.
	heal := func(ctx context.Context) error {
		for _, l := range links {
			l.Disable()
		}
		err := removeToxics(ctx)
		for _, l := range links {
			err = errors.Join(err, l.Enable())
		}
		return err
	}
	f := &Fault{
		Target:  target,
		Params:  map[string]string{"client": strconv.Itoa(c), "key": key, "duration": a.Duration.String(), "links": strconv.Itoa(len(links))},
		Clients: clients,
		Start:   start,
		Heal:    heal,
	}
	end := timeOf(start).Add(a.Duration)
	defer func() { f.Duration = time.Until(end) }()
	// Wait for an acquire of key by c, begun under the fault, that ended
	// without a grant while answers to c were being dropped: unknown, or
	// refused by a library that counts a node's silence as a no.
	after, tried, weak := start, 0, ""
	for {
		var acq Acquire
		dropped := proxy.Dropped(tag)
		wctx, cancel := context.WithDeadline(ctx, end)
		err := env.Await(wctx, func(v View) bool {
			acq = v.Acquires[c]
			return acq.Key == key && acq.Invoked >= after && acq.Outcome != ""
		})
		cancel()
		if err != nil {
			if weak != "" {
				f.Effect = &history.Effect{Landed: true, Note: weak + "; no acquire under the fault left the key set for nobody"}
			} else {
				f.Effect = &history.Effect{Note: fmt.Sprintf("no acquire of %s by client %d under the fault lost its answer (%d tried, %d answers lost in all)", key, c, tried, proxy.Dropped(tag))}
			}
			return f, ctx.Err()
		}
		tried++
		after = acq.Done + 1
		// Answers lost since the previous acquire ended: the client makes
		// one request at a time, so they were this acquire's (or a release
		// or renewal just before it, whose connection then stayed silent).
		lost := proxy.Dropped(tag) - dropped
		if acq.Outcome == history.OK || lost == 0 {
			continue // an answer got through, or none was lost meanwhile
		}
		what := fmt.Sprintf("client %d's acquire of %s (begun %s into the fault) reached the server and its answer was lost (%d answers lost during it)", c, key, round(time.Duration(acq.Invoked-start)), lost)
		if n, held := a.grantedToNobody(ctx, env, key); held {
			what += fmt.Sprintf("; the key is set on %d of the lock's nodes and no client holds it: a grant nobody knows of", n)
			f.Effect = &history.Effect{Landed: true, Note: what}
			return f, nil
		}
		if weak == "" {
			weak = what
		}
	}
}

// grantedToNobody says whether key is set on a quorum of the lock's nodes
// while no client holds it: a grant whose answer was lost.
func (a *AckLoss) grantedToNobody(ctx context.Context, env Env, key string) (int, bool) {
	for _, h := range env.Holders() {
		if h.Key == key {
			return 0, false
		}
	}
	n := 0
	for _, node := range env.LockNodes() {
		if HasLease(ctx, node, env.Topology().KeyPrefix, Holding{Key: key}) {
			n++
		}
	}
	return n, n >= quorum(env)
}
