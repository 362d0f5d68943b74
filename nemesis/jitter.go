package nemesis

import (
	"context"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// Jitter makes the delay of chosen links vary from one chunk of data to the
// next, uniformly between 0 and twice the jitter: replies come back at
// unpredictable times, so a client cannot tell how much of its lease a
// round trip used.
type Jitter struct {
	Jitter   time.Duration `opt:"jitter" default:"0.2ttl" margin:"0.05ttl..1ttl" help:"mean delay per direction; each chunk waits between 0 and twice this"`
	Stream   streams       `opt:"stream" default:"both" help:"upstream (requests), downstream (replies) or both"`
	Duration time.Duration `opt:"duration" default:"5ttl" help:"how long the links jitter"`
	onLinks
}

func init() {
	Register(Spec{
		Name:        "jitter",
		Description: "toxiproxy latency that varies per chunk, between 0 and 2×jitter, on client↔lock-node links",
		Action:      history.ActionNetwork,
		New:         func() Nemesis { return new(Jitter) },
	})
}

func (j *Jitter) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	params := map[string]string{"jitter": j.Jitter.String(), "delay-range": "0-" + (2 * j.Jitter).String(), "stream": string(j.Stream), "duration": j.Duration.String()}
	return linkFault(ctx, env, step, j.onLinks, j.Duration, "jittery", params, func(links []*proxy.Link) (func(context.Context) error, error) {
		// toxiproxy's latency toxic waits latency ± jitter: centred on the
		// jitter, that is 0 to 2×jitter.
		ms := j.Jitter.Milliseconds()
		return addToxics(links, "jitter", "latency", j.Stream.dirs(), map[string]any{"latency": ms, "jitter": ms})
	})
}
