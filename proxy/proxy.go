// Package proxy puts an in-process toxiproxy in front of every link the
// nemeses may want to hurt: one proxy per (client, node) pair, so a fault can
// slow or cut a single client's view of a single node.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/lockchaos/lockchaos/internal/ports"
	"github.com/rs/zerolog"
	"github.com/rs/zerolog/log"
)

// toxiproxy's bandwidth toxic logs through zerolog's global logger, at
// trace level, on every heal; nothing else in lockchaos uses zerolog.
func init() { log.Logger = zerolog.Nop() }

// Proxies owns every link of a run.
type Proxies struct {
	server *toxiproxy.ApiServer
	ports  *ports.Lease // the links' ports, given back by Close

	mu     sync.Mutex
	links  []*Link
	relays []*Link
}

// New returns an empty set of proxies. No HTTP API is opened: the nemeses
// drive toxiproxy as a library.
func New() *Proxies {
	return &Proxies{server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), ports: ports.NewLease()}
}

// Link is one proxied connection path from a client to a node, or, for a
// relay, from one server to another (a replica to its primary, a NATS
// server to a peer's route port).
type Link struct {
	Client int // -1 for a relay
	Node   int // the lock node (replication group) it leads to
	Name   string
	// Member, when set, is the one member of the lock node's group this
	// link leads to (AddMember); otherwise a client link leads to the
	// lock node's primary, wherever a failover puts it.
	Member string
	p      *toxiproxy.Proxy

	mu       sync.Mutex // serialises SetUpstream, Disable and Enable
	disabled int        // how many faults want it disabled
}

// Add starts a proxy on a free 127.0.0.1 port that forwards to upstream.
func (ps *Proxies) Add(client, node int, upstream string) (*Link, error) {
	l, err := ps.start(fmt.Sprintf("c%d-n%d", client, node), upstream)
	if err != nil {
		return nil, err
	}
	l.Client, l.Node = client, node
	ps.mu.Lock()
	ps.links = append(ps.links, l)
	ps.mu.Unlock()
	return l, nil
}

// AddMember starts a client link to one member of lock node node, for a
// client that finds the primary itself (by asking Sentinel): it leads to
// that member whatever a failover does, and a fault on the client's links
// to the lock node acts on it too.
func (ps *Proxies) AddMember(client, node int, member, upstream string) (*Link, error) {
	l, err := ps.start(fmt.Sprintf("c%d-%s", client, member), upstream)
	if err != nil {
		return nil, err
	}
	l.Client, l.Node, l.Member = client, node, member
	ps.mu.Lock()
	ps.links = append(ps.links, l)
	ps.mu.Unlock()
	return l, nil
}

// AddRelay starts a link between servers called name, which forwards to
// upstream: a replica of lock node node connects to it (REPLICAOF
// 127.0.0.1 <its port>) to reach its primary, or a NATS server to reach
// member node's route port, so a nemesis can cut or delay replication
// alone. Relays are not among Links.
func (ps *Proxies) AddRelay(name string, node int, upstream string) (*Link, error) {
	l, err := ps.start(name, upstream)
	if err != nil {
		return nil, err
	}
	l.Client, l.Node = -1, node
	ps.mu.Lock()
	ps.relays = append(ps.relays, l)
	ps.mu.Unlock()
	return l, nil
}

// start listens on a port below the ephemeral range (internal/ports): a
// link that is re-pointed or re-enabled closes its listener and binds the
// same port again, and a port from the ephemeral range could meanwhile be
// taken by any outgoing connection on the machine.
func (ps *Proxies) start(name, upstream string) (*Link, error) {
	return ports.Retry(ports.WithLease(context.Background(), ps.ports), func(port int) (*Link, error) {
		p := toxiproxy.NewProxy(ps.server, name, fmt.Sprintf("127.0.0.1:%d", port), upstream)
		if err := p.Start(); err != nil {
			return nil, fmt.Errorf("start proxy %s to %s: %w", name, upstream, err)
		}
		return &Link{Name: name, p: p}, nil
	})
}

// rebind retries an operation that closes the link's listener and binds
// its port again: another run's port probe (ports.Free) may hold the port
// for an instant.
func rebind(op func() error) error {
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = op(); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return err
}

// Addr is where the client connects.
func (l *Link) Addr() string { return l.p.Listen }

// Upstream is the node the link forwards to.
func (l *Link) Upstream() string {
	l.p.Lock()
	defer l.p.Unlock()
	return l.p.Upstream
}

// SetUpstream points the link at another node (a promoted replica), on the
// same listen address, so whoever connects here follows without knowing.
// Connections in progress are closed: their next command fails and the
// client dials again. Toxics stay; a disabled link stays disabled.
func (l *Link) SetUpstream(addr string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := &toxiproxy.Proxy{Listen: l.p.Listen, Upstream: addr, Enabled: l.disabled == 0}
	if err := rebind(func() error { return l.p.Update(in) }); err != nil {
		return fmt.Errorf("point link %s at %s: %w", l.Name, addr, err)
	}
	return nil
}

// Disable stops the link: its connections are closed and new ones refused
// until as many Enable calls as Disable calls. Faults that overlap on one
// link therefore compose.
func (l *Link) Disable() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.disabled++; l.disabled == 1 {
		l.p.Stop()
	}
}

// Enable undoes one Disable; the link listens again on the same address.
func (l *Link) Enable() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.disabled == 0 {
		return nil
	}
	if l.disabled--; l.disabled > 0 {
		return nil
	}
	if err := rebind(l.p.Start); err != nil {
		l.disabled++
		return fmt.Errorf("re-enable link %s on %s: %w", l.Name, l.p.Listen, err)
	}
	return nil
}

// Toxic is one toxiproxy toxic: Type is toxiproxy's name ("latency",
// "timeout", "bandwidth", "reset_peer", …), Stream "upstream" (client to
// node) or "downstream" (node to client), Attributes its parameters.
type Toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float64        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// AddToxic installs t on the link.
func (l *Link) AddToxic(t Toxic) error {
	if t.Toxicity == 0 {
		t.Toxicity = 1
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if _, err := l.p.Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
		return fmt.Errorf("add toxic %s to link %s: %w", t.Name, l.Name, err)
	}
	return nil
}

// RemoveToxic removes the toxic called name.
func (l *Link) RemoveToxic(name string) error {
	if err := l.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("remove toxic %s from link %s: %w", name, l.Name, err)
	}
	return nil
}

// Links returns the links whose client and node pass the filters; a nil
// filter passes everything. The order is stable (client, then node).
func (ps *Proxies) Links(client func(int) bool, node func(int) bool) []*Link {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*Link
	for _, l := range ps.links {
		if (client == nil || client(l.Client)) && (node == nil || node(l.Node)) {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Client != out[j].Client {
			return out[i].Client < out[j].Client
		}
		return out[i].Node < out[j].Node
	})
	return out
}

// Relays returns the relays of lock node node (every one for node < 0),
// in the order they were added.
func (ps *Proxies) Relays(node int) []*Link {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*Link
	for _, l := range ps.relays {
		if node < 0 || l.Node == node {
			out = append(out, l)
		}
	}
	return out
}

// Close stops every proxy and its connections, and gives their ports back.
func (ps *Proxies) Close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, l := range append(ps.links, ps.relays...) {
		l.p.Stop()
	}
	ps.links, ps.relays = nil, nil
	ps.ports.Release()
}
