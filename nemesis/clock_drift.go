package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// ClockDrift makes a lock node's wall clock run fast (or slow) for a while:
// at rate 8 a 300 ms lease lasts under 40 ms of real time on that node. Unlike a
// jump, every lease granted during the drift is short, not only the ones
// alive at one instant. Same clock shim as clock-jump; healing steps the
// node back to the real time.
type ClockDrift struct {
	onNode
	Rate float64 `opt:"rate" default:"8" margin:"1..16" help:"how fast the node's clock runs: 2 is twice real speed, 0.5 half"`
	onHold
	Duration time.Duration `opt:"duration" default:"5ttl" help:"how long the clock drifts before it is stepped back to the real time"`
}

func init() {
	Register(Spec{
		Name:        "clock-drift",
		Description: "make a lock node's wall clock run fast or slow (clock shim, LD_PRELOAD): leases there expire early or late",
		Action:      history.ActionClock,
		New:         func() Nemesis { return new(ClockDrift) },
		NodeClock:   true,
	})
}

// Validate checks the rate.
func (c *ClockDrift) Validate() error {
	if c.Rate < 0 || c.Rate > 1000 {
		return fmt.Errorf("rate=%s: want a number from 0 to 1000 (1 is real speed)", c.rate())
	}
	return nil
}

// Applies: the node must run under the clock shim, and a fixed node exist.
func (c *ClockDrift) Applies(t Topology) error {
	if err := shimApplies("clock-drift", t); err != nil {
		return err
	}
	return c.onNode.Applies(t)
}

// rate is the rate as the record shows it.
func (c *ClockDrift) rate() string { return strconv.FormatFloat(c.Rate, 'g', -1, 64) }

func (c *ClockDrift) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	rate, d := c.Rate, c.Duration
	clocks, err := clocksOf(env)
	if err != nil {
		return nil, err
	}
	nf, err := aimNode(ctx, env, step, c.onHold, c.Node)
	if err != nil {
		return nil, err
	}
	node, clock, err := nodeClock(env, clocks, "clock-drift", nf.i)
	if err != nil {
		return nil, errors.Join(err, nf.release())
	}
	start := history.Now()
	if err := clock.Set(clock.Offset(), rate); err != nil {
		return nil, errors.Join(err, nf.release())
	}
	f := nf.fault(&Fault{
		Target: fmt.Sprintf("clock of lock node %d (%s) runs at %s× real speed", nf.i, node.Name(), c.rate()),
		Params: map[string]string{"variant": "shim", "rate": c.rate(), "duration": d.String()},
		Start:  start,
		Heal:   func(context.Context) error { return clock.Set(0, 1) },
	})
	// A fast clock takes the lease away only once the node's time has run
	// past its expiry: wait for that (or the stretch's bound).
	at := nf.awaitGone(ctx)
	f.Effect, err = nf.effect(ctx, env, at, fmt.Sprintf("lock node %d's clock ran at %s× real speed", nf.i, c.rate()))
	f.Duration = time.Until(timeOf(start).Add(d))
	return f, err
}
