// Package nemesis injects the faults of a run, one file per fault kind, all
// behind one small interface. Each fault is real: a signal to a real process,
// a toxic on a real proxied link. Every fault's window is recorded in the
// history by the schedule, so the checker can say which fault was active when
// two clients held the same lock.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/registry"
	"github.com/lockchaos/lockchaos/internal/suggest"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/lockchaos/lockchaos/workload"
)

// Nemesis injects one kind of fault.
type Nemesis interface {
	// Inject makes the fault of one step of the schedule and returns it.
	// It takes its targets from the step (Client, Key, Node) unless an
	// option names them, and, when the fault is meant to hit a lease, waits
	// for the step's client to hold the step's key first (aim.go). It
	// returns an error wrapping ErrNoTarget when that target never came: the
	// step is missed, recorded as such, and the schedule goes on. An Inject
	// that fails, or is cancelled, after it already did harm (a failover
	// that killed the primary, then the sentinels did not decide in time)
	// returns that partial fault with its error: the schedule records it,
	// heals it, and reports the error. Otherwise a failing Inject undoes what
	// it did and returns a nil Fault.
	Inject(ctx context.Context, env Env, step Step) (*Fault, error)
}

// ErrNoTarget: the step's target never came (its client did not hold its
// key in time, or had exited); the step is missed.
var ErrNoTarget = errors.New("no target")

// ErrDone: the nemesis has nothing more to inject in this run (a sentinel
// failover, which Sentinel will not repeat soon); its schedule ends quietly.
var ErrDone = errors.New("nothing more to inject")

// Fault is one injected fault.
type Fault struct {
	Target  string
	Params  map[string]string
	Clients []int // clients acted on directly
	Stopped []int // clients whose process it stopped (SIGSTOP)
	Nodes   []int // lock nodes acted on directly
	// Aim is the hold the fault was aimed at, nil for none.
	Aim *history.Aim
	// Start is when the fault began (history.Now()), set by a nemesis that
	// waited inside Inject for its moment; 0 means when Inject was called.
	Start int64
	// Duration is how long to keep the fault before healing; 0 for an
	// instant fault (a kill), which has nothing to heal.
	Duration time.Duration
	// Heal undoes the fault; nil when there is nothing to undo.
	Heal func(ctx context.Context) error
	// Effect is what the fault did to the lease it aimed at: whether it
	// landed, and what became of the lease as far as the nemesis saw.
	// Inject or Heal sets it; the schedule records it on the fault-end. Nil
	// leaves it to the checker to judge from the history.
	Effect *history.Effect
}

// Env is what every nemesis may see and act on: the run's times, the holds
// as the coordinator sees them, the lock nodes. What only some nemeses need
// is an optional capability, an interface the run's environment implements
// besides (Processes, Links, Replication, Clocks), the way package locks has
// optional Renewer and Waiter interfaces: a nemesis asks for one with
// capability, and a fake in a test implements only what its test uses.
type Env interface {
	TTL() time.Duration
	// Lease is the lease the lock really uses: the TTL unless a lock option
	// overrides it.
	Lease() time.Duration
	Hold() time.Duration
	// Rand is the step's own random source (Step.Rand).
	Rand() *rand.Rand
	// Holders lists every hold in progress, as the coordinator saw it in
	// the event stream.
	Holders() []Holding
	// Await waits until cond holds of the run as the coordinator sees it,
	// evaluated at every event, or ctx ends.
	Await(ctx context.Context, cond func(View) bool) error
	// LockNodes are the nodes the lock uses, in order (never the resource):
	// the current primary of each replication group.
	LockNodes() []cluster.Node
	// Topology is the run's shape.
	Topology() Topology
}

// Processes is the capability to control the clients' processes and their
// workers.
type Processes interface {
	// Acquiring lists clients whose acquire has been in flight at least d.
	Acquiring(d time.Duration) []int
	Pause(client int) error
	Resume(client int) error
	// RunFor resumes a paused client and returns once it has run on: at
	// least on of wall time, and longer while a thread of its processes
	// waits for a CPU and they have had less than on of CPU time since,
	// for at most most. served is false when most ended it so: the
	// machine, not the caller, held the client off the CPU.
	RunFor(client int, on, most time.Duration) (served bool, err error)
	// Kill ends a client with SIGKILL; its exit is recorded as expected.
	Kill(client int) error
	// Stretch asks client to keep every hold of key begun from now on in
	// its critical section, once its work is done, for at most max from
	// that hold's acquire invoke (the worker enforces the bound itself),
	// and returns when the worker says it will (history time), or
	// ErrNoTarget when it has exited. With stop, the first such hold that
	// gets there within the bound waits there without it (View.Waiting
	// says which hold, and from when) until the stretch is withdrawn: for
	// the caller to Pause it there. With rest >
	// 0 the client first holds nothing for rest, and the stretch begins
	// (and Stretch returns) when the rest is over. Unstretch withdraws it.
	Stretch(ctx context.Context, client int, key string, max, rest time.Duration, stop bool) (int64, error)
	Unstretch(client int) error
}

// Links is the capability to act on the run's proxied links.
type Links interface {
	// Proxies are the client↔lock-node links and the relays between
	// servers (replication, routes).
	Proxies() *proxy.Proxies
}

// Replication is the capability to act on the lock nodes' replication.
type Replication interface {
	// Groups are the replication groups, one per lock node, in order; a
	// group without replicas has a single member.
	Groups() []*cluster.Group
	// Sentinels are the addresses of the run's sentinels (processes or
	// containers, by backend).
	Sentinels() []string
}

// Clocks is the capability to move the lock nodes' wall clocks.
type Clocks interface {
	// Clock is the clock shim's control of node, or nil when the node runs
	// without the shim.
	Clock(node cluster.Node) *cluster.Clock
}

// ClientClocks is the capability to move a client's wall clock: the clock
// of its lock's own process (an adapter, started under the clock shim).
type ClientClocks interface {
	// ClientClock is the clock shim's control of client c's lock process,
	// or nil when it runs without the shim.
	ClientClock(c int) *cluster.Clock
	// ShimLoaded says whether a process of client c other than its worker
	// (its adapter) has the clock shim mapped and its environment names
	// client c's clock file (by a path that leads there from the folder it
	// runs in): a launcher that cleared its environment, a static binary,
	// or a shim pointed at no file leaves the step out of its reach.
	ShimLoaded(c int) bool
}

// unwrapper is an Env that wraps another (a step's, with its own random
// source): capability looks for a capability in the wrapped Env too, since
// an Env that embeds another hides the capabilities of the value inside.
type unwrapper interface {
	Unwrap() Env
}

// Canceller is the capability to cancel a client's call in flight: the
// client's next release (op) invoked after the request gets a cancelled
// context after from its invoke — an adapter's is sent a cancel request —
// and the client releases again once it comes back cancelled. It returns
// when it asked (history time).
type Canceller interface {
	CancelNext(client int, op string, after time.Duration) (int64, error)
}

// Workload is the capability to tell when the run's workload stopped:
// the history time at which the workers were asked to stop, 0 while they
// still work, and whether they stopped early, at the run's first
// violation (--stop-on-violation). A fault that outlasts the workload did
// not run its course (Schedule).
type Workload interface {
	WorkloadEnded() (at int64, atViolation bool)
}

// capability finds the capability T (Processes, Links, Replication,
// Clocks) of env, or of the Env it wraps; what names the capability in the
// error when the run's environment does not give it.
func capability[T any](env Env, what string) (T, error) {
	for env != nil {
		if c, ok := env.(T); ok {
			return c, nil
		}
		u, ok := env.(unwrapper)
		if !ok {
			break
		}
		env = u.Unwrap()
	}
	var none T
	return none, fmt.Errorf("the nemesis needs %s, which this run's environment does not give", what)
}

func processesOf(env Env) (Processes, error) {
	return capability[Processes](env, "control of the client processes")
}

func linksOf(env Env) (Links, error) {
	return capability[Links](env, "the client↔lock-node links (proxies)")
}

func replicationOf(env Env) (Replication, error) {
	return capability[Replication](env, "the lock nodes' replication groups")
}

func clocksOf(env Env) (Clocks, error) {
	return capability[Clocks](env, "the lock nodes' clocks (clock shim)")
}

// Topology is the shape of a run, which decides whether a nemesis applies.
type Topology struct {
	// What the run asked of the servers and the clients.
	cluster.Topology
	workload.Workload
	// Store is the kind of server the lock keeps its state in: "redis",
	// "etcd", "zookeeper", "postgres" (cluster.Store); see OnRedis.
	Store string
	Lock  string
	// LockNodes is how many lock nodes the run has (Nodes, or the lock's
	// default when that is 0).
	LockNodes int
	// Leaseless: the lock's grants last until released or until the
	// client's session ends (locks.Spec.Leaseless); no lease runs out.
	Leaseless bool
	// KeyPrefix is what the lock adds to a key on a Redis node
	// (locks.Spec.KeyPrefix): a lease of key K is kept at KeyPrefix+K.
	KeyPrefix string
	// KeepsAlive: the lock renews its lease in the background while the
	// client runs (locks.Spec.KeepsAlive).
	KeepsAlive bool
	// Renews: a hold's lease may be extended after its acquire returned —
	// by the worker (--renew), by a re-entry, or by a reentrant lock of
	// its own accord (Redisson's watchdog); with KeepsAlive, a lease only
	// a whole lease of silence surely ends.
	Renews bool
	// Cancels: the lock's call can be cancelled in flight — a lock written
	// in Go takes a context; an adapter says so (locks.Manifest.Cancel).
	Cancels bool
	// Adapter is the language of the lock's adapter (locks.Manifest), a
	// process of its own beside each worker (docs/protocol.md) whose wall
	// clock the clock shim can move (ClientClocks); "" for a lock written
	// in Go, which runs inside the worker.
	Adapter string
	// Quorum is how many lock nodes a holder needs: 1 for a single-node
	// lock, a majority for Redlock.
	Quorum int
}

// OnRedis says whether the lock keeps its state in Redis ("" in a topology
// from before other stores): its lock nodes are Redis primaries, with the
// replicas, sentinels, clocks and keys the Redis faults act on.
func (t Topology) OnRedis() bool { return t.Store == cluster.StoreRedis }

// View is the workload as the coordinator sees it in the event stream.
type View struct {
	Holders []Holding
	// Acquires holds each client's latest acquire; Releases its latest
	// release, and Cancelled and CancelledAcquires its latest release and
	// acquire that a nemesis asked to cancel.
	Acquires          map[int]Acquire
	Releases          map[int]Release
	Cancelled         map[int]Release
	CancelledAcquires map[int]Acquire
	// Granted is the invoke of each client's latest acquire that was
	// granted: an acquire invoked at or before it whose end a waiter did
	// not see may have been that one.
	Granted map[int]int64
	// Exited are the clients whose process has ended.
	Exited map[int]bool
	// Waiting says, of each client, which stretched hold last reached the
	// end of its work and began to wait, before its write, and when.
	Waiting map[int]Wait
	// Resting says when each client last began a rest a stretch asked for
	// (Processes.Stretch's rest): it holds nothing and acquires nothing
	// from then until the rest is over.
	Resting map[int]int64
	// Lost says when each client's lock last reported a lease of a key
	// lost (a lost event: the library learned it in the background, and
	// the client stopped).
	Lost map[int]map[string]int64
	// Stretched says which key each client has been asked to stay inside
	// its holds of (a stretch in force, taken and not withdrawn).
	Stretched map[int]string
}

// Wait is a stretched hold that reached the end of its work: the hold
// (its Invoked 0 when the coordinator saw no hold of the key then) and
// when it began to wait.
type Wait struct {
	At int64
	Holding
}

// Acquire is one client's latest acquire: in flight (Outcome "") or done.
type Acquire struct {
	Key           string
	Invoked, Done int64
	Outcome       history.Kind // ok, fail, info; "" while in flight
	// Unanswered: the harness stopped waiting for the lock's answer (an
	// adapter silent past its timeout, locks.NoAnswer): no refusal of the
	// lock's, and the library may still be acquiring.
	Unanswered bool
	// NoValidity: refused because it was granted with no validity left
	// (locks.NoValidityLeft): the caller gave a late lease up at once.
	NoValidity bool
	// Error is the error it ended with; Cancelled, that the client was
	// asked to cancel it in flight (Canceller).
	Error     string
	Cancelled bool
}

// Release is one client's latest release: in flight (Outcome "") or done,
// with its error; Token is the lease it gave back, when the coordinator
// saw the hold it ended; Cancelled, that the client was asked to cancel it
// in flight (Canceller).
type Release struct {
	Key, Token    string
	Invoked, Done int64
	Outcome       history.Kind
	Error         string
	Cancelled     bool
}

// Holding is one hold in progress.
type Holding struct {
	Client int
	Key    string
	Since  time.Time // when the coordinator saw the acquire return
	// OK and Invoked are the history times of the acquire's return and of
	// its invoke.
	OK, Invoked int64
	// Token marks the lease on the lock's nodes (history.Event.Token).
	Token string
	// Fence is the fencing token the acquire returned (fenced locks; 0
	// otherwise).
	Fence int64
}

// Spec registers one nemesis.
type Spec struct {
	Name        string
	Description string
	// New returns a fresh nemesis whose tagged fields are its options
	// (package option): Build decodes them once, and Inject reads plain
	// fields. A nemesis with checks across fields has Validate() error; one
	// that applies only to some runs is an Applier.
	New func() Nemesis
	// Action is what its faults do, in the kinds a report draws and
	// describes without knowing the nemesis (history.Action).
	Action history.Action
	// NodeClock: the lock nodes must start under the clock shim, so that
	// this nemesis can shift their wall clocks (Clocks).
	NodeClock bool
	// ClientClock: each client's lock process (an adapter) must start
	// under the clock shim, so that this nemesis can shift its wall clock
	// (ClientClocks).
	ClientClock bool
}

// Applier is a nemesis that applies only to runs of some shapes: Applies
// returns nil, or an error that says why not and what to change (the runner
// turns it into a usage error, and a matrix skips the cell).
type Applier interface {
	Applies(t Topology) error
}

// OptionSpecs lists the nemesis's options, its schedule last.
func (s Spec) OptionSpecs() []option.Spec {
	return append(option.Specs(s.New()), scheduleSpec)
}

// Built is a nemesis made from its options.
type Built struct {
	Nemesis Nemesis
	// Schedule is its schedule option, for ParsePlan.
	Schedule string
	// Options are the values it was built with, defaults included, for the
	// record.
	Options map[string]string
}

// Build makes the nemesis from the options given (its schedule among them),
// durations in TTLs resolved against ttl. Errors name the option and what
// it wants.
func (s Spec) Build(given map[string]string, ttl time.Duration) (Built, error) {
	own := map[string]string{}
	schedule := scheduleSpec.Default
	for k, v := range given {
		if k == ScheduleKey {
			schedule = v
			continue
		}
		own[k] = v
	}
	n := s.New()
	used, err := option.Decode(s.Name, n, own, ttl)
	if err != nil {
		if strings.Contains(err.Error(), "its options are: ") {
			err = fmt.Errorf("%w (and %s)", err, ScheduleKey)
		}
		return Built{}, err
	}
	used[ScheduleKey] = schedule
	return Built{Nemesis: n, Schedule: schedule, Options: used}, nil
}

// ScheduleKey is the option every nemesis has: when its faults happen.
const ScheduleKey = "schedule"

var scheduleSpec = option.Spec{Key: ScheduleKey, Default: "every",
	Help: "when: every[=DUR] (quiet, fault, heal, again), at=1s,3s (since the start) or random[=MIN-MAX] (seeded gaps)"}

// registered holds every nemesis.
var registered = func() *registry.Of[Spec] {
	r := registry.New[Spec]("nemesis")
	r.Unknown = func(name string, known []string) error {
		return fmt.Errorf("unknown nemesis %q%s; known: none, %s", name, suggest.Hint(name, append([]string{"none"}, known...), "%q"), strings.Join(known, ", "))
	}
	return r
}()

// Register adds a nemesis; a duplicate name panics at start-up.
func Register(s Spec) {
	if s.Name == "" || s.New == nil || s.Action == "" {
		panic(fmt.Sprintf("nemesis.Register: spec %q needs a Name, an Action and a New function", s.Name))
	}
	option.Specs(s.New()) // a malformed option declaration panics here, at start-up
	if err := registered.Add(s.Name, s); err != nil {
		panic("nemesis.Register: " + err.Error())
	}
}

// Lookup finds a nemesis by name; the error lists the known ones.
func Lookup(name string) (Spec, error) { return registered.Lookup(name) }

// All returns every registered nemesis, by name.
func All() []Spec { return registered.All() }

// Names lists every registered nemesis's name, in order.
func Names() []string { return registered.Names() }

// newFrom builds a nemesis from a spec and raw options (tests).
func newFrom(s Spec, given map[string]string) (Nemesis, error) {
	b, err := s.Build(given, 0)
	return b.Nemesis, err
}
