// Package proxy puts an in-process toxiproxy in front of every link the
// nemeses may want to hurt: one proxy per (client, node) pair, so a fault can
// slow or cut a single client's view of a single node.
package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Proxies owns every link of a run.
type Proxies struct {
	server *toxiproxy.ApiServer

	mu    sync.Mutex
	links []*Link
}

// New returns an empty set of proxies. No HTTP API is opened: the nemeses
// drive toxiproxy as a library.
func New() *Proxies {
	return &Proxies{server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())}
}

// Link is one proxied connection path from a client to a node.
type Link struct {
	Client int
	Node   int
	Name   string
	p      *toxiproxy.Proxy
}

// Add starts a proxy on a free 127.0.0.1 port that forwards to upstream.
func (ps *Proxies) Add(client, node int, upstream string) (*Link, error) {
	name := fmt.Sprintf("c%d-n%d", client, node)
	p := toxiproxy.NewProxy(ps.server, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start proxy %s to %s: %w", name, upstream, err)
	}
	l := &Link{Client: client, Node: node, Name: name, p: p}
	ps.mu.Lock()
	ps.links = append(ps.links, l)
	ps.mu.Unlock()
	return l, nil
}

// Addr is where the client connects.
func (l *Link) Addr() string { return l.p.Listen }

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

// Close stops every proxy and its connections.
func (ps *Proxies) Close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, l := range ps.links {
		l.p.Stop()
	}
	ps.links = nil
}
