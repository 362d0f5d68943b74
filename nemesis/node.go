// Node faults: what the faults that make one lock node lose a lease share
// (clock-jump, clock-jump-ttl, clock-drift, crash-restart) — the aim at a
// hold, the chosen node, its clock, and the question whether the lease
// survived there.

package nemesis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// nodeFault is what the faults that make one node lose a lease share: the
// aim (nil with when=any), the nodes that held the lease before, and the
// chosen node.
type nodeFault struct {
	a    *aimed
	held []int
	i    int
	node cluster.Node
}

// aimNode aims at the step's hold when the when option says hold (nil for
// any; with votes=bare, at a hold on exactly the lock's quorum of nodes),
// keeping its client inside until the fault's effect is known, and picks
// the node.
func aimNode(ctx context.Context, env Env, step Step, h onHold, choice nodeChoice) (*nodeFault, error) {
	nf := &nodeFault{}
	if h.When == "hold" {
		var err error
		if nf.a, nf.held, err = aimHolder(ctx, env, step, stretchBound(env), h.Votes); err != nil {
			return nil, err
		}
	}
	nf.i = choice.pick(env, step, nf.held)
	nf.node = env.LockNodes()[nf.i]
	return nf, nil
}

// fault fills in what every such fault records.
func (nf *nodeFault) fault(f *Fault) *Fault {
	f.Nodes = []int{nf.i}
	if f.Params == nil {
		f.Params = map[string]string{}
	}
	f.Params["node"] = strconv.Itoa(nf.i)
	if nf.a != nil {
		f.Aim = nf.a.aim()
		f.Params["holder"], f.Params["key"] = strconv.Itoa(nf.a.Client), nf.a.Key
	}
	return f
}

// effect asks the nodes, at the moment at, whether the lease survived, and
// keeps the holder until it is certain (aimed.lostEffect). Without an aim
// the checker judges from the history.
func (nf *nodeFault) effect(ctx context.Context, env Env, at int64, what string) (*history.Effect, error) {
	if nf.a == nil {
		return nil, nil
	}
	v := votes{nodes: len(env.LockNodes()), before: nf.held, after: holdersOf(ctx, env, env.LockNodes(), nf.a.Holding), quorum: quorum(env)}
	return nf.a.lostEffect(ctx, at, v, what)
}

func (nf *nodeFault) release() error { return aRelease(nf.a) }

// awaitGone waits until the chosen node no longer has the aimed lease, or the
// aimed hold's stretch bound passes, and returns when it stopped waiting.
func (nf *nodeFault) awaitGone(ctx context.Context) int64 {
	if nf.a == nil {
		return history.Now()
	}
	until := nf.a.Invoked + nf.a.bound.Nanoseconds()
	for history.Now() < until && ctx.Err() == nil {
		if !HasLease(ctx, nf.node, nf.a.env.Topology().KeyPrefix, nf.a.Holding.On(nf.i, len(nf.a.env.LockNodes()))) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return history.Now()
}

// nodeClock finds the clock of lock node i.
func nodeClock(env Env, clocks Clocks, owner string, i int) (cluster.Node, *cluster.Clock, error) {
	node := env.LockNodes()[i]
	c := clocks.Clock(node)
	if c == nil {
		return nil, nil, fmt.Errorf("%s: lock node %d (%s) runs without the clock shim", owner, i, node.Name())
	}
	return node, c, nil
}
