package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// onLinks is the option of every nemesis that acts on client links (one
// that defaults to other links than all declares its own Links field).
type onLinks struct {
	Links linkChoice `opt:"links" default:"all" help:"which client↔lock-node links: all, holder (the freshest holder's), client (a random client's), node (a random lock node's), client=N, node=N"`
}

// Applies checks a fixed client or node number against the topology.
func (o onLinks) Applies(t Topology) error { return o.Links.available(t) }

// linkChoice is a links option.
type linkChoice struct {
	kind string // all, holder, client, node
	n    int    // -1: random
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *linkChoice) UnmarshalText(b []byte) error {
	kind, arg, has := strings.Cut(string(b), "=")
	*c = linkChoice{kind: kind, n: -1}
	switch kind {
	case "all", "holder":
		if !has {
			return nil
		}
	case "client", "node":
		if !has {
			return nil
		}
		n, err := strconv.Atoi(arg)
		if err == nil && n >= 0 {
			c.n = n
			return nil
		}
	}
	return errors.New("want all, holder, client, node, client=N or node=N")
}

// available checks a fixed client or node number against the topology.
func (c linkChoice) available(t Topology) error {
	switch {
	case c.kind == "client" && c.n >= t.Clients:
		return fmt.Errorf("links=client=%d, but the run has clients 0 to %d", c.n, t.Clients-1)
	case c.kind == "node" && c.n >= t.LockNodes:
		return fmt.Errorf("links=node=%d, but the run has lock nodes 0 to %d", c.n, t.LockNodes-1)
	}
	return nil
}

// pick returns the chosen links, a description of the target, and the
// clients whose links they are when the choice was one client: the aimed
// holder's (holder), the step's client or node (client, node), or fixed.
func (c linkChoice) pick(env Env, ps *proxy.Proxies, step Step, a *aimed) ([]*proxy.Link, string, []int) {
	switch c.kind {
	case "holder":
		return ps.Links(is(a.Client), nil), fmt.Sprintf("links of client %d (holding %s)", a.Client, a.Key), []int{a.Client}
	case "client":
		n := c.n
		if n < 0 {
			n = step.Client
		}
		return ps.Links(is(n), nil), fmt.Sprintf("links of client %d", n), []int{n}
	case "node":
		n := c.n
		if n < 0 {
			n = step.Node % max(len(env.LockNodes()), 1)
		}
		return ps.Links(nil, is(n)), fmt.Sprintf("links to lock node %d", n), nil
	}
	links := ps.Links(nil, nil)
	return links, fmt.Sprintf("all %d client links", len(links)), nil
}

// linkFault is a fault on links: it waits for the step's client to hold
// the step's key (a live lease under the fault), installs the fault on the
// chosen links, and records whether the fault lasted past that lease. what
// says what the fault does to the links ("slow", "cut").
func linkFault(ctx context.Context, env Env, step Step, choice linkChoice, duration time.Duration, what string, params map[string]string,
	install func(links []*proxy.Link) (heal func(context.Context) error, err error)) (*Fault, error) {
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	a, err := aimAt(ctx, env, step, 0)
	if err != nil {
		return nil, err
	}
	links, target, clients := choice.pick(env, net.Proxies(), step, a)
	start := history.Now()
	heal, err := install(links)
	if err != nil {
		return nil, err
	}
	params["links"] = strconv.Itoa(len(links))
	f := &Fault{Target: target, Params: params, Clients: clients, Aim: a.aim(), Start: start, Duration: duration}
	f.Heal = func(ctx context.Context) error {
		err := heal(ctx)
		f.Effect = a.lastedEffect(start, history.Now(), "the links were "+what)
		return err
	}
	return f, nil
}

func is(n int) func(int) bool { return func(x int) bool { return x == n } }

// freshestHolder is the hold that began last: it has the most of its
// critical section left, so a fault aimed at it lands inside it.
func freshestHolder(env Env) (Holding, bool) {
	holders := env.Holders()
	if len(holders) == 0 {
		return Holding{}, false
	}
	h := holders[0]
	for _, c := range holders[1:] {
		if c.Since.After(h.Since) {
			h = c
		}
	}
	return h, true
}

// streams is a stream option: upstream (requests), downstream (replies)
// or both.
type streams string

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *streams) UnmarshalText(b []byte) error {
	switch v := string(b); v {
	case "both", "upstream", "downstream":
		*s = streams(v)
		return nil
	}
	return errors.New("want upstream, downstream or both")
}

// dirs are the toxiproxy streams it names.
func (s streams) dirs() []string {
	if s == "both" {
		return []string{"upstream", "downstream"}
	}
	return []string{string(s)}
}

// addToxics installs one toxic per stream on every link, named after the
// nemesis so that toxics of different nemeses compose on one link. If one
// fails, the ones already added are removed. The heal removes them all.
func addToxics(links []*proxy.Link, name, typ string, streams []string, attrs map[string]any) (func(context.Context) error, error) {
	var undo []func() error
	heal := func(context.Context) error {
		var errs []error
		for _, u := range undo {
			errs = append(errs, u())
		}
		return errors.Join(errs...)
	}
	for _, l := range links {
		for _, dir := range streams {
			tname := name + "-" + dir
			if err := l.AddToxic(proxy.Toxic{Name: tname, Type: typ, Stream: dir, Attributes: attrs}); err != nil {
				return nil, errors.Join(err, heal(context.Background()))
			}
			undo = append(undo, func() error { return l.RemoveToxic(tname) })
		}
	}
	return heal, nil
}
