package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/proxy"
)

// Partition cuts client↔lock-node links in the shapes that matter for
// locks:
//
//   - node: one lock node isolated from every client (and from its
//     replicas): a single-node lock is unavailable, a quorum lock loses one
//     vote;
//   - client: one client (by default the freshest holder) isolated from
//     every lock node: it cannot release or renew, and its lease runs out
//     while it works;
//   - split: each client sees a majority of the nodes, but not the same
//     one — with five nodes the even clients see {n0,n1,n2} and the odd ones
//     {n2,n3,n4}. Both sides can reach a quorum, and only the shared node
//     n2 stands between them: RedLock's split, harmless until n2 forgets
//     (a clock jump, a restart without persistence).
//
// A cut link drops everything (mode drop: toxiproxy's timeout toxic with
// timeout 0, so requests time out and their outcome is unknown) or refuses
// connections (mode refuse: the link's proxy stops listening, so requests
// fail at once). Healing restores the links; open connections are closed and
// clients reconnect.
type Partition struct {
	opts   option.Values
	shape  string
	node   nodeChoice
	client string
}

func init() {
	Register(Spec{
		Name:        "partition",
		Description: "cut client↔lock-node links: one node isolated, one client isolated, or RedLock's majority/minority split",
		Options: []option.Spec{
			{Key: "shape", Default: "node", Help: "node (one lock node isolated), client (one client isolated) or split (each client sees its own majority; the views share a node)"},
			nodeOption("shape=node: the isolated node"),
			{Key: "client", Default: "holder", Help: "shape=client: the isolated client: holder (the freshest holder), random, or a client number"},
			{Key: "mode", Default: "drop", Help: "drop (packets vanish; requests time out) or refuse (connections refused; requests fail fast)"},
			{Key: "duration", Default: "5ttl", Help: "how long the partition lasts"},
		},
		New: func(opts option.Values) (Nemesis, error) {
			p := &Partition{opts: opts, shape: opts.String("shape"), client: opts.String("client")}
			if err := durations(opts, "duration"); err != nil {
				return nil, err
			}
			switch p.shape {
			case "node", "client", "split":
			default:
				return nil, fmt.Errorf("option partition.shape=%q: want node, client or split", p.shape)
			}
			if m := opts.String("mode"); m != "drop" && m != "refuse" {
				return nil, fmt.Errorf("option partition.mode=%q: want drop or refuse", m)
			}
			if p.client != "holder" && p.client != "random" {
				if n, err := strconv.Atoi(p.client); err != nil || n < 0 {
					return nil, fmt.Errorf("option partition.client=%q: want holder, random or a client number", p.client)
				}
			}
			var err error
			p.node, err = parseNode("partition", opts.String("node"))
			return p, err
		},
		Available: func(t Topology, opts option.Values) error {
			switch opts.String("shape") {
			case "split":
				if t.LockNodes < 3 || t.Clients < 2 {
					return fmt.Errorf("partition shape=split needs at least 3 lock nodes and 2 clients (this run: %d nodes, %d clients): with fewer, both majorities are the same nodes; use --nodes 5 (RedLock) or shape=node", t.LockNodes, t.Clients)
				}
			case "client":
				if n, err := strconv.Atoi(opts.String("client")); err == nil && n >= t.Clients {
					return fmt.Errorf("partition.client=%d, but the run has clients 0 to %d", n, t.Clients-1)
				}
			case "node":
				return nodeAvailable("partition")(t, opts)
			}
			return nil
		},
	})
}

// Views returns, for a split of nodes lock nodes, the nodes the even
// clients see and the nodes the odd clients see: two majorities that share
// as few nodes as possible.
func Views(nodes int) (even, odd []int) {
	maj := nodes/2 + 1
	for n := 0; n < maj; n++ {
		even = append(even, n)
	}
	for n := nodes - maj; n < nodes; n++ {
		odd = append(odd, n)
	}
	return even, odd
}

func (p *Partition) Inject(ctx context.Context, env Env) (*Fault, error) {
	duration, _ := p.opts.Duration("duration")
	mode := p.opts.String("mode")
	ps := env.Proxies()
	params := map[string]string{"shape": p.shape, "mode": mode, "duration": duration.String()}
	var (
		links   []*proxy.Link
		target  string
		clients []int
	)
	switch p.shape {
	case "node":
		n := p.node.pick(env)
		links = ps.Links(nil, is(n))
		// Its replicas lose it too: they must not keep copying the lock
		// keys of an isolated primary.
		if g := groupOf(env, n); g != nil {
			for _, m := range g.Replicas() {
				links = append(links, g.Relay(m))
			}
		}
		target = fmt.Sprintf("lock node %d isolated", n)
		params["node"] = strconv.Itoa(n)
	case "client":
		c, err := p.pickClient(env)
		if err != nil {
			return nil, err
		}
		links = ps.Links(is(c), nil)
		target = fmt.Sprintf("client %d isolated", c)
		clients = []int{c}
	case "split":
		nodes := len(env.LockNodes())
		even, odd := Views(nodes)
		sees := func(view []int) func(int) bool {
			return func(n int) bool {
				for _, v := range view {
					if v == n {
						return true
					}
				}
				return false
			}
		}
		evenSees, oddSees := sees(even), sees(odd)
		for _, l := range ps.Links(nil, nil) {
			if (l.Client%2 == 0 && !evenSees(l.Node)) || (l.Client%2 == 1 && !oddSees(l.Node)) {
				links = append(links, l)
			}
		}
		target = fmt.Sprintf("even clients see nodes %s, odd clients %s", nodeList(even), nodeList(odd))
		params["even-clients-see"], params["odd-clients-see"] = nodeList(even), nodeList(odd)
	}
	heal, err := cut(links, mode)
	if err != nil {
		return nil, err
	}
	params["links"] = strconv.Itoa(len(links))
	return &Fault{Target: target, Params: params, Clients: clients, Duration: duration, Heal: heal}, nil
}

func (p *Partition) pickClient(env Env) (int, error) {
	switch p.client {
	case "holder":
		h, ok := freshestHolder(env)
		if !ok {
			return 0, ErrNoTarget
		}
		return h.Client, nil
	case "random":
		return env.Rand().IntN(env.Topology().Clients), nil
	}
	return strconv.Atoi(p.client)
}

// cut severs links in mode drop or refuse and returns the heal.
func cut(links []*proxy.Link, mode string) (func(context.Context) error, error) {
	if mode == "drop" {
		return addToxics(links, "partition", "timeout", []string{"upstream", "downstream"}, map[string]any{"timeout": 0})
	}
	for _, l := range links {
		l.Disable()
	}
	return func(context.Context) error {
		var errs []error
		for _, l := range links {
			errs = append(errs, l.Enable())
		}
		return errors.Join(errs...)
	}, nil
}

func nodeList(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, "n"+strconv.Itoa(n))
	}
	return "{" + strings.Join(s, ",") + "}"
}

// groupOf is lock node n's replication group, or nil.
func groupOf(env Env, n int) *Group {
	gs := env.Groups()
	if n < len(gs) {
		return gs[n]
	}
	return nil
}
