package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// Bandwidth throttles chosen links to a few kilobytes per second (a
// saturated or congested link): Redis commands are small, so each request
// and reply waits roughly its size divided by the rate, and a burst of
// commands queues behind the first.
type Bandwidth struct {
	Rate     int           `opt:"rate" default:"1" help:"kilobytes per second through each link and direction"`
	Stream   streams       `opt:"stream" default:"both" help:"upstream (requests), downstream (replies) or both"`
	Duration time.Duration `opt:"duration" default:"5ttl" help:"how long the links stay throttled"`
	onLinks
}

func init() {
	Register(Spec{
		Name:        "bandwidth",
		Description: "toxiproxy bandwidth limit (KB/s) on client↔lock-node links",
		Action:      history.ActionNetwork,
		New:         func() Nemesis { return new(Bandwidth) },
	})
}

// Validate checks the rate.
func (b *Bandwidth) Validate() error {
	if b.Rate < 1 {
		return fmt.Errorf("rate=%d: want a whole number of KB/s, at least 1", b.Rate)
	}
	return nil
}

func (b *Bandwidth) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	params := map[string]string{"rate": fmt.Sprintf("%dKB/s", b.Rate), "stream": string(b.Stream), "duration": b.Duration.String()}
	return linkFault(ctx, env, step, b.onLinks, b.Duration, "throttled", params, func(links []*proxy.Link) (func(context.Context) error, error) {
		return addToxics(links, "bandwidth", "bandwidth", b.Stream.dirs(), map[string]any{"rate": b.Rate})
	})
}
