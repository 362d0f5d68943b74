package nemesis

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// CrashRestart kills a lock node's server with SIGKILL and starts it again
// on the same port. A Redis node remembers what its persistence saved
// (--persistence): none — every lock key is gone, and the next client takes
// a lock that someone still holds; everysec or always — the AOF brings the
// keys back, with their absolute expiry times. A delayed restart (delay
// longer than the largest TTL) is antirez's mitigation for running without
// persistence: by the time the node is back, every lease it granted has
// expired anyway.
//
// With when=hold (the default) it lands by construction: it waits for the
// step's client to hold the step's key, keeps that client inside its
// critical section, crashes a node that holds the lease (node=holder), and
// after the restart asks the node whether it still has the key. The fault
// landed when the node came back while the lease still lived by its TTL
// (with a delay: when it crashed while the lease lived); the lease is lost
// when the holder is left with fewer nodes than the lock needs, and the
// holder then stays inside until another client takes the key.
type CrashRestart struct {
	onNode
	Delay time.Duration `opt:"delay" default:"0s" margin:"0ttl..3ttl" help:"how long the node stays down before it restarts; more than the TTL (e.g. 1.5ttl) is antirez's delayed restart"`
	onHold
}

func init() {
	Register(Spec{
		Name:        "crash-restart",
		Description: "SIGKILL a lock node, restart it on the same port (what survives depends on --persistence)",
		Action:      history.ActionCrash,
		New:         func() Nemesis { return new(CrashRestart) },
	})
}

func (c *CrashRestart) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	delay := c.Delay
	params := map[string]string{"signal": "SIGKILL", "persistence": env.Topology().Persistence, "delay": delay.String()}
	nf, err := aimNode(ctx, env, step, c.onHold, c.Node)
	if err != nil {
		return nil, err
	}
	a, i, node := nf.a, nf.i, nf.node
	start := history.Now()
	if err := node.Signal(syscall.SIGKILL); err != nil {
		if a != nil {
			err = errors.Join(err, a.release())
		}
		if errors.Is(err, cluster.ErrNotRunning) {
			return nil, fmt.Errorf("%w: lock node %d is already down (another fault)", ErrNoTarget, i)
		}
		return nil, fmt.Errorf("crash lock node %d: %w", i, err)
	}
	restart := "at once"
	if delay > 0 {
		restart = "after " + delay.String()
	}
	f := nf.fault(&Fault{
		Target:   fmt.Sprintf("lock node %d (%s), restarted %s", i, node.Name(), restart),
		Params:   params,
		Start:    start,
		Duration: delay,
	})
	var rerr error
	if a != nil && delay > 0 {
		// antirez's delayed restart: the node stays away past the
		// lease, so there is no forgetting to wait for. The holder goes
		// on.
		rerr = a.release()
	}
	f.Heal = func(ctx context.Context) error {
		if err := node.Restart(ctx); err != nil {
			return errors.Join(fmt.Errorf("restart lock node %d after the crash: %w", i, err), aRelease(a))
		}
		if a != nil && delay > 0 {
			// The fault hit the hold if its lease lived at the crash;
			// what the restart without it allows comes now (said at the
			// heal: a restart after the workload ended did not land).
			f.Effect = &history.Effect{Landed: a.liveAt(start),
				Note: fmt.Sprintf("lock node %d crashed while client %d held %s and stayed down for %s", i, a.Client, a.Key, delay)}
		}
		if a == nil || delay > 0 {
			return nil
		}
		at := history.Now()
		e, err := nf.effect(ctx, env, at, fmt.Sprintf("lock node %d was back %s after the crash", i, round(time.Duration(at-start))))
		f.Effect = e
		return err
	}
	return f, rerr
}
