package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/option"
)

// PauseNode freezes a lock node's redis-server with SIGSTOP and resumes it
// with SIGCONT: a VM stall or a long fork. Requests queue in its socket
// buffers and run when it resumes, after their clients gave up on them (an
// acquire whose outcome the client never learned may still set the key).
// Its wall clock keeps running, so keys whose TTL passed during the pause
// expire as soon as it resumes. Only a node this run started is signalled,
// by its own process id.
type PauseNode struct {
	opts option.Values
	node nodeChoice
}

func init() {
	Register(Spec{
		Name:        "pause-node",
		Description: "SIGSTOP a lock node's redis-server, then SIGCONT",
		Options: []option.Spec{
			nodeOption("the paused node"),
			{Key: "duration", Default: "2ttl", Help: "how long the node stays stopped"},
		},
		New: func(opts option.Values) (Nemesis, error) {
			if err := durations(opts, "duration"); err != nil {
				return nil, err
			}
			n, err := parseNode("pause-node", opts.String("node"))
			return &PauseNode{opts: opts, node: n}, err
		},
		Available: nodeAvailable("pause-node"),
	})
}

func (p *PauseNode) Inject(ctx context.Context, env Env) (*Fault, error) {
	d, _ := p.opts.Duration("duration")
	i := p.node.pick(env)
	node := env.LockNodes()[i]
	if err := node.Signal(syscall.SIGSTOP); err != nil {
		if errors.Is(err, cluster.ErrNotRunning) {
			return nil, ErrNoTarget // another fault killed it; try again later
		}
		return nil, fmt.Errorf("pause lock node %d: %w", i, err)
	}
	return &Fault{
		Target:   fmt.Sprintf("lock node %d (%s)", i, node.Name()),
		Params:   map[string]string{"node": strconv.Itoa(i), "signal": "SIGSTOP", "duration": d.String()},
		Duration: d,
		Heal: func(context.Context) error {
			err := node.Signal(syscall.SIGCONT)
			if errors.Is(err, cluster.ErrNotRunning) {
				return nil // killed meanwhile: whoever restarts it starts it running
			}
			return err
		},
	}, nil
}
