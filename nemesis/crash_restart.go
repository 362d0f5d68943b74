package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/option"
)

// CrashRestart kills a lock node's redis-server with SIGKILL and starts it
// again on the same port. What it remembers is what its persistence saved
// (--persistence): none — every lock key is gone, and the next client takes
// a lock that someone still holds; everysec or always — the AOF brings the
// keys back, with their absolute expiry times. A delayed restart (delay
// longer than the largest TTL) is antirez's mitigation for running without
// persistence: by the time the node is back, every lease it granted has
// expired anyway.
type CrashRestart struct {
	opts option.Values
	node nodeChoice
}

func init() {
	Register(Spec{
		Name:        "crash-restart",
		Description: "SIGKILL a lock node, restart it on the same port (what survives depends on --persistence)",
		Options: []option.Spec{
			nodeOption("the crashed node"),
			{Key: "delay", Default: "0s", Help: "how long the node stays down before it restarts; more than the TTL (e.g. 1.5ttl) is antirez's delayed restart"},
			{Key: "when", Default: "hold", Help: "hold (crash while a client holds a lock, just after it acquired) or any (crash whenever the schedule says)"},
		},
		New: func(opts option.Values) (Nemesis, error) {
			if err := durations(opts, "delay"); err != nil {
				return nil, err
			}
			if w := opts.String("when"); w != "hold" && w != "any" {
				return nil, fmt.Errorf("option crash-restart.when=%q: want hold or any", w)
			}
			n, err := parseNode("crash-restart", opts.String("node"))
			return &CrashRestart{opts: opts, node: n}, err
		},
		Available: nodeAvailable("crash-restart"),
	})
}

func (c *CrashRestart) Inject(ctx context.Context, env Env) (*Fault, error) {
	delay, _ := c.opts.Duration("delay")
	params := map[string]string{"signal": "SIGKILL", "persistence": env.Topology().Persistence, "delay": delay.String()}
	if c.opts.String("when") == "hold" {
		// Just after an acquire: the holder has its whole critical
		// section left, so a quick restart lands inside it.
		h, ok := freshestHolder(env)
		if !ok || time.Since(h.Since) > env.TTL()/10 {
			return nil, ErrNoTarget
		}
		params["holder"] = strconv.Itoa(h.Client)
		params["key"] = h.Key
	}
	i := c.node.pick(env)
	node := env.LockNodes()[i]
	if err := node.Signal(syscall.SIGKILL); err != nil {
		if errors.Is(err, cluster.ErrNotRunning) {
			return nil, ErrNoTarget // already down (another fault); try later
		}
		return nil, fmt.Errorf("crash lock node %d: %w", i, err)
	}
	params["node"] = strconv.Itoa(i)
	restart := "at once"
	if delay > 0 {
		restart = "after " + delay.String()
	}
	return &Fault{
		Target:   fmt.Sprintf("lock node %d (%s), restarted %s", i, node.Name(), restart),
		Params:   params,
		Duration: delay,
		Heal: func(ctx context.Context) error {
			if err := node.Restart(ctx); err != nil {
				return fmt.Errorf("restart lock node %d after the crash: %w", i, err)
			}
			return nil
		},
	}, nil
}
