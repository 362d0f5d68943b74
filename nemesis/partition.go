package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/history"
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
			{Key: "client", Default: "holder", Help: "shape=client: the isolated client: holder (the step's client, once it holds its key) or a client number"},
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
			if p.client == "random" {
				p.client = "holder" // the step's client either way
			}
			if p.client != "holder" {
				if n, err := strconv.Atoi(p.client); err != nil || n < 0 {
					return nil, fmt.Errorf("option partition.client=%q: want holder or a client number", p.client)
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

func (p *Partition) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	duration, _ := p.opts.Duration("duration")
	mode := p.opts.String("mode")
	ps := env.Proxies()
	params := map[string]string{"shape": p.shape, "mode": mode, "duration": duration.String()}
	f := &Fault{Params: params, Duration: duration}
	var (
		links []*proxy.Link
		a     *aimed
		what  string
	)
	switch p.shape {
	case "node", "client":
		// A cut needs no help to outlast a lease: aim at the step's hold
		// without keeping its client inside.
		if n, err := strconv.Atoi(p.client); err == nil && p.shape == "client" {
			step.Client = n
		}
		var err error
		if a, err = aimAt(ctx, env, step, 0); err != nil {
			return nil, err
		}
		f.Aim = a.aim()
	}
	switch p.shape {
	case "node":
		n := p.node.pick(env, step, holdersOf(ctx, env.LockNodes(), a.Holding))
		links = ps.Links(nil, is(n))
		// Its replicas lose it too: they must not keep copying the lock
		// keys of an isolated primary.
		if g := groupOf(env, n); g != nil {
			for _, m := range g.Replicas() {
				links = append(links, g.Relay(m))
			}
		}
		f.Target, f.Nodes = fmt.Sprintf("lock node %d isolated", n), []int{n}
		params["node"] = strconv.Itoa(n)
		what = fmt.Sprintf("lock node %d was cut off", n)
	case "client":
		links = ps.Links(is(a.Client), nil)
		f.Target, f.Clients = fmt.Sprintf("client %d isolated", a.Client), []int{a.Client}
		what = fmt.Sprintf("client %d was cut off", a.Client)
	case "split":
		nodes := len(env.LockNodes())
		even, odd := Views(nodes)
		for _, l := range ps.Links(nil, nil) {
			if (l.Client%2 == 0 && !slices.Contains(even, l.Node)) || (l.Client%2 == 1 && !slices.Contains(odd, l.Node)) {
				links = append(links, l)
			}
		}
		f.Target = fmt.Sprintf("even clients see nodes %s, odd clients %s", nodeList(even), nodeList(odd))
		params["even-clients-see"], params["odd-clients-see"] = nodeList(even), nodeList(odd)
	}
	f.Start = history.Now()
	heal, err := cut(links, mode)
	if err != nil {
		return nil, err
	}
	params["links"] = strconv.Itoa(len(links))
	f.Heal = func(ctx context.Context) error {
		err := heal(ctx)
		if a != nil {
			f.Effect = a.lastedEffect(f.Start, history.Now(), what)
		}
		return err
	}
	return f, nil
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
