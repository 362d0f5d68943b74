package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/proxy"
	"github.com/redis/go-redis/v9"
)

// StoreRedis is the store of every Redis lock: independent redis-server
// nodes, as many as the lock asks for (one; five for Redlock), each a
// primary with EnsembleSpec.Replicas replicas, and EnsembleSpec.Sentinels
// sentinels watching every primary.
const StoreRedis = "redis"

func init() {
	RegisterStore(Store{
		Name:        StoreRedis,
		Description: "Redis: one node, replicas with Sentinel, or five masters for Redlock (the lock says which)",
		Packages:    []string{"redis-server", "redis-tools", "redis-sentinel"},
		Installed:   onPath("redis-server", "redis-cli", "redis-sentinel"),
		Services:    []string{"redis-server"},
		Modules:     []string{"github.com/redis/go-redis/v9"},
		References:  []string{"token-lua", "etcd-mutex-fenced"},
		Fenced:      "fenced",
		Start:       startRedis,
	})
}

// Replicated is the ensemble of a store whose lock nodes are independent
// primaries, each with its own replicas, and perhaps sentinels that fail
// them over: Redis. The replication nemeses act on it.
type Replicated interface {
	// Groups are the replication groups, one per lock node, in order; a
	// group without replicas has a single member.
	Groups() []*Group
	// Sentinels are the run's sentinels, none when it has none.
	Sentinels() []Sentinel
	// Clock is the clock shim's control of node, or nil when the node runs
	// without the shim (EnsembleSpec.Clocks).
	Clock(node Node) *Clock
}

// redisEnsemble is the Redis store's ensemble: lock node i is Groups()[i],
// whose members are named n<i> (the first primary) and n<i>r<k> (its
// replicas).
type redisEnsemble struct {
	groups    []*Group
	sentinels []Sentinel
	clocks    map[Node]*Clock
	clockDir  string
}

var _ Replicated = (*redisEnsemble)(nil)

func (e *redisEnsemble) Groups() []*Group      { return e.groups }
func (e *redisEnsemble) Sentinels() []Sentinel { return e.sentinels }
func (e *redisEnsemble) Clock(n Node) *Clock   { return e.clocks[n] }

// Members are every group's members, group by group, the primary first.
func (e *redisEnsemble) Members() []Node {
	var out []Node
	for _, g := range e.groups {
		out = append(out, g.Members()...)
	}
	return out
}

// Serving are the groups' primaries now (after any failover).
func (e *redisEnsemble) Serving() []Node {
	var out []Node
	for _, g := range e.groups {
		_, n := g.Primary()
		out = append(out, n)
	}
	return out
}

// Close stops the sentinels and removes the clock files; the runner keeps
// the sentinels' logs first.
func (e *redisEnsemble) Close() error {
	var errs []error
	for _, s := range e.sentinels {
		errs = append(errs, s.Stop())
	}
	e.sentinels = nil
	if e.clockDir != "" {
		errs = append(errs, os.RemoveAll(e.clockDir))
	}
	return errors.Join(errs...)
}

// stop undoes a start that failed: the nodes too, which Close leaves to
// the runner.
func (e *redisEnsemble) stop() {
	for _, n := range e.Members() {
		_ = n.Stop()
	}
	_ = e.Close()
}

// startRedis starts spec.Members lock nodes, each a primary and
// spec.Replicas replicas that replicate through their own relays (made by
// spec.Relays), under the clock shim when spec.Clocks, and spec.Sentinels
// sentinels that watch every primary.
func startRedis(ctx context.Context, backend Backend, spec EnsembleSpec) (ens Ensemble, err error) {
	e := &redisEnsemble{clocks: map[Node]*Clock{}}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	var shim string
	if spec.Clocks {
		if shim, err = ClockShim(); err != nil {
			return nil, err
		}
		if e.clockDir, err = os.MkdirTemp("", "lockchaos-clocks-"); err != nil {
			return nil, fmt.Errorf("make a directory for the clock files: %w", err)
		}
	}
	for i := 0; i < max(spec.Members, 1); i++ {
		var members []Node
		for m := 0; m <= spec.Replicas; m++ {
			name := fmt.Sprintf("n%d", i)
			if m > 0 {
				name = fmt.Sprintf("n%dr%d", i, m)
			}
			ns := NodeSpec{Name: name, AOF: spec.AOF}
			var clock *Clock
			if shim != "" {
				if clock, err = NewClock(filepath.Join(e.clockDir, name+".clock")); err != nil {
					return nil, err
				}
				ns.ClockShim, ns.ClockFile = shim, clock.Path()
			}
			n, err := backend.StartNode(ctx, ns)
			if err != nil {
				if len(members) > 0 { // started, but in no group yet
					e.groups = append(e.groups, NewGroup(i, members, nil))
				}
				return nil, err
			}
			members = append(members, n)
			if clock != nil {
				e.clocks[n] = clock
			}
		}
		g, err := startGroup(ctx, i, members, spec.Relays)
		e.groups = append(e.groups, g)
		if err != nil {
			return nil, err
		}
	}
	if err := e.startSentinels(ctx, backend, spec); err != nil {
		return nil, err
	}
	return e, nil
}

// Relays makes a relay between servers: a proxy named name for lock node
// i whose upstream is another server (a Redis primary, a NATS member's
// route port; proxy.Proxies.AddRelay).
type Relays interface {
	AddRelay(name string, node int, upstream string) (*proxy.Link, error)
}

// startGroup gives every member of lock node i a relay and makes the
// replicas replicate from the primary through theirs. The group is
// returned on an error too, for its members to be stopped. Without relays
// (a check or a benchmark, which fault nothing) a group has no replicas.
func startGroup(ctx context.Context, i int, members []Node, relays Relays) (*Group, error) {
	if relays == nil {
		if len(members) > 1 {
			return NewGroup(i, members, nil), errors.New("replicas replicate through relays: the ensemble's spec has none (EnsembleSpec.Relays)")
		}
		return NewGroup(i, members, nil), nil
	}
	links := make([]*proxy.Link, 0, len(members))
	for _, n := range members {
		l, err := relays.AddRelay("repl-"+n.Name(), i, members[0].Addr())
		if err != nil {
			return NewGroup(i, members, nil), err
		}
		links = append(links, l)
	}
	g := NewGroup(i, members, links)
	if len(members) == 1 {
		return g, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for m := 1; m < len(members); m++ {
		if err := g.Attach(ctx, m); err != nil {
			return g, err
		}
	}
	return g, g.WaitSynced(ctx)
}

// sentinelDownAfter: how long a primary must be silent before a sentinel
// calls it down. Short, so a failover fits in a short run; not shorter,
// because Sentinel will not promote a replica that has been cut off from
// its primary for more than ten times this (plus the time the primary has
// been down), and the failover nemeses cut replication first, then wait
// for the step's client to acquire: with 250 ms, a cut of three seconds
// delayed the promotion by seconds.
const sentinelDownAfter = time.Second

// startSentinels starts spec.Sentinels sentinels (containers on the docker
// backend, redis-sentinel processes on local) that watch every lock node's
// primary, and waits until each knows all the replicas and all the other
// sentinels: a sentinel that has not heard of the others cannot gather a
// majority to fail over.
func (e *redisEnsemble) startSentinels(ctx context.Context, backend Backend, spec EnsembleSpec) error {
	if spec.Sentinels == 0 {
		return nil
	}
	var monitors []Monitor
	for _, g := range e.groups {
		_, primary := g.Primary()
		monitors = append(monitors, Monitor{Name: g.Name, Addr: primary.Addr(), Quorum: spec.Sentinels/2 + 1})
	}
	for k := 0; k < spec.Sentinels; k++ {
		s, err := StartSentinel(ctx, backend, SentinelSpec{
			Name: fmt.Sprintf("sentinel%d", k), Masters: monitors,
			DownAfter: sentinelDownAfter,
			// Longer than the run: Sentinel would otherwise, after this
			// long, re-point replicas that replicate through a relay
			// straight at the primary.
			FailoverTimeout: max(spec.FailoverTimeout, time.Minute),
		})
		if err != nil {
			return err
		}
		e.sentinels = append(e.sentinels, s)
	}
	// Sentinels find each other by hello messages every 2 s; on a busy
	// machine a sentinel whose timer ran late enters TILT mode and stops
	// acting for 30 s (seen beside the CPU hogs in a docker run, 2026-11-30):
	// a minute lets it come out and finish.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, s := range e.sentinels {
		for _, g := range e.groups {
			if err := awaitSentinel(ctx, s, g.Name, spec.Replicas, spec.Sentinels-1); err != nil {
				return fmt.Errorf("%w; the end of its log: %s", err, logTail(s.Log()))
			}
		}
	}
	return nil
}

func awaitSentinel(ctx context.Context, s Sentinel, name string, replicas, others int) error {
	var got string
	for {
		nr, err1 := sentinelCount(ctx, s.Addr(), "replicas", name)
		ns, err2 := sentinelCount(ctx, s.Addr(), "sentinels", name)
		if err1 == nil && err2 == nil && nr >= replicas && ns >= others {
			return nil
		}
		got = fmt.Sprintf("%d replicas, %d other sentinels (errors: %v)", nr, ns, errors.Join(err1, err2))
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinel %s did not discover %s's %d replicas and %d other sentinels: it knows %s", s.Name(), name, replicas, others, got)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func sentinelCount(ctx context.Context, addr, what, name string) (int, error) {
	reply, err := RedisDo(ctx, addr, "SENTINEL", what, name)
	if err != nil {
		return 0, err
	}
	list, _ := reply.([]any)
	n := 0
	for _, e := range list {
		// Each entry is a flat list of field, value, … ; skip the ones a
		// sentinel already thinks are down or gone.
		fields, _ := e.([]any)
		down := false
		for j := 0; j+1 < len(fields); j += 2 {
			if fmt.Sprint(fields[j]) == "flags" {
				f := fmt.Sprint(fields[j+1])
				down = strings.Contains(f, "down") || strings.Contains(f, "disconnected")
			}
		}
		if !down {
			n++
		}
	}
	return n, nil
}

// RedisDo sends one control command straight to a Redis node or sentinel
// (never through a client's link) and returns the reply.
func RedisDo(ctx context.Context, addr string, args ...any) (any, error) {
	c := RedisClient(addr)
	defer c.Close()
	return c.Do(ctx, args...).Result()
}

// RedisClient is a control connection straight to the Redis node or
// sentinel at addr, never through a client's link: no retries, a short
// dial and reply timeout.
func RedisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})
}

// leasePTTL answers key's PTTL on a node (-1: no expiry) if it keeps the
// lease whose token is ARGV[1] — as its value, or as a field of its hash;
// for a token that says nothing of its holder ("" or "1"), if the key
// exists — and -2 if it does not keep it.
var leasePTTL = redis.NewScript(`
local t = redis.call("TYPE", KEYS[1]).ok
local mine = 0
if ARGV[1] == "" or ARGV[1] == "1" then mine = (t ~= "none") and 1 or 0
elseif t == "string" then mine = (redis.call("GET", KEYS[1]) == ARGV[1]) and 1 or 0
elseif t == "hash" then mine = redis.call("HEXISTS", KEYS[1], ARGV[1]) end
if mine == 0 then return -2 end
return redis.call("PTTL", KEYS[1])`)

// LeaseTTL asks the Redis node at addr alone how long it keeps the lease
// whose state is key and whose token is token: key's PTTL in ms, -1 for
// no expiry, -2 when the node does not keep it (no key, or another
// holder's). A token that says nothing of its holder ("" or "1") asks only
// whether the key exists: the key's PTTL, as Redis's PTTL answers it.
func LeaseTTL(ctx context.Context, addr, key, token string) (int64, error) {
	c := RedisClient(addr)
	defer c.Close()
	return leasePTTL.Run(ctx, c, []string{key}, token).Int64()
}

// keyMarks answers key's PTTL (-1: no expiry) and the marks of the leases
// it keeps: a string's value, a hash's fields; nothing when there is no
// key.
var keyMarks = redis.NewScript(`
local t = redis.call("TYPE", KEYS[1]).ok
if t == "none" then return {} end
local out = {redis.call("PTTL", KEYS[1])}
if t == "string" then out[2] = redis.call("GET", KEYS[1])
elseif t == "hash" then for _, f in ipairs(redis.call("HKEYS", KEYS[1])) do out[#out+1] = f end end
return out`)

// KeyMarks asks the Redis node c (a RedisClient) for key's PTTL in ms and
// the marks of the leases it keeps (a string's value, a hash's fields);
// exists is false when there is no key.
func KeyMarks(ctx context.Context, c *redis.Client, key string) (pttl int64, marks []string, exists bool, err error) {
	r, err := keyMarks.Run(ctx, c, []string{key}).Slice()
	if err != nil || len(r) == 0 {
		return 0, nil, false, err
	}
	pttl, _ = r[0].(int64)
	for _, m := range r[1:] {
		if s, ok := m.(string); ok {
			marks = append(marks, s)
		}
	}
	return pttl, marks, true, nil
}

// Group is one lock node's replication group: a primary and its replicas.
// Every member replicates, when it is a replica, through its own relay (a
// proxy whose upstream is the current primary), so a nemesis can cut or
// delay replication alone, and a member demoted after a failover replicates
// through its relay like the others. Clients never see a Group: their links
// to the lock node are pointed at whichever member is the primary.
type Group struct {
	Index int    // the lock node
	Name  string // what sentinels call it: "lock0", …

	mu      sync.Mutex
	members []Node
	relays  []*proxy.Link
	primary int
}

// NewGroup makes the group of lock node index: members[0] is the primary,
// relays[k] is member k's relay.
func NewGroup(index int, members []Node, relays []*proxy.Link) *Group {
	return &Group{Index: index, Name: fmt.Sprintf("lock%d", index), members: members, relays: relays}
}

// Primary returns the current primary and its member index.
func (g *Group) Primary() (int, Node) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.primary, g.members[g.primary]
}

// Members returns every member, in member order.
func (g *Group) Members() []Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Node(nil), g.members...)
}

// Replicas returns the member indices that are not the primary.
func (g *Group) Replicas() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int
	for m := range g.members {
		if m != g.primary {
			out = append(out, m)
		}
	}
	return out
}

// Relay is member m's replication link.
func (g *Group) Relay(m int) *proxy.Link {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.relays[m]
}

// Relays returns the relays of the given members.
func (g *Group) Relays(members []int) []*proxy.Link {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*proxy.Link
	for _, m := range members {
		out = append(out, g.relays[m])
	}
	return out
}

// prepare makes node start a full synchronisation at once when it is the
// primary, instead of after Redis 7's default 5 s wait for more replicas. A
// restarted node forgets it, so Attach sets it every time, on both ends.
func prepare(ctx context.Context, n Node) error {
	if _, err := RedisDo(ctx, n.Addr(), "CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
		return fmt.Errorf("configure redis node %s for replication: %w", n.Name(), err)
	}
	return nil
}

// Attach makes member m a replica of the current primary, through its relay.
func (g *Group) Attach(ctx context.Context, m int) error {
	g.mu.Lock()
	primary, relay, node := g.members[g.primary], g.relays[m], g.members[m]
	g.mu.Unlock()
	if err := errors.Join(prepare(ctx, primary), prepare(ctx, node)); err != nil {
		return err
	}
	if relay.Upstream() != primary.Addr() {
		if err := relay.SetUpstream(primary.Addr()); err != nil {
			return err
		}
	}
	_, port, _ := net.SplitHostPort(relay.Addr())
	if _, err := RedisDo(ctx, node.Addr(), "REPLICAOF", "127.0.0.1", port); err != nil {
		return fmt.Errorf("make redis node %s a replica of %s through relay %s: %w", node.Name(), primary.Name(), relay.Name, err)
	}
	return nil
}

// Promote makes member m the primary, as an operator would after the
// primary died: REPLICAOF NO ONE, then every relay points at it, so the
// other replicas (which replicate from their relay) follow at once.
func (g *Group) Promote(ctx context.Context, m int) error {
	node := g.Members()[m]
	if _, err := RedisDo(ctx, node.Addr(), "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("promote redis node %s (REPLICAOF NO ONE): %w", node.Name(), err)
	}
	return g.adopt(m)
}

// Adopt records that the member at addr became the primary by someone
// else's decision (Sentinel's), and points every relay at it.
func (g *Group) Adopt(addr string) (int, error) {
	for m, n := range g.Members() {
		if n.Addr() == addr {
			return m, g.adopt(m)
		}
	}
	return -1, fmt.Errorf("replication group %s has no member at %s", g.Name, addr)
}

func (g *Group) adopt(m int) error {
	g.mu.Lock()
	g.primary = m
	addr := g.members[m].Addr()
	relays := append([]*proxy.Link(nil), g.relays...)
	g.mu.Unlock()
	var errs []error
	for _, r := range relays {
		if r.Upstream() != addr {
			errs = append(errs, r.SetUpstream(addr))
		}
	}
	return errors.Join(errs...)
}

// WaitSynced waits until every replica streams from the primary: its link
// is up, and a write on the primary is acknowledged by all of them (WAIT).
// The link alone is not enough: after a diskless full synchronisation the
// primary holds the stream back until the replica's first acknowledgement,
// which can come up to a second later, and a failover in that second would
// find the replicas behind although replication looks healthy.
func (g *Group) WaitSynced(ctx context.Context) error {
	replicas := g.Replicas()
	for _, m := range replicas {
		n := g.Members()[m]
		for {
			info, err := RedisDo(ctx, n.Addr(), "INFO", "replication")
			s, _ := info.(string)
			if err == nil && strings.Contains(s, "master_link_status:up") && !strings.Contains(s, "master_sync_in_progress:1") {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("replica %s of %s did not synchronise: %w (last INFO error: %v)", n.Name(), g.Name, ctx.Err(), err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if len(replicas) == 0 {
		return nil
	}
	_, primary := g.Primary()
	c := redis.NewClient(&redis.Options{Addr: primary.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true, ReadTimeout: -1})
	defer c.Close()
	for {
		// PUBLISH replicates without touching the keyspace; WAIT, on the
		// same connection, waits for the replicas to acknowledge it.
		var wait *redis.Cmd
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Publish(ctx, "lockchaos:sync", "1")
			wait = p.Do(ctx, "WAIT", len(replicas), 500)
			return nil
		})
		if n, _ := wait.Int(); err == nil && n >= len(replicas) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the replicas of %s did not acknowledge a write of %s: %w (last error: %v)", g.Name, primary.Name(), ctx.Err(), err)
		}
	}
}
