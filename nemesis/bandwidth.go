package nemesis

import (
	"context"
	"fmt"

	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/proxy"
)

// Bandwidth throttles chosen links to a few kilobytes per second (a
// saturated or congested link): Redis commands are small, so each request
// and reply waits roughly its size divided by the rate, and a burst of
// commands queues behind the first.
type Bandwidth struct {
	opts  option.Values
	links linkChoice
}

func init() {
	Register(Spec{
		Name:        "bandwidth",
		Description: "toxiproxy bandwidth limit (KB/s) on client↔lock-node links",
		Options: []option.Spec{
			{Key: "rate", Default: "1", Help: "kilobytes per second through each link and direction"},
			{Key: "stream", Default: "both", Help: "upstream (requests), downstream (replies) or both"},
			{Key: "duration", Default: "5ttl", Help: "how long the links stay throttled"},
			linksOption("all"),
		},
		New: func(opts option.Values) (Nemesis, error) {
			if err := durations(opts, "duration"); err != nil {
				return nil, err
			}
			if r, err := opts.Int("rate"); err != nil || r < 1 {
				return nil, fmt.Errorf("option bandwidth.rate=%q: want a whole number of KB/s, at least 1", opts.String("rate"))
			}
			if _, err := streamsOf("bandwidth", opts.String("stream")); err != nil {
				return nil, err
			}
			links, err := parseLinks("bandwidth", opts.String("links"))
			return &Bandwidth{opts: opts, links: links}, err
		},
		Available: linksAvailable("bandwidth"),
	})
}

func (b *Bandwidth) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	rate, _ := b.opts.Int("rate")
	duration, _ := b.opts.Duration("duration")
	dirs, _ := streamsOf("bandwidth", b.opts.String("stream"))
	params := map[string]string{"rate": fmt.Sprintf("%dKB/s", rate), "stream": b.opts.String("stream"), "duration": duration.String()}
	return linkFault(ctx, env, step, b.links, duration, "throttled", params, func(links []*proxy.Link) (func(context.Context) error, error) {
		return addToxics(links, "bandwidth", "bandwidth", dirs, map[string]any{"rate": rate})
	})
}
