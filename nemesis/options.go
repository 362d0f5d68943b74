package nemesis

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/lockchaos/lockchaos/cluster"
)

// The options that several nemeses share, as embeddable structs (package
// option): a nemesis embeds the ones it takes.

// onNode is the option of a nemesis that acts on one lock node.
type onNode struct {
	Node nodeChoice `opt:"node" default:"holder" help:"which lock node: holder (a node that holds the aimed lease, so a quorum lock loses one of its votes), random (the step's choice) or a lock node number (0, 1, …)"`
}

// Applies checks a fixed node number against the topology.
func (o onNode) Applies(t Topology) error {
	if n := int(o.Node); n >= t.LockNodes {
		return fmt.Errorf("node=%d, but the run has lock nodes 0 to %d (--nodes)", n, t.LockNodes-1)
	}
	return nil
}

// onHold are the options of the faults that make one node forget a lease:
// when they strike, and which hold of a quorum lock they wait for.
type onHold struct {
	When string `opt:"when" default:"hold" oneof:"hold,any" help:"hold (while a client holds the step's key — whichever holds it first once the fault is armed —, kept inside until the effect is known) or any (whenever the schedule says)"`
	onVotes
}

// onVotes is the option of the faults that wait for a hold of a quorum lock
// to make one node forget it: which hold.
type onVotes struct {
	Votes string `opt:"votes" default:"any" oneof:"any,bare,spare" help:"which hold of a quorum lock to hit: any (the next, by any client), bare (one on exactly the quorum of nodes: one node forgetting breaks it) or spare (one with a vote to spare: one node forgetting cannot)"`
}

// shimApplies: the clock shim goes into processes that a backend starts
// with LD_PRELOAD; the local and docker backends do. It moves only the
// wall clock (CLOCK_REALTIME), which only Redis reads to expire a lease.
func shimApplies(owner string, t Topology) error {
	if err := redisOnly(owner, t); err != nil {
		return err
	}
	if t.Backend != "local" && t.Backend != "docker" {
		return fmt.Errorf("%s needs the clock shim in redis-server, which the %s backend cannot load: use clock-jump-ttl, which works on any Redis", owner, t.Backend)
	}
	return nil
}

// nodeChoice is a node option: "holder", "random" or a lock node number.
type nodeChoice int

const (
	randomNode nodeChoice = -1 // the step's node
	holderNode nodeChoice = -2 // one of the nodes that hold the aimed lease
)

// UnmarshalText implements encoding.TextUnmarshaler.
func (n *nodeChoice) UnmarshalText(b []byte) error {
	switch s := string(b); s {
	case "random":
		*n = randomNode
		return nil
	case "holder":
		*n = holderNode
		return nil
	}
	v, err := strconv.Atoi(string(b))
	if err != nil || v < 0 {
		return errors.New("want holder, random or a lock node number")
	}
	*n = nodeChoice(v)
	return nil
}

// pick returns a lock node index for step: a fixed one, the step's, or —
// for holder — one of held (the nodes holding the aimed lease), chosen
// with the step's random source (the step's node when held is empty).
func (n nodeChoice) pick(env Env, step Step, held []int) int {
	switch {
	case n >= 0:
		return int(n)
	case n == holderNode && len(held) > 0:
		return held[env.Rand().IntN(len(held))]
	}
	return step.Node % max(len(env.LockNodes()), 1)
}

// redisOnly refuses a nemesis that acts on what only Redis has (its wall
// clock deciding expiry, its TTLs, Sentinel) for a lock of another store,
// saying why.
func redisOnly(owner string, t Topology) error {
	if t.OnRedis() {
		return nil
	}
	why := "the store is not Redis"
	if s, err := cluster.LookupStore(t.Store); err == nil && s.NoClock != "" {
		why = s.NoClock
	}
	return fmt.Errorf("%s acts on Redis servers, and lock %s keeps its state in %s: %s", owner, t.Lock, t.Store, why)
}

// leased refuses a nemesis whose fault is a lease running out (a critical
// section longer than it, a reply so late that little of it is left) for
// a lock that has none.
func leased(owner string, t Topology) error {
	if t.Leaseless {
		return fmt.Errorf("%s makes a lease run out under its holder, and lock %s has no lease: a grant lasts until it is released or the client's session ends", owner, t.Lock)
	}
	return nil
}

// blocking refuses a fault that waits for a client blocked in a blocking
// acquire (what names it: "phase=wait") in a run whose acquires try once:
// no client would ever wait, and the run would end without the fault.
func blocking(owner, what string, t Topology) error {
	if t.Wait <= 0 {
		return fmt.Errorf("%s %s waits for a client blocked in a blocking acquire, and this run's acquires try once: give --wait (workload.wait in a scenario file), e.g. --wait 5ttl", owner, what)
	}
	return nil
}
