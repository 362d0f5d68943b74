package nemesis

import (
	"context"
	"strconv"

	"github.com/lockchaos/lockchaos/option"
)

// SlowHold makes the holder's critical section outlive its TTL with no
// fault at all: the business operation is simply slow (the seeds' first
// warning). The worker is not paused — it keeps running, and a lock with a
// watchdog keeps renewing — it just does not leave its critical section
// until the stretch ends. A lock without renewal is held by two clients once
// the TTL passes; a renewing lock should survive this, which is what tells
// it apart from pause-client. Mechanism: SIGUSR1 to the worker turns the
// stretch on, SIGUSR2 turns it off (workload/stretch.go).
type SlowHold struct {
	opts option.Values
}

func init() {
	Register(Spec{
		Name:        "slow-hold",
		Description: "the holder's critical section runs past the TTL, process running (no pause, no network fault)",
		Options: []option.Spec{
			{Key: "by", Default: "2ttl", Help: "how long the holder stays in its critical section once stretched"},
		},
		New: func(opts option.Values) (Nemesis, error) {
			return &SlowHold{opts: opts}, durations(opts, "by")
		},
	})
}

func (s *SlowHold) Inject(ctx context.Context, env Env) (*Fault, error) {
	by, _ := s.opts.Duration("by")
	h, ok := freshestHolder(env)
	if !ok {
		return nil, ErrNoTarget
	}
	if err := env.Stretch(h.Client, true); err != nil {
		return nil, err
	}
	return &Fault{
		Target:   "client " + strconv.Itoa(h.Client),
		Params:   map[string]string{"by": by.String(), "key": h.Key, "signal": "SIGUSR1 (stretch on), then SIGUSR2"},
		Clients:  []int{h.Client},
		Duration: by,
		Heal:     func(context.Context) error { return env.Stretch(h.Client, false) },
	}, nil
}
