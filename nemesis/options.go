package nemesis

import (
	"errors"
	"fmt"
	"strconv"
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
	When string `opt:"when" default:"hold" oneof:"hold,any" help:"hold (while the step's client holds its key, kept inside until the effect is known) or any (whenever the schedule says)"`
	onVotes
}

// onVotes is the option of the faults that wait for a hold of a quorum lock
// to make one node forget it: which hold.
type onVotes struct {
	Votes string `opt:"votes" default:"any" oneof:"any,bare,spare" help:"which hold of a quorum lock to hit: any (the step's client's next), bare (one on exactly the quorum of nodes: one node forgetting breaks it) or spare (one with a vote to spare: one node forgetting cannot)"`
}

// shimApplies: the clock shim goes into processes that a backend starts
// with LD_PRELOAD; the local and docker backends do.
func shimApplies(owner string, t Topology) error {
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
