package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// ClockJump steps a lock node's wall clock forward (or back). Redis stores
// a key's expiry as an absolute wall-clock time and compares it with its own
// clock (gettimeofday), so a node whose clock jumps forward by more than a
// lease's remaining TTL expires that lease at once, while its holder still
// works: the next client acquires. The node runs under the clock shim
// (cluster/clockshim, LD_PRELOAD), which shifts gettimeofday,
// clock_gettime(CLOCK_REALTIME…) and time for that process only; monotonic
// clocks, the workers' and the coordinator's clocks are untouched. Healing
// steps the clock back to the real time, as NTP would (keys set meanwhile
// then live longer than their TTL: a liveness cost, not a safety one).
type ClockJump struct {
	onNode
	By        time.Duration `opt:"by" default:"1.5ttl" help:"how far the clock jumps"`
	Direction string        `opt:"direction" default:"forward" oneof:"forward,backward" help:"forward (keys expire early) or backward (keys live longer)"`
	onHold
	Duration time.Duration `opt:"duration" default:"3ttl" help:"how long the clock stays off before it is stepped back to the real time"`
}

func init() {
	Register(Spec{
		Name:        "clock-jump",
		Description: "step a lock node's wall clock (clock shim, LD_PRELOAD): forward expires its keys early",
		Action:      history.ActionClock,
		New:         func() Nemesis { return new(ClockJump) },
		NodeClock:   true,
	})
}

// Applies: the node must run under the clock shim, and a fixed node exist.
func (j *ClockJump) Applies(t Topology) error {
	if err := shimApplies("clock-jump", t); err != nil {
		return err
	}
	return j.onNode.Applies(t)
}

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
	v := votes{nodes: len(env.LockNodes()), before: nf.held, after: holdersOf(ctx, env.LockNodes(), nf.a.Holding), quorum: quorum(env)}
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
		if !hasLease(ctx, nf.node, nf.a.Holding) {
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

func (j *ClockJump) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	by, d := j.By, j.Duration
	clocks, err := clocksOf(env)
	if err != nil {
		return nil, err
	}
	nf, err := aimNode(ctx, env, step, j.onHold, j.Node)
	if err != nil {
		return nil, err
	}
	clock := clocks.Clock(nf.node)
	if clock == nil {
		return nil, errors.Join(fmt.Errorf("clock-jump: lock node %d (%s) runs without the clock shim", nf.i, nf.node.Name()), nf.release())
	}
	step2 := by
	if j.Direction == "backward" {
		step2 = -by
	}
	start := history.Now()
	if err := clock.Set(clock.Offset()+step2, clock.Rate()); err != nil {
		return nil, errors.Join(err, nf.release())
	}
	f := nf.fault(&Fault{
		Target: fmt.Sprintf("clock of lock node %d (%s) %s by %v", nf.i, nf.node.Name(), j.Direction, by),
		Params: map[string]string{"variant": "shim", "by": by.String(), "direction": j.Direction, "duration": d.String(),
			"offset": clock.Offset().Round(time.Millisecond).String()},
		Start: start,
		Heal:  func(context.Context) error { return clock.Set(0, 1) },
	})
	f.Effect, err = nf.effect(ctx, env, history.Now(), fmt.Sprintf("lock node %d's clock jumped %s by %s", nf.i, j.Direction, by))
	f.Duration = time.Until(timeOf(start).Add(d))
	return f, err
}
