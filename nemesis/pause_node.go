package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// PauseNode freezes a lock node's server (redis-server, an etcd member, a
// ZooKeeper server, a PostgreSQL postmaster) with SIGSTOP and resumes it
// with SIGCONT: a VM stall or a long fork. Requests queue in its socket
// buffers and run when it resumes, after their clients gave up on them (an
// acquire whose outcome the client never learned may still set the key).
// Its wall clock keeps running, so keys whose TTL passed during the pause
// expire as soon as it resumes. Only a node this run started is signalled,
// by its own process id.
type PauseNode struct {
	onNode
	Duration time.Duration `opt:"duration" default:"2ttl" margin:"0.1ttl..4ttl" help:"how long the node stays stopped"`
}

func init() {
	Register(Spec{
		Name:        "pause-node",
		Description: "SIGSTOP a lock node's server, then SIGCONT",
		Action:      history.ActionPause,
		New:         func() Nemesis { return new(PauseNode) },
	})
}

func (p *PauseNode) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	d := p.Duration
	// A frozen node needs no help to outlast a lease: aim without keeping
	// the holder inside (aimHeld).
	a, err := aimHeld(ctx, env, step)
	if err != nil {
		return nil, err
	}
	i := p.Node.pick(env, step, holdersOf(ctx, env, env.LockNodes(), a.Holding))
	node := env.LockNodes()[i]
	start := history.Now()
	err = node.Signal(syscall.SIGSTOP)
	if rerr := a.release(); err == nil {
		err = rerr
	}
	if err != nil {
		if errors.Is(err, cluster.ErrNotRunning) {
			return nil, fmt.Errorf("%w: lock node %d is down (another fault)", ErrNoTarget, i)
		}
		return nil, fmt.Errorf("pause lock node %d: %w", i, err)
	}
	f := &Fault{
		Target:   fmt.Sprintf("lock node %d (%s)", i, node.Name()),
		Params:   map[string]string{"node": strconv.Itoa(i), "signal": "SIGSTOP", "duration": d.String(), "holder": strconv.Itoa(a.Client), "key": a.Key},
		Nodes:    []int{i},
		Aim:      a.aim(),
		Start:    start,
		Duration: d,
	}
	f.Heal = func(context.Context) error {
		err := node.Signal(syscall.SIGCONT)
		f.Effect = a.lastedEffect(start, history.Now(), fmt.Sprintf("lock node %d was frozen", i), true)
		if errors.Is(err, cluster.ErrNotRunning) {
			return nil // killed meanwhile: whoever restarts it starts it running
		}
		return err
	}
	return f, nil
}
