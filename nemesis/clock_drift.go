package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/option"
)

// ClockDrift makes a lock node's wall clock run fast (or slow) for a while:
// at rate 8 a 300 ms lease lasts under 40 ms of real time on that node. Unlike a
// jump, every lease granted during the drift is short, not only the ones
// alive at one instant. Same clock shim as clock-jump; healing steps the
// node back to the real time.
type ClockDrift struct {
	opts option.Values
	node nodeChoice
}

func init() {
	Register(Spec{
		Name:        "clock-drift",
		Description: "make a lock node's wall clock run fast or slow (clock shim, LD_PRELOAD): leases there expire early or late",
		Options: []option.Spec{
			nodeOption("the node whose clock drifts"),
			{Key: "rate", Default: "8", Help: "how fast the node's clock runs: 2 is twice real speed, 0.5 half"},
			whenOption(),
			votesOption(),
			{Key: "duration", Default: "5ttl", Help: "how long the clock drifts before it is stepped back to the real time"},
		},
		New: func(opts option.Values) (Nemesis, error) {
			if err := durations(opts, "duration"); err != nil {
				return nil, err
			}
			if r, err := strconv.ParseFloat(opts.String("rate"), 64); err != nil || r < 0 || r > 1000 {
				return nil, fmt.Errorf("option clock-drift.rate=%q: want a number from 0 to 1000 (1 is real speed)", opts.String("rate"))
			}
			if err := checkWhen("clock-drift", opts); err != nil {
				return nil, err
			}
			n, err := parseNode("clock-drift", opts.String("node"))
			return &ClockDrift{opts: opts, node: n}, err
		},
		Available: shimAvailable("clock-drift"),
		NodeClock: true,
	})
}

func (c *ClockDrift) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	rate, _ := strconv.ParseFloat(c.opts.String("rate"), 64)
	d, _ := c.opts.Duration("duration")
	nf, err := aimNode(ctx, env, step, c.opts, c.node)
	if err != nil {
		return nil, err
	}
	node, clock, err := nodeClock(env, "clock-drift", nf.i)
	if err != nil {
		return nil, errors.Join(err, nf.release())
	}
	start := history.Now()
	if err := clock.Set(clock.Offset(), rate); err != nil {
		return nil, errors.Join(err, nf.release())
	}
	f := nf.fault(&Fault{
		Target: fmt.Sprintf("clock of lock node %d (%s) runs at %s× real speed", nf.i, node.Name(), c.opts.String("rate")),
		Params: map[string]string{"variant": "shim", "rate": c.opts.String("rate"), "duration": d.String()},
		Start:  start,
		Heal:   func(context.Context) error { return clock.Set(0, 1) },
	})
	// A fast clock takes the lease away only once the node's time has run
	// past its expiry: wait for that (or the stretch's bound).
	at := nf.awaitGone(ctx)
	f.Effect, err = nf.effect(ctx, env, at, fmt.Sprintf("lock node %d's clock ran at %s× real speed", nf.i, c.opts.String("rate")))
	f.Duration = time.Until(timeOf(start).Add(d))
	return f, err
}
