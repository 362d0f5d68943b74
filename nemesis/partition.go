package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
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
	Shape string `opt:"shape" default:"node" oneof:"node,client,split" help:"node (one lock node isolated), client (one client isolated) or split (each client sees its own majority; the views share a node)"`
	onNode
	Client   clientChoice  `opt:"client" default:"holder" help:"shape=client: the isolated client: holder (the step's client, once it holds its key) or a client number"`
	Mode     string        `opt:"mode" default:"drop" oneof:"drop,refuse" help:"drop (packets vanish; requests time out) or refuse (connections refused; requests fail fast)"`
	Duration time.Duration `opt:"duration" default:"5ttl" margin:"0.1ttl..5ttl" help:"how long the partition lasts"`
}

func init() {
	Register(Spec{
		Name:        "partition",
		Description: "cut client↔lock-node links: one node isolated, one client isolated, or RedLock's majority/minority split",
		Action:      history.ActionNetwork,
		New:         func() Nemesis { return new(Partition) },
	})
}

// Applies checks what the shape needs of the run.
func (p *Partition) Applies(t Topology) error {
	switch p.Shape {
	case "split":
		if t.LockNodes < 3 || t.Clients < 2 {
			return fmt.Errorf("partition shape=split needs at least 3 lock nodes and 2 clients (this run: %d nodes, %d clients): with fewer, both majorities are the same nodes; use --nodes 5 (RedLock) or shape=node", t.LockNodes, t.Clients)
		}
	case "client":
		if n := int(p.Client); n >= t.Clients {
			return fmt.Errorf("client=%d, but the run has clients 0 to %d", n, t.Clients-1)
		}
	case "node":
		return p.onNode.Applies(t)
	}
	return nil
}

// clientChoice is the client option: holder (the step's client; random
// says the same) or a client number.
type clientChoice int

const holderClient clientChoice = -1

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *clientChoice) UnmarshalText(b []byte) error {
	switch s := string(b); s {
	case "holder", "random": // the step's client either way
		*c = holderClient
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return errors.New("want holder or a client number")
	}
	*c = clientChoice(n)
	return nil
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
	duration, mode := p.Duration, p.Mode
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	ps := net.Proxies()
	params := map[string]string{"shape": p.Shape, "mode": mode, "duration": duration.String()}
	f := &Fault{Params: params, Duration: duration}
	var (
		links []*proxy.Link
		a     *aimed
		what  string
	)
	switch p.Shape {
	case "node", "client":
		// A cut needs no help to outlast a lease: aim at the step's hold
		// without keeping its client inside (aimHeld).
		if p.Client != holderClient && p.Shape == "client" {
			step.Client = int(p.Client)
		}
		if a, err = aimHeld(ctx, env, step); err != nil {
			return nil, err
		}
		f.Aim = a.aim()
	}
	switch p.Shape {
	case "node":
		n := p.Node.pick(env, step, holdersOf(ctx, env, env.LockNodes(), a.Holding))
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
	if a != nil {
		if rerr := a.release(); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return nil, err
	}
	params["links"] = strconv.Itoa(len(links))
	f.Heal = func(ctx context.Context) error {
		err := heal(ctx)
		if a != nil {
			f.Effect = a.lastedEffect(f.Start, history.Now(), what, true)
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
