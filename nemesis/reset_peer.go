package nemesis

import (
	"context"
	"errors"
	"fmt"
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
//
// With span=renewal the resets last exactly across one renewal of the
// holder's lease instead of duration (renewalFault): the renewal a
// watchdog sends a third of the lease after the acquire fails, the next
// one goes through.
type ResetPeer struct {
	After    time.Duration `opt:"after" default:"0s" help:"how long after a request arrives the connection is reset (the request may reach Redis first)"`
	Stream   streams       `opt:"stream" default:"upstream" help:"reset on requests (upstream), on replies (downstream: the command ran, the answer is lost) or both"`
	Duration time.Duration `opt:"duration" default:"3ttl" help:"how long connections keep being reset"`
	Span     string        `opt:"span" default:"duration" oneof:"duration,renewal" help:"duration (resets go on for duration) or renewal (links=holder: from the holder's acquire to halfway between the first and second renewals of a watchdog renewing every third of the lease, so the first fails and the second goes through; landed when it covered the one, healed before the other and reset exactly one request)"`
	Hold     time.Duration `opt:"hold" default:"1.5ttl" help:"span=renewal: how long after its acquire's invoke the aimed holder stays in its critical section (as slow-hold does), past its lease, so that a lease no longer renewed runs out under a holder still at work; 0: only until the resets end"`
	Rest     time.Duration `opt:"rest" default:"1ttl" help:"span=renewal: how long the step's client first holds nothing before the acquire the fault aims at, so that no renewal timer of its earlier grants still runs (Redisson 3.52 keeps one per grant until it fires while the client holds nothing); 0: aim at its next grant"`
	onLinks
}

// Validate checks that span=renewal has a holder whose renewals to reset.
func (r *ResetPeer) Validate() error {
	if r.Span == "renewal" && r.Links.kind != "holder" {
		return errors.New("span=renewal resets the holder's connections across one renewal of its lease: it needs links=holder")
	}
	return nil
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
	if r.Span == "renewal" {
		delete(params, "duration") // the renewal's timing decides it
		params["span"] = "renewal"
		params["hold"] = r.Hold.String()
		params["rest"] = r.Rest.String()
		// A count toxic in front of the reset counts the connections it
		// resets: the renewals lost.
		tag := fmt.Sprintf("reset-peer-%d-%d", history.Now(), step.Client)
		reset := func() int { return proxy.Carried(tag) }
		return renewalFault(ctx, env, step, r.After, r.Hold, r.Rest, "resetting connections", params, reset, func(links []*proxy.Link) (func(context.Context) error, error) {
			count, err := addToxics(links, "reset-peer-count", "count", r.Stream.dirs(), map[string]any{"tag": tag})
			if err != nil {
				return nil, err
			}
			heal, err := r.resets(links)
			if err != nil {
				return nil, errors.Join(err, count(context.Background()))
			}
			return func(ctx context.Context) error { return errors.Join(heal(ctx), count(ctx)) }, nil
		})
	}
	return linkFault(ctx, env, step, r.onLinks, r.Duration, "resetting connections", params, r.resets)
}

// resets installs the reset_peer toxics on links.
func (r *ResetPeer) resets(links []*proxy.Link) (func(context.Context) error, error) {
	return addToxics(links, "reset-peer", "reset_peer", r.Stream.dirs(), map[string]any{"timeout": r.After.Milliseconds()})
}
