package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// KillClient kills, with SIGKILL, the step's client in the middle of an
// acquire: with a multi-step lock (setnx-expire) the crash lands between
// the steps and leaves the lock key behind with no expiry. It lands by
// construction: the client's replies are slowed first (reply-delay), so
// its acquire stays in flight long enough to be killed there.
type KillClient struct {
	InFlight   time.Duration `opt:"in-flight" default:"0.1ttl" help:"kill the client once its acquire has been in flight this long"`
	ReplyDelay time.Duration `opt:"reply-delay" default:"0.2ttl" help:"how late the client's replies arrive until the kill, so that its acquire is in flight long enough; 0 leaves them alone"`
}

func init() {
	Register(Spec{
		Name:        "kill-client",
		Description: "SIGKILL a worker in the middle of an acquire (its replies slowed so the kill lands there)",
		Action:      history.ActionKill,
		New:         func() Nemesis { return new(KillClient) },
	})
}

func (k *KillClient) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	d, delay := k.InFlight, k.ReplyDelay
	proc, err := processesOf(env)
	if err != nil {
		return nil, err
	}
	c := step.Client
	start := history.Now()
	unslow := func(context.Context) error { return nil }
	if delay > 0 {
		net, err := linksOf(env)
		if err != nil {
			return nil, err
		}
		unslow, err = addToxics(net.Proxies().Links(is(c), nil), "kill-client-reply", "latency", []string{"downstream"}, map[string]any{"latency": delay.Milliseconds()})
		if err != nil {
			return nil, err
		}
	}
	// The slowed replies are part of the fault from now on: recorded even
	// if no kill follows.
	f := &Fault{
		Target:  "client " + strconv.Itoa(c),
		Params:  map[string]string{"signal": "SIGKILL", "in-flight": d.String(), "reply-delay": delay.String()},
		Clients: []int{c},
		Start:   start,
		Heal:    unslow,
	}
	// Wait for an acquire of c's in flight, then until it has been for d:
	// killed there if it still is, or the next one is waited for.
	var (
		acq    Acquire
		exited bool
	)
	wctx, cancel := context.WithTimeout(ctx, triggerWait(env))
	defer cancel()
	for {
		err := env.Await(wctx, func(v View) bool {
			acq, exited = v.Acquires[c], v.Exited[c]
			return exited || acq.Outcome == "" && acq.Invoked > 0
		})
		if err == nil && !exited {
			select {
			case <-wctx.Done():
				err = wctx.Err()
			case <-time.After(time.Duration(acq.Invoked + d.Nanoseconds() - history.Now())):
			}
		}
		if ctx.Err() != nil {
			f.Effect = &history.Effect{Note: "the run ended before the kill"}
			return f, ctx.Err()
		}
		if err != nil {
			f.Effect = &history.Effect{Note: fmt.Sprintf("client %d had no acquire in flight for %v within %v", c, d, triggerWait(env))}
			return f, nil
		}
		if exited {
			return nil, errors.Join(fmt.Errorf("%w: client %d has exited", ErrNoTarget, c), unslow(ctx))
		}
		if now := snapshot(env).Acquires[c]; now.Invoked == acq.Invoked && now.Outcome == "" {
			break
		}
	}
	if err := proc.Kill(c); err != nil {
		return nil, errors.Join(err, unslow(ctx))
	}
	f.Params["key"] = acq.Key
	f.Effect = &history.Effect{Landed: true,
		Note: fmt.Sprintf("client %d was killed %s into an acquire of %s", c, round(time.Duration(history.Now()-acq.Invoked)), acq.Key)}
	return f, nil
}
