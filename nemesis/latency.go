package nemesis

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/proxy"
)

// Latency delays traffic on every client↔lock-node link with a toxiproxy
// latency toxic (delay plus random jitter per chunk of data).
type Latency struct {
	opts option.Values
}

func init() {
	Register(Spec{
		Name:        "latency",
		Description: "toxiproxy latency + jitter on every client↔lock-node link",
		Options: []option.Spec{
			{Key: "delay", Default: "0.25ttl", Help: "added delay per direction"},
			{Key: "jitter", Default: "0.1ttl", Help: "random extra delay, up to this much"},
			{Key: "stream", Default: "both", Help: "upstream (requests), downstream (replies) or both"},
			{Key: "duration", Default: "5ttl", Help: "how long the links stay slow"},
		},
		New: func(opts option.Values) (Nemesis, error) {
			for _, k := range []string{"delay", "jitter", "duration"} {
				if _, err := opts.Duration(k); err != nil {
					return nil, err
				}
			}
			if _, err := streams(opts.String("stream")); err != nil {
				return nil, err
			}
			return &Latency{opts: opts}, nil
		},
	})
}

func streams(s string) ([]string, error) {
	switch s {
	case "both":
		return []string{"upstream", "downstream"}, nil
	case "upstream", "downstream":
		return []string{s}, nil
	}
	return nil, fmt.Errorf("option latency.stream=%q: want upstream, downstream or both", s)
}

func (l *Latency) Inject(ctx context.Context, env Env) (*Fault, error) {
	delay, _ := l.opts.Duration("delay")
	jitter, _ := l.opts.Duration("jitter")
	duration, _ := l.opts.Duration("duration")
	dirs, _ := streams(l.opts.String("stream"))
	links := env.Proxies().Links(nil, nil)
	var added []func() error
	heal := func(context.Context) error {
		var errs []error
		for _, undo := range added {
			errs = append(errs, undo())
		}
		return errors.Join(errs...)
	}
	for _, link := range links {
		for _, dir := range dirs {
			name := "latency-" + dir
			t := proxy.Toxic{Name: name, Type: "latency", Stream: dir, Attributes: map[string]any{
				"latency": delay.Milliseconds(), "jitter": jitter.Milliseconds(),
			}}
			if err := link.AddToxic(t); err != nil {
				return nil, errors.Join(err, heal(ctx))
			}
			added = append(added, func() error { return link.RemoveToxic(name) })
		}
	}
	return &Fault{
		Target:   fmt.Sprintf("%d client links", len(links)),
		Params:   map[string]string{"delay": delay.String(), "jitter": jitter.String(), "stream": l.opts.String("stream"), "duration": duration.String()},
		Duration: duration,
		Heal:     heal,
	}, nil
}
