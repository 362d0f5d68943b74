package nemesis

import (
	"context"
	"strconv"

	"github.com/lockchaos/lockchaos/option"
)

// PauseClient freezes the process of a client that holds a lock with
// SIGSTOP, longer than the TTL, then resumes it with SIGCONT: the GC pause of
// the Redlock debate. Its goroutines, watchdogs included, freeze with it; when
// it resumes it still believes it holds the lock.
type PauseClient struct {
	duration option.Values
}

func init() {
	Register(Spec{
		Name:        "pause-client",
		Description: "SIGSTOP the worker process that holds a lock for longer than the TTL, then SIGCONT",
		Options: []option.Spec{
			{Key: "duration", Default: "3ttl", Help: "how long the client stays stopped"},
		},
		New: func(opts option.Values) (Nemesis, error) {
			if _, err := opts.Duration("duration"); err != nil {
				return nil, err
			}
			return &PauseClient{duration: opts}, nil
		},
	})
}

func (p *PauseClient) Inject(ctx context.Context, env Env) (*Fault, error) {
	holders := env.Holders()
	if len(holders) == 0 {
		return nil, ErrNoTarget
	}
	// The freshest hold has the most of its critical section left, so the
	// pause lands inside it.
	h := holders[0]
	for _, c := range holders[1:] {
		if c.Since.After(h.Since) {
			h = c
		}
	}
	d, _ := p.duration.Duration("duration")
	if err := env.Pause(h.Client); err != nil {
		return nil, err
	}
	return &Fault{
		Target:   "client " + strconv.Itoa(h.Client),
		Params:   map[string]string{"duration": d.String(), "key": h.Key, "signal": "SIGSTOP"},
		Clients:  []int{h.Client},
		Duration: d,
		Heal:     func(context.Context) error { return env.Resume(h.Client) },
	}, nil
}
