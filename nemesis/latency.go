package nemesis

import (
	"context"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// Latency delays traffic on chosen client↔lock-node links with a toxiproxy
// latency toxic (delay plus random jitter per chunk of data).
type Latency struct {
	Delay    time.Duration `opt:"delay" default:"0.25ttl" margin:"0.05ttl..1ttl" help:"added delay per direction"`
	Jitter   time.Duration `opt:"jitter" default:"0.1ttl" help:"random extra delay, up to this much either way"`
	Stream   streams       `opt:"stream" default:"both" help:"upstream (requests), downstream (replies) or both"`
	Duration time.Duration `opt:"duration" default:"5ttl" help:"how long the links stay slow"`
	onLinks
}

func init() {
	Register(Spec{
		Name:        "latency",
		Description: "toxiproxy latency + jitter on client↔lock-node links (every link by default)",
		Action:      history.ActionNetwork,
		New:         func() Nemesis { return new(Latency) },
	})
}

func (l *Latency) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	params := map[string]string{"delay": l.Delay.String(), "jitter": l.Jitter.String(), "stream": string(l.Stream), "duration": l.Duration.String()}
	return linkFault(ctx, env, step, l.onLinks, l.Duration, "slow", params, func(links []*proxy.Link) (func(context.Context) error, error) {
		return addToxics(links, "latency", "latency", l.Stream.dirs(), map[string]any{"latency": l.Delay.Milliseconds(), "jitter": l.Jitter.Milliseconds()})
	})
}
