package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/internal/registry"
	"github.com/lockchaos/lockchaos/internal/suggest"
)

// Store is a kind of server that keeps a lock's state: redis, etcd,
// zookeeper, postgres. A lock declares the store it needs (locks.Spec's
// Store); a run starts one ensemble of it. Adding a store is one file in
// this package that registers it from an init function: redis.go,
// etcd.go, zookeeper.go, postgres.go.
//
// Redis's lock nodes are independent primaries, as many as the lock asks
// for, each with its replicas (Replicated). The other stores are one
// ensemble each, whose members elect a leader or promote a standby the
// store itself knows how to ask and fail over (Elected).
type Store struct {
	Name        string
	Description string
	// Packages are the Debian packages of the store's servers (and of
	// the tools its Start uses); Installed says whether they are
	// installed on this machine. make setup, .ci/run, the CI templates
	// and the images install what `lockchaos list --packages`
	// lists, and Start's errors for a missing server quote Install.
	Packages  []string
	Installed func() bool
	// Services are the system services its packages start on install;
	// make setup stops those it installed (lockchaos starts its own
	// servers, on free ports).
	Services []string
	// Modules are the Go modules its locks talk to it with (its client
	// library), whose versions lockchaos version prints.
	Modules []string
	// Primary: clients talk to one member, the primary, and the others
	// stand by to take over (PostgreSQL); otherwise clients talk to every
	// member (etcd, ZooKeeper) or every lock node (Redis). It decides how
	// many lock nodes a run has.
	Primary bool
	// FailsOver: the members elect a leader or promote a standby by the
	// store's own protocol, and Start returns an Elected that the failover
	// nemesis asks to fail over (etcd, ZooKeeper, PostgreSQL). Redis fails
	// over by its replicas and sentinels instead.
	FailsOver bool
	// References are the locks an audit runs beside a lock of this store:
	// the plain lock everyone starts from, and a fenced lock whose token
	// comes from a consensus store (Kleppmann: a fence must come from
	// consensus), which shows whether fencing would have kept the data
	// safe under each fault.
	References []string
	// Fenced is this store's built-in lock whose token fences, the
	// report's suggestion for a resource that lost updates; "" for none.
	Fenced string
	// NoClock says why the clock faults (which move a server's wall clock
	// through the clock shim) cannot reach what this store's locks depend
	// on; "" for Redis, whose wall clock decides a key's expiry.
	NoClock string
	// Peers: its members talk to each other through relays (the run's
	// proxies, EnsembleSpec.Relays), which a link fault with links=peers
	// slows or cuts: NATS's routes. (Redis's replicas replicate through
	// relays of their own, with --replicas.)
	Peers bool
	// JVM: the store's servers are Java processes (ZooKeeper), whose start
	// and warm-up keep a core busy: a run of it takes two of a grid's
	// --parallel slots (settings.Run.Weight).
	JVM bool
	// AdapterInit adds to an adapter's init message (docs/protocol.md)
	// what a client of this store needs beyond the lock nodes' addresses,
	// given them as this client reaches them (PostgreSQL's dsn, ZooKeeper's
	// connect string); nil for nothing more.
	AdapterInit func(addrs []string) map[string]any
	// ServerVersion is the release of its server the store builds from
	// source by default (NATS's nats-server, from the Go module proxy), which
	// a run may change (Topology.ServerVersion); "" for a store whose servers
	// are this machine's packages.
	ServerVersion string
	// Start starts one ensemble of the store on backend: its members on
	// free loopback ports, each in its own scratch directory (mkScratch),
	// proved to be the server it started before Start returns. On the local
	// backend each is a child process in its own process group with
	// Pdeathsig, like a Redis node; on the docker backend each runs the
	// same command in a container of the store's image (storeBox).
	Start func(ctx context.Context, backend Backend, spec EnsembleSpec) (Ensemble, error)
}

// EnsembleSpec says how to start one ensemble.
type EnsembleSpec struct {
	// Members is how many servers: etcd's members, ZooKeeper's servers;
	// PostgreSQL's primary and its standbys; Redis's lock nodes (each with
	// Replicas more).
	Members int
	// Lease is the run's lease (--ttl), for a store whose servers set it
	// (Hazelcast's CP sessions live that long).
	Lease time.Duration
	// ServerVersion is the release of the server to build and run, for a
	// store with a Store.ServerVersion; "" is that one.
	ServerVersion string
	// The rest shapes Redis only (settings.CheckStore refuses them for a
	// lock of another store, whose replication and durability are its own).
	//
	// Replicas per lock node; Sentinels watching every primary, which
	// allow a failover to take FailoverTimeout (keep it longer than the
	// run); AOF, the nodes' appendfsync ("" off, "everysec", "always").
	Replicas, Sentinels int
	FailoverTimeout     time.Duration
	AOF                 string
	// Pooler, for PostgreSQL: PoolerPgBouncer puts PgBouncer in front of
	// each member (Serving then gives its address), "" none.
	Pooler string
	// Clocks: the nodes run under the clock shim, each with its own clock
	// (Replicated.Clock), for the clock nemeses.
	Clocks bool
	// Relays makes the relays between servers (the run's proxies): each
	// Redis replica's to its primary, where the replication nemeses act,
	// and a NATS cluster's routes (Store.Peers); nil where no fault acts
	// (a check, a benchmark).
	Relays Relays
}

// Ensemble is one running ensemble of a store.
type Ensemble interface {
	// Members are its servers, in order: the nemeses signal and restart
	// them (Node), and the runner keeps their logs and stops them.
	Members() []Node
	// Serving are the members clients talk to now, in order: every member
	// of etcd and ZooKeeper (the client picks and fails over among them),
	// the primary of PostgreSQL, each Redis lock node's primary. These are
	// the run's lock nodes: every client reaches each through its own
	// proxy, and lock node i's links follow Serving()[i] across a failover.
	Serving() []Node
	// Close releases what the ensemble holds beyond its members (the
	// runner stops each member itself); nil when nothing.
	Close() error
}

// Elected is the ensemble of a store whose members elect a leader or
// promote a standby by the store's own protocol: etcd, ZooKeeper,
// PostgreSQL. The failover nemesis asks it to fail over.
type Elected interface {
	Ensemble
	// Leader is the index in Members of the member that leads now, as the
	// servers themselves say (etcd's raft leader, ZooKeeper's leader,
	// PostgreSQL's primary); an error when none does (no quorum yet).
	Leader(ctx context.Context) (int, error)
	// FailOver makes another member lead the way the store's operators or
	// its own protocol would: the etcd or ZooKeeper leader is killed
	// (SIGKILL) and FailOver returns once the others elected a new one; the
	// PostgreSQL standby is promoted (the old primary is left running, cut
	// off: every client link now leads to the new one). It returns the
	// members that led before and after, and heal, which undoes what can be
	// undone (restarts the killed leader, so it rejoins), or nil. On an
	// error, to >= 0 or a heal says it did harm (a leader killed, a standby
	// promoted) before it failed; to < 0 and no heal, that it did none.
	FailOver(ctx context.Context) (from, to int, heal func(context.Context) error, err error)
}

// Promoting is an Elected store that fails over by promoting a standby
// (PostgreSQL's, MariaDB's replica). HasStandby says whether FailOver would
// find one now: the failover nemesis cuts such a store's clients off
// before it fails over, and asks first, so that a step with nothing to
// promote does no harm at all (cutting the clients off alone ends their
// sessions, and a session's locks with them).
type Promoting interface {
	Elected
	HasStandby() bool
	// PromotionNote says what the last successful FailOver's promotion
	// did not keep, when it may not have kept everything: "" when the
	// standby had replayed all the old primary wrote.
	PromotionNote() string
	// CutReplication stops the standby FailOver would promote from
	// receiving the primary's changes (the failover nemesis's cut), once
	// it has what the primary had committed when asked (a release made
	// before the cut is not lost with it): what the primary commits from
	// then on is on the primary alone, and a
	// FailOver before restore promotes the standby with what it had
	// received, without waiting for the rest — the promotion of
	// asynchronous replication that loses the last commits, by
	// construction rather than by how far the standby lagged. restore
	// lets it receive again (after a FailOver, the promoted standby is a
	// primary and restore has nothing to do).
	CutReplication(ctx context.Context) (restore func(context.Context) error, err error)
}

// asNodes is an ensemble's members as Nodes, for Ensemble.Members.
func asNodes[T Node](ms []T) []Node {
	ns := make([]Node, len(ms))
	for i, m := range ms {
		ns[i] = m
	}
	return ns
}

// AwaitNewLeader asks leader every 50 ms, within timeout and ctx, until it
// names a member other than from (the one a failover took out); the error
// says what it last answered.
func AwaitNewLeader(ctx context.Context, leader func(context.Context) (int, error), from int, timeout time.Duration) (int, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		to, err := leader(wctx)
		if err == nil && to != from {
			return to, nil
		}
		select {
		case <-wctx.Done():
			return -1, fmt.Errorf("%w (last: %v)", wctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// KillLeader fails over an ensemble whose members elect their leader
// (Elected) the way a crashed machine would: it kills the member leader
// names (SIGKILL) and waits, within timeout, until another leads. heal
// restarts the killed member on its port and directory, and it rejoins.
// store names the ensemble in the errors.
func KillLeader(ctx context.Context, store string, members []Node, leader func(context.Context) (int, error), timeout time.Duration) (from, to int, heal func(context.Context) error, err error) {
	from, err = leader(ctx)
	if err != nil {
		return -1, -1, nil, fmt.Errorf("%s failover: %w", store, err)
	}
	old := members[from]
	if err := old.Signal(syscall.SIGKILL); err != nil {
		return from, -1, nil, fmt.Errorf("%s failover: kill leader %s: %w", store, old.Name(), err)
	}
	heal = old.Restart
	to, err = AwaitNewLeader(ctx, leader, from, timeout)
	if err != nil {
		return from, -1, heal, fmt.Errorf("%s failover: no new leader after killing %s: %w", store, old.Name(), err)
	}
	return from, to, heal, nil
}

// LeaseHolder is a node that can say whether it still holds a lease:
// whether the lock's state for key with token is on this server, asked of
// it alone. Redis nodes are asked for the lease's key (LeaseTTL); the
// other stores' members implement this. token is the lease's Token as the
// lock returned it (locks.Lease), which for these stores names its state
// (etcd's key, ZooKeeper's node path, PostgreSQL's backend pid).
type LeaseHolder interface {
	HoldsLease(ctx context.Context, key, token string) (bool, error)
}

// Install is the command that installs the store's servers.
func (s Store) Install() string { return "apt-get install -y " + strings.Join(s.Packages, " ") }

// Missing are the store's packages when they are not installed here.
func (s Store) Missing() []string {
	if s.Installed == nil || s.Installed() {
		return nil
	}
	return s.Packages
}

// onPath says whether every one of names is a program on PATH.
func onPath(names ...string) func() bool {
	return func() bool {
		for _, n := range names {
			if _, err := exec.LookPath(n); err != nil {
				return false
			}
		}
		return true
	}
}

// LockNodes is how many of an ensemble of members serve clients: the run's
// lock nodes.
func (s Store) LockNodes(members int) int {
	if s.Primary {
		return 1
	}
	return members
}

// stores holds every store.
var stores = func() *registry.Of[Store] {
	r := registry.New[Store]("store")
	r.Unknown = func(name string, known []string) error {
		return fmt.Errorf("unknown store %q%s; known stores: %s", name, suggest.Hint(name, known, "%q"), strings.Join(known, ", "))
	}
	return r
}()

// RegisterStore adds a store; a duplicate or malformed one panics at
// start-up.
func RegisterStore(s Store) {
	if s.Name == "" || s.Start == nil {
		panic(fmt.Sprintf("cluster.RegisterStore: store %q needs a name and a Start function", s.Name))
	}
	if err := stores.Add(s.Name, s); err != nil {
		panic("cluster.RegisterStore: " + err.Error())
	}
}

// LookupStore finds a store by name; the error lists the known ones. (A
// lock that names none keeps its state in redis: locks.Spec's register
// and a manifest's parse write that name down.)
func LookupStore(name string) (Store, error) { return stores.Lookup(name) }

// StoreNames lists every store, redis (most locks') first, then in the
// order they registered.
func StoreNames() []string {
	names := []string{StoreRedis}
	for _, n := range stores.Names() {
		if n != StoreRedis {
			names = append(names, n)
		}
	}
	return names
}
