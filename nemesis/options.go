package nemesis

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/option"
)

// durations checks that each key parses as a duration.
func durations(opts option.Values, keys ...string) error {
	for _, k := range keys {
		if _, err := opts.Duration(k); err != nil {
			return err
		}
	}
	return nil
}

// linksAvailable is the Available of a nemesis whose only topology
// requirement is that its links option names a client and node that exist.
func linksAvailable(owner string) func(Topology, option.Values) error {
	return func(t Topology, opts option.Values) error {
		c, err := parseLinks(owner, opts.String("links"))
		if err != nil {
			return err
		}
		return c.available(t)
	}
}

// nodeChoice is a node option: "holder", "random" or a lock node number.
type nodeChoice int

const (
	randomNode nodeChoice = -1 // the step's node
	holderNode nodeChoice = -2 // one of the nodes that hold the aimed lease
)

func nodeOption(help string) option.Spec {
	return option.Spec{Key: "node", Default: "holder",
		Help: help + ": holder (a node that holds the aimed lease, so a quorum lock loses one of its votes), random (the step's choice) or a lock node number (0, 1, …)"}
}

func parseNode(owner, s string) (nodeChoice, error) {
	switch s = strings.TrimSpace(s); s {
	case "random":
		return randomNode, nil
	case "holder":
		return holderNode, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("option %s.node=%q: want holder, random or a lock node number", owner, s)
	}
	return nodeChoice(n), nil
}

// nodeAvailable checks a fixed node number against the topology.
func nodeAvailable(owner string) func(Topology, option.Values) error {
	return func(t Topology, opts option.Values) error {
		n, err := parseNode(owner, opts.String("node"))
		if err != nil {
			return err
		}
		if int(n) >= t.LockNodes {
			return fmt.Errorf("%s.node=%d, but the run has lock nodes 0 to %d (--nodes)", owner, n, t.LockNodes-1)
		}
		return nil
	}
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
