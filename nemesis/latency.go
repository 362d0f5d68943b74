package nemesis

import (
	"context"

	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/proxy"
)

// Latency delays traffic on chosen client↔lock-node links with a toxiproxy
// latency toxic (delay plus random jitter per chunk of data).
type Latency struct {
	opts  option.Values
	links linkChoice
}

func init() {
	Register(Spec{
		Name:        "latency",
		Description: "toxiproxy latency + jitter on client↔lock-node links (every link by default)",
		Options: []option.Spec{
			{Key: "delay", Default: "0.25ttl", Help: "added delay per direction"},
			{Key: "jitter", Default: "0.1ttl", Help: "random extra delay, up to this much either way"},
			{Key: "stream", Default: "both", Help: "upstream (requests), downstream (replies) or both"},
			{Key: "duration", Default: "5ttl", Help: "how long the links stay slow"},
			linksOption("all"),
		},
		New: func(opts option.Values) (Nemesis, error) {
			if err := durations(opts, "delay", "jitter", "duration"); err != nil {
				return nil, err
			}
			if _, err := streamsOf("latency", opts.String("stream")); err != nil {
				return nil, err
			}
			links, err := parseLinks("latency", opts.String("links"))
			return &Latency{opts: opts, links: links}, err
		},
		Available: linksAvailable("latency"),
	})
}

func (l *Latency) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	delay, _ := l.opts.Duration("delay")
	jitter, _ := l.opts.Duration("jitter")
	duration, _ := l.opts.Duration("duration")
	dirs, _ := streamsOf("latency", l.opts.String("stream"))
	params := map[string]string{"delay": delay.String(), "jitter": jitter.String(), "stream": l.opts.String("stream"), "duration": duration.String()}
	return linkFault(ctx, env, step, l.links, duration, "slow", params, func(links []*proxy.Link) (func(context.Context) error, error) {
		return addToxics(links, "latency", "latency", dirs, map[string]any{"latency": delay.Milliseconds(), "jitter": jitter.Milliseconds()})
	})
}
