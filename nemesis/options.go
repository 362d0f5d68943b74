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

// nodeChoice is a node option: "random" or a lock node number.
type nodeChoice int

const randomNode nodeChoice = -1

func nodeOption(help string) option.Spec {
	return option.Spec{Key: "node", Default: "random", Help: help + ": random or a lock node number (0, 1, …)"}
}

func parseNode(owner, s string) (nodeChoice, error) {
	s = strings.TrimSpace(s)
	if s == "random" {
		return randomNode, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("option %s.node=%q: want random or a lock node number", owner, s)
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

// pick returns a lock node index.
func (n nodeChoice) pick(env Env) int {
	if n == randomNode {
		return env.Rand().IntN(len(env.LockNodes()))
	}
	return int(n)
}
