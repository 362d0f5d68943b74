package nemesis

import (
	"context"
	"fmt"
	"strconv"

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

func (c *ClockDrift) Inject(ctx context.Context, env Env) (*Fault, error) {
	rate, _ := strconv.ParseFloat(c.opts.String("rate"), 64)
	d, _ := c.opts.Duration("duration")
	params := map[string]string{"variant": "shim", "rate": c.opts.String("rate"), "duration": d.String()}
	clients, err := awaitHold(env, c.opts, params)
	if err != nil {
		return nil, err
	}
	i := c.node.pick(env)
	node, clock, err := nodeClock(env, "clock-drift", i)
	if err != nil {
		return nil, err
	}
	if err := clock.Set(clock.Offset(), rate); err != nil {
		return nil, err
	}
	params["node"] = strconv.Itoa(i)
	return &Fault{
		Target:   fmt.Sprintf("clock of lock node %d (%s) runs at %s× real speed", i, node.Name(), c.opts.String("rate")),
		Params:   params,
		Clients:  clients,
		Duration: d,
		Heal:     func(context.Context) error { return clock.Set(0, 1) },
	}, nil
}
