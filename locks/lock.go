// Package locks holds the lock algorithms under test, one file each, behind
// one small contract. A lock registers itself under a stable name in an init
// function; the CLI, scenario files and workers find it by that name.
//
// Adding a lock from outside this repository: implement Locker, call Register
// from an init function in your package, and build a main that imports it and
// calls cli.Main (workers re-execute the same binary, so they see it too).
package locks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/internal/suggest"

	"github.com/lockchaos/lockchaos/internal/registry"
	"github.com/lockchaos/lockchaos/option"
	"github.com/redis/go-redis/v9"
)

// ErrNotAcquired: the lock said no (someone else holds it). The caller
// definitely does not hold it.
var ErrNotAcquired = errors.New("not acquired")

// ErrNotHeld: a release or renewal found that this lease no longer holds the
// lock (it expired, or someone deleted it).
var ErrNotHeld = errors.New("not held")

// Any other error from Acquire or Release is indeterminate: the operation may
// or may not have taken effect (a timeout, a dropped connection).

// Lease is what a successful acquire hands back, and what release takes.
type Lease struct {
	Key   string
	Owner string // the client's identity as the lock sees it
	Token string // the value that identifies this lease on the server
	// Fence is a fencing token, increasing with every grant; 0 when the lock
	// issues none.
	Fence int64
	// Deadline, when set, is the CLOCK_MONOTONIC time (ns) after which the
	// client must not trust the lease (RedLock's validity).
	Deadline int64
	// Lost, when not nil, is closed when the lock itself learns in the
	// background that this lease is gone (a watchdog's renewal found it
	// missing). The client must then stop touching the resource.
	Lost <-chan struct{}
	// Private state of the lock implementation.
	Data any
}

// Locker is the contract every lock implements.
type Locker interface {
	// Acquire tries once to take key. It returns a lease, ErrNotAcquired, or
	// another error when the outcome is unknown.
	Acquire(ctx context.Context, key string) (Lease, error)
	// Release gives the lease back: nil, ErrNotHeld, or another error when
	// the outcome is unknown.
	Release(ctx context.Context, lease Lease) error
}

// Renewer is implemented by locks whose lease can be extended while held.
type Renewer interface {
	// Renew extends the lease by the TTL; ErrNotHeld when it was lost.
	Renew(ctx context.Context, lease Lease) (Lease, error)
}

// Waiter is implemented by locks that have their own way of waiting for a
// held lock (a pub/sub wake-up, the library's retry strategy, a random
// back-off), which a blocking acquire uses instead of the worker's generic
// retry loop. AcquireWait is one operation: a lease, ErrNotAcquired when wait
// ran out, or another error when the outcome is unknown.
type Waiter interface {
	AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error)
}

// Leaser is implemented by locks whose lease is not the run's TTL because
// an option of theirs sets it explicitly (Redisson's watchdog timeout or
// lease time, redsync's expiry). Every other lock's lease is the TTL. The
// runner records the lease actually used, the nemeses aim at it, and the
// report shows it beside the TTL.
type Leaser interface {
	Lease() time.Duration
}

// Starter is implemented by locks that must start something before the
// run's clock does (an adapter's process: a JVM takes a second or more).
// The worker calls Start once, after New and before it reports ready.
type Starter interface {
	Start(ctx context.Context) error
}

// NodeTimeouter is implemented by locks that give each node's request a
// timeout much shorter than the TTL (Redlock's, redsync's): a machine whose
// round trip to the nodes does not fit in it can never acquire, and the
// runner says so at start-up instead of running a test where nothing was
// ever held.
type NodeTimeouter interface {
	NodeTimeout() time.Duration
}

// Preflighter is implemented by locks that can find a mistake in their own
// input against a real server before the run starts (a Lua script that does
// not compile). The coordinator calls Preflight once, after the nodes start
// and before the workers do, with clients straight to the lock nodes. Any
// error it returns is the user's to fix: the run ends at once as a usage
// error, instead of running to "no client ever held a lock". Trouble
// reaching a node is not such an error; Preflight leaves it to the run.
type Preflighter interface {
	Preflight(ctx context.Context, nodes []*redis.Client) error
}

// Sentinels is how a client of a Redis run with sentinels finds the lock
// nodes' primaries itself, as an application configured for Sentinel
// does: the sentinels' addresses (reached directly: no fault acts on
// them), the name each watches lock node i under (Masters[i]), and where
// this client reaches each member a sentinel may name (NAT: the member's
// own address, as the sentinels give it, to this client's own link to that
// member, which a failover does not re-point and a fault on the client's
// links to the lock node acts on).
type Sentinels struct {
	Addrs   []string          `json:"addrs"`
	Masters []string          `json:"masters"`
	NAT     map[string]string `json:"nat"`
}

// Config is what a lock gets to build one client's Locker.
type Config struct {
	// Nodes are go-redis clients for the lock's nodes, each through this
	// client's own proxy, in node order: for a lock whose store is redis.
	Nodes []*redis.Client
	// Addrs are the lock nodes' addresses as this client reaches them
	// (its own proxies), in node order: for a lock of another store, which
	// dials its own client (etcd's members, ZooKeeper's servers,
	// PostgreSQL's primary). A Locker that holds connections of its own
	// implements io.Closer; the worker closes it at exit.
	Addrs []string
	// Sentinels, in a Redis run with sentinels, lets the client follow a
	// failover by itself; nil otherwise.
	Sentinels *Sentinels
	// StoreInit is what an adapter's init message carries for the lock's
	// store beyond the addresses (cluster.Store's AdapterInit).
	StoreInit map[string]any
	// OpTimeout bounds every request to the store (--op-timeout): a cut
	// link must give an indeterminate outcome, never a hang.
	OpTimeout time.Duration
	TTL       time.Duration
	// Owner identifies this client process uniquely within the run.
	Owner string
	// Options points to the lock's decoded options: a *T for a Spec whose
	// Options is a T.
	Options any
	Rand    *rand.Rand
	// Client is this client's number in the run; Seed the run's seed.
	Client int
	Seed   int64
	// LogPath, when set, is a file for the lock's own log beside the
	// worker's (an adapter's standard error).
	LogPath string
	// Env is added to the environment of the lock's own process (an
	// adapter): the clock shim's LD_PRELOAD and control file when a
	// nemesis moves this client's wall clock.
	Env []string
}

// Spec registers one lock.
type Spec struct {
	Name        string
	Description string
	// Library is the language and library the lock runs, at the version
	// this build links ("Go, lockchaos (go-redis 9.23.0)"; a test holds a
	// Go lock's versions to go.mod, an adapter's come from its manifest).
	Library string
	// Weakness is how the lock is known to break: what a reader should
	// expect the matrix to find. The catalogue (docs/OPTIONS.md) shows it.
	Weakness string
	// Store is the kind of server the lock keeps its state in: "redis"
	// (cluster.StoreRedis; Register sets it when empty), "etcd",
	// "zookeeper", "postgres" (cluster.RegisterStore).
	Store string
	// Nodes is how many lock nodes the algorithm uses by default (1 for a
	// single-instance lock, 5 for RedLock). For a store other than redis,
	// the members of its one ensemble (etcd 3, ZooKeeper 3, PostgreSQL 2:
	// a primary and a standby to fail over to).
	Nodes int
	// Leaseless locks have no lease: a grant lasts until it is released or
	// the client's session with the store ends (PostgreSQL's advisory and
	// row locks). No time runs out under a paused holder; the nemeses then
	// judge a fault by whether it hit a hold, not by whether it outlasted
	// a lease.
	Leaseless bool
	// KeyPrefix is what the lock adds to the key it is given, on a Redis
	// node (a library's namespace: python-redis-lock's "lock:"): lockchaos
	// looks for a lease of key K at KeyPrefix+K.
	KeyPrefix string
	// KeepsAlive locks renew their lease in the background for as long as
	// the client process runs (etcd's session keep-alive, ZooKeeper's
	// session pings): only a client that stops, or loses the store, loses
	// its lease. A nemesis may then keep a holder inside its critical
	// section past the lease while it finds out what a fault did.
	KeepsAlive bool
	// Reentrant locks let the same owner acquire again while holding.
	Reentrant bool
	// BlindRelease locks release by ending the key's lock whoever holds it
	// (a plain DEL, ShedLock's unlock): a release that reaches the store
	// after its lease ran out ends the next holder's. The checker then asks
	// what delayed such a release (history.RunInfo.BlindRelease).
	BlindRelease bool
	// Quorum locks hold a key when a majority of their nodes granted it
	// (Redlock); the others need their one node.
	Quorum bool
	// Options is the lock's config struct, its zero value: tagged fields
	// that declare its options (package option); nil for none. New gets a
	// decoded copy in Config.Options.
	Options any
	New     func(cfg Config) (Locker, error)
	// Adapter is the manifest of a lock run as a process of any language
	// (docs/protocol.md); nil for a lock written in Go.
	Adapter *Manifest
}

// OptionSpecs lists the lock's options.
func (s Spec) OptionSpecs() []option.Spec { return option.Specs(s.Options) }

// Decode decodes the options given against the lock's config struct,
// durations in TTLs resolved against ttl: the value for Config.Options, and
// the values used, defaults included, for the record.
func (s Spec) Decode(given map[string]string, ttl time.Duration) (any, map[string]string, error) {
	cfg := option.Fresh(s.Options)
	used, err := option.Decode(s.Name, cfg, given, ttl)
	return cfg, used, err
}

// registered holds every lock, Go's and adapters'.
var registered = func() *registry.Of[Spec] {
	r := registry.New[Spec]("lock")
	r.Unknown = func(name string, known []string) error {
		return fmt.Errorf("unknown lock %q%s; known locks: %s", name, suggest.Hint(name, known, "%q"), strings.Join(known, ", "))
	}
	return r
}()

// Register adds a lock. It panics on a duplicate or malformed spec: both are
// programming errors found at start-up.
func Register(s Spec) {
	if s.Name == "" || s.New == nil || s.Nodes < 1 {
		panic(fmt.Sprintf("locks.Register: spec %q needs a Name, a New function and Nodes >= 1", s.Name))
	}
	s.OptionSpecs() // a malformed option declaration panics here, at start-up
	if err := register(s); err != nil {
		panic("locks.Register: " + err.Error())
	}
}

// register adds s, or says that its name is taken.
func register(s Spec) error {
	if s.Store == "" {
		s.Store = "redis"
	}
	err := registered.Add(s.Name, s)
	if err != nil && s.Adapter != nil {
		return fmt.Errorf("lock manifest %s: a lock named %q exists already", s.Adapter.File, s.Name)
	}
	return err
}

// Lookup finds a lock by name; the error lists the known ones.
func Lookup(name string) (Spec, error) {
	loadShipped()
	return registered.Lookup(name)
}

// All returns every registered lock, by name.
func All() []Spec {
	loadShipped()
	return registered.All()
}

// Names lists every registered lock's name, in order.
func Names() []string {
	loadShipped()
	return registered.Names()
}

// randomToken returns a token unique to this lease.
func randomToken(owner string, r *rand.Rand) string {
	return fmt.Sprintf("%s:%016x", owner, r.Uint64())
}

// Probe decodes the given options and builds a locker without nodes, only
// to look at what it can do (the interfaces it implements); used are the
// option values, defaults included. New must not do I/O: called without
// nodes, it validates the options.
func (s Spec) Probe(given map[string]string, ttl time.Duration) (l Locker, used map[string]string, err error) {
	opts, used, err := s.Decode(given, ttl)
	if err != nil {
		return nil, nil, err
	}
	if l, err = s.New(Config{TTL: ttl, Owner: "check", Options: opts, Rand: rand.New(rand.NewPCG(1, 1))}); err != nil {
		return nil, nil, fmt.Errorf("lock %s: %w", s.Name, err)
	}
	return l, used, nil
}
