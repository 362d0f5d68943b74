package nemesis

import (
	"context"

	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/proxy"
)

// Jitter makes the delay of chosen links vary from one chunk of data to the
// next, uniformly between 0 and twice the jitter: replies come back at
// unpredictable times, so a client cannot tell how much of its lease a
// round trip used.
type Jitter struct {
	opts  option.Values
	links linkChoice
}

func init() {
	Register(Spec{
		Name:        "jitter",
		Description: "toxiproxy latency that varies per chunk, between 0 and 2×jitter, on client↔lock-node links",
		Options: []option.Spec{
			{Key: "jitter", Default: "0.2ttl", Help: "mean delay per direction; each chunk waits between 0 and twice this"},
			{Key: "stream", Default: "both", Help: "upstream (requests), downstream (replies) or both"},
			{Key: "duration", Default: "5ttl", Help: "how long the links jitter"},
			linksOption("all"),
		},
		New: func(opts option.Values) (Nemesis, error) {
			if err := durations(opts, "jitter", "duration"); err != nil {
				return nil, err
			}
			if _, err := streamsOf("jitter", opts.String("stream")); err != nil {
				return nil, err
			}
			links, err := parseLinks("jitter", opts.String("links"))
			return &Jitter{opts: opts, links: links}, err
		},
		Available: linksAvailable("jitter"),
	})
}

func (j *Jitter) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	jitter, _ := j.opts.Duration("jitter")
	duration, _ := j.opts.Duration("duration")
	dirs, _ := streamsOf("jitter", j.opts.String("stream"))
	params := map[string]string{"jitter": jitter.String(), "delay-range": "0-" + (2 * jitter).String(), "stream": j.opts.String("stream"), "duration": duration.String()}
	return linkFault(ctx, env, step, j.links, duration, "jittery", params, func(links []*proxy.Link) (func(context.Context) error, error) {
		// toxiproxy's latency toxic waits latency ± jitter: centred on the
		// jitter, that is 0 to 2×jitter.
		ms := jitter.Milliseconds()
		return addToxics(links, "jitter", "latency", dirs, map[string]any{"latency": ms, "jitter": ms})
	})
}
