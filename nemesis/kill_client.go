package nemesis

import (
	"context"
	"strconv"

	"github.com/lockchaos/lockchaos/option"
)

// KillClient kills, with SIGKILL, a client that is in the middle of an
// acquire: with a multi-step lock (setnx-expire) the crash can land between
// the steps and leave the lock key behind with no expiry.
type KillClient struct {
	inFlight option.Values
}

func init() {
	Register(Spec{
		Name:        "kill-client",
		Description: "SIGKILL a worker whose acquire has been in flight for a while (a crash in the middle of acquiring)",
		Options: []option.Spec{
			{Key: "in-flight", Default: "20ms", Help: "kill only a client whose acquire has been in flight at least this long"},
		},
		New: func(opts option.Values) (Nemesis, error) {
			if _, err := opts.Duration("in-flight"); err != nil {
				return nil, err
			}
			return &KillClient{inFlight: opts}, nil
		},
	})
}

func (k *KillClient) Inject(ctx context.Context, env Env) (*Fault, error) {
	d, _ := k.inFlight.Duration("in-flight")
	clients := env.Acquiring(d)
	if len(clients) == 0 {
		return nil, ErrNoTarget
	}
	c := clients[env.Rand().IntN(len(clients))]
	if err := env.Kill(c); err != nil {
		return nil, err
	}
	return &Fault{
		Target:  "client " + strconv.Itoa(c),
		Params:  map[string]string{"signal": "SIGKILL", "in-flight": d.String()},
		Clients: []int{c},
	}, nil
}
