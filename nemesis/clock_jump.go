package nemesis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/option"
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
	opts option.Values
	node nodeChoice
}

func init() {
	Register(Spec{
		Name:        "clock-jump",
		Description: "step a lock node's wall clock (clock shim, LD_PRELOAD): forward expires its keys early",
		Options: []option.Spec{
			nodeOption("the node whose clock jumps"),
			{Key: "by", Default: "1.5ttl", Help: "how far the clock jumps"},
			{Key: "direction", Default: "forward", Help: "forward (keys expire early) or backward (keys live longer)"},
			whenOption(),
			{Key: "duration", Default: "3ttl", Help: "how long the clock stays off before it is stepped back to the real time"},
		},
		New: func(opts option.Values) (Nemesis, error) {
			if err := durations(opts, "by", "duration"); err != nil {
				return nil, err
			}
			if d := opts.String("direction"); d != "forward" && d != "backward" {
				return nil, fmt.Errorf("option clock-jump.direction=%q: want forward or backward", d)
			}
			if err := checkWhen("clock-jump", opts); err != nil {
				return nil, err
			}
			n, err := parseNode("clock-jump", opts.String("node"))
			return &ClockJump{opts: opts, node: n}, err
		},
		Available: shimAvailable("clock-jump"),
		NodeClock: true,
	})
}

func whenOption() option.Spec {
	return option.Spec{Key: "when", Default: "hold", Help: "hold (just after a client acquired, so a live lease is hit) or any (whenever the schedule says)"}
}

func checkWhen(owner string, opts option.Values) error {
	if w := opts.String("when"); w != "hold" && w != "any" {
		return fmt.Errorf("option %s.when=%q: want hold or any", owner, w)
	}
	return nil
}

// awaitHold returns ErrNoTarget unless a client acquired very recently (or
// when=any); the params name the holder.
func awaitHold(env Env, opts option.Values, params map[string]string) ([]int, error) {
	if opts.String("when") != "hold" {
		return nil, nil
	}
	h, ok := freshestHolder(env)
	if !ok || time.Since(h.Since) > env.TTL()/10 {
		return nil, ErrNoTarget
	}
	params["holder"], params["key"] = strconv.Itoa(h.Client), h.Key
	return []int{h.Client}, nil
}

// shimAvailable: the clock shim goes into processes that a backend starts
// with LD_PRELOAD; the local and docker backends do.
func shimAvailable(owner string) func(Topology, option.Values) error {
	return func(t Topology, opts option.Values) error {
		if t.Backend != "local" && t.Backend != "docker" {
			return fmt.Errorf("%s needs the clock shim in redis-server, which the %s backend cannot load: use clock-jump-ttl, which works on any Redis", owner, t.Backend)
		}
		return nodeAvailable(owner)(t, opts)
	}
}

// nodeClock finds the clock of lock node i.
func nodeClock(env Env, owner string, i int) (cluster.Node, *cluster.Clock, error) {
	node := env.LockNodes()[i]
	c := env.Clock(node)
	if c == nil {
		return nil, nil, fmt.Errorf("%s: lock node %d (%s) runs without the clock shim", owner, i, node.Name())
	}
	return node, c, nil
}

func (j *ClockJump) Inject(ctx context.Context, env Env) (*Fault, error) {
	by, _ := j.opts.Duration("by")
	d, _ := j.opts.Duration("duration")
	params := map[string]string{"variant": "shim", "by": by.String(), "direction": j.opts.String("direction"), "duration": d.String()}
	clients, err := awaitHold(env, j.opts, params)
	if err != nil {
		return nil, err
	}
	i := j.node.pick(env)
	node, clock, err := nodeClock(env, "clock-jump", i)
	if err != nil {
		return nil, err
	}
	step := by
	if j.opts.String("direction") == "backward" {
		step = -by
	}
	if err := clock.Set(clock.Offset()+step, clock.Rate()); err != nil {
		return nil, err
	}
	params["node"], params["offset"] = strconv.Itoa(i), clock.Offset().Round(time.Millisecond).String()
	return &Fault{
		Target:   fmt.Sprintf("clock of lock node %d (%s) %s by %v", i, node.Name(), j.opts.String("direction"), by),
		Params:   params,
		Clients:  clients,
		Duration: d,
		Heal:     func(context.Context) error { return clock.Set(0, 1) },
	}, nil
}
