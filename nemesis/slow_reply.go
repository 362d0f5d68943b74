package nemesis

import (
	"context"

	"github.com/lockchaos/lockchaos/option"
)

// SlowReply delays only the replies on one client's links: the server acts
// at once, but the client learns of it late. An acquire that returns after
// most of the TTL is gone leaves the client a lease shorter than its
// critical section, while the others, whose replies are prompt, take the
// lock as soon as the key expires. (Slow replies on every link would delay
// every client alike and hide this.)
type SlowReply struct {
	opts  option.Values
	links linkChoice
}

func init() {
	Register(Spec{
		Name:        "slow-reply",
		Description: "downstream-only latency on one client's links: the server acted, the client hears of it late",
		Options: []option.Spec{
			{Key: "delay", Default: "0.9ttl", Help: "how late replies arrive: more than TTL − hold breaks a plain lease; below the op timeout, or the client gives up instead"},
			{Key: "duration", Default: "5ttl", Help: "how long replies stay slow"},
			linksOption("client"),
		},
		New: func(opts option.Values) (Nemesis, error) {
			if err := durations(opts, "delay", "duration"); err != nil {
				return nil, err
			}
			links, err := parseLinks("slow-reply", opts.String("links"))
			return &SlowReply{opts: opts, links: links}, err
		},
		Available: linksAvailable("slow-reply"),
	})
}

func (s *SlowReply) Inject(ctx context.Context, env Env) (*Fault, error) {
	delay, _ := s.opts.Duration("delay")
	duration, _ := s.opts.Duration("duration")
	links, target, clients, err := s.links.pick(env)
	if err != nil {
		return nil, err
	}
	heal, err := addToxics(links, "slow-reply", "latency", []string{"downstream"}, map[string]any{"latency": delay.Milliseconds()})
	if err != nil {
		return nil, err
	}
	return &Fault{
		Target:   target,
		Params:   map[string]string{"delay": delay.String(), "stream": "downstream", "duration": duration.String()},
		Clients:  clients,
		Duration: duration,
		Heal:     heal,
	}, nil
}
