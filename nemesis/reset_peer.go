package nemesis

import (
	"context"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// ResetPeer resets the connections of chosen links: a request that arrives
// (after an optional delay) gets the connection torn down instead of an
// answer, so the client cannot tell whether its command ran. Connections
// opened while the fault is on close with a TCP RST (linger 0); ones that
// were already open close at their next request. Healing removes the toxic;
// clients reconnect.
type ResetPeer struct {
	After    time.Duration `opt:"after" default:"0s" help:"how long after a request arrives the connection is reset (the request may reach Redis first)"`
	Stream   streams       `opt:"stream" default:"upstream" help:"reset on requests (upstream), on replies (downstream: the command ran, the answer is lost) or both"`
	Duration time.Duration `opt:"duration" default:"3ttl" help:"how long connections keep being reset"`
	onLinks
}

func init() {
	Register(Spec{
		Name:        "reset-peer",
		Description: "toxiproxy reset_peer: connections on client↔lock-node links are reset when a request arrives",
		Action:      history.ActionNetwork,
		New:         func() Nemesis { return new(ResetPeer) },
	})
}

func (r *ResetPeer) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	params := map[string]string{"after": r.After.String(), "stream": string(r.Stream), "duration": r.Duration.String()}
	return linkFault(ctx, env, step, r.Links, r.Duration, "resetting connections", params, func(links []*proxy.Link) (func(context.Context) error, error) {
		return addToxics(links, "reset-peer", "reset_peer", r.Stream.dirs(), map[string]any{"timeout": r.After.Milliseconds()})
	})
}
