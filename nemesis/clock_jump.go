package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	By        time.Duration `opt:"by" default:"1.5ttl" margin:"0.1ttl..3ttl" help:"how far the clock jumps"`
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
