package nemesis

import (
	"context"

	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/proxy"
)

// ResetPeer resets the connections of chosen links: a request that arrives
// (after an optional delay) gets the connection torn down instead of an
// answer, so the client cannot tell whether its command ran. Connections
// opened while the fault is on close with a TCP RST (linger 0); ones that
// were already open close at their next request. Healing removes the toxic;
// clients reconnect.
type ResetPeer struct {
	opts  option.Values
	links linkChoice
}

func init() {
	Register(Spec{
		Name:        "reset-peer",
		Description: "toxiproxy reset_peer: connections on client↔lock-node links are reset when a request arrives",
		Options: []option.Spec{
			{Key: "after", Default: "0s", Help: "how long after a request arrives the connection is reset (the request may reach Redis first)"},
			{Key: "stream", Default: "upstream", Help: "reset on requests (upstream), on replies (downstream: the command ran, the answer is lost) or both"},
			{Key: "duration", Default: "3ttl", Help: "how long connections keep being reset"},
			linksOption("all"),
		},
		New: func(opts option.Values) (Nemesis, error) {
			if err := durations(opts, "after", "duration"); err != nil {
				return nil, err
			}
			if _, err := streamsOf("reset-peer", opts.String("stream")); err != nil {
				return nil, err
			}
			links, err := parseLinks("reset-peer", opts.String("links"))
			return &ResetPeer{opts: opts, links: links}, err
		},
		Available: linksAvailable("reset-peer"),
	})
}

func (r *ResetPeer) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	after, _ := r.opts.Duration("after")
	duration, _ := r.opts.Duration("duration")
	dirs, _ := streamsOf("reset-peer", r.opts.String("stream"))
	params := map[string]string{"after": after.String(), "stream": r.opts.String("stream"), "duration": duration.String()}
	return linkFault(ctx, env, step, r.links, duration, "resetting connections", params, func(links []*proxy.Link) (func(context.Context) error, error) {
		return addToxics(links, "reset-peer", "reset_peer", dirs, map[string]any{"timeout": after.Milliseconds()})
	})
}
