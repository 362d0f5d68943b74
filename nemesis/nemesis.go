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
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/proxy"
)

// Nemesis injects one kind of fault.
type Nemesis interface {
	// Inject starts one fault and returns it, or ErrNoTarget when there is
	// nothing to hit right now (no client holds a lock): the schedule tries
	// again shortly. An Inject that fails, or is cancelled, after it already
	// did harm (a failover that killed the primary, then the sentinels did
	// not decide in time) returns that partial fault with its error: the
	// schedule records it, heals it, and reports the error. Otherwise a
	// failing Inject undoes what it did and returns a nil Fault.
	Inject(ctx context.Context, env Env) (*Fault, error)
}

// ErrNoTarget: the nemesis found nothing to hit at this instant.
var ErrNoTarget = errors.New("no target")

// ErrDone: the nemesis has nothing more to inject in this run (a sentinel
// failover, which Sentinel will not repeat soon); its schedule ends quietly.
var ErrDone = errors.New("nothing more to inject")

// Fault is one injected fault.
type Fault struct {
	Target  string
	Params  map[string]string
	Clients []int // clients acted on directly
	// Duration is how long to keep the fault before healing; 0 for an
	// instant fault (a kill), which has nothing to heal.
	Duration time.Duration
	// Heal undoes the fault; nil when there is nothing to undo.
	Heal func(ctx context.Context) error
}

// Env is what a nemesis may act on.
type Env interface {
	TTL() time.Duration
	Hold() time.Duration
	Rand() *rand.Rand
	// Holders lists (client, key, since) for every hold in progress, as the
	// coordinator saw it in the event stream.
	Holders() []Holding
	// Acquiring lists clients whose acquire has been in flight at least d.
	Acquiring(d time.Duration) []int
	Pause(client int) error
	Resume(client int) error
	// Kill ends a client with SIGKILL; its exit is recorded as expected.
	Kill(client int) error
	// Stretch turns a client's hold stretch on or off: while it is on, a
	// client that is in its critical section stays there, running normally
	// (its watchdog too), instead of releasing after the hold time.
	Stretch(client int, on bool) error
	// Proxies are the client↔lock-node links and the replication relays.
	Proxies() *proxy.Proxies
	// LockNodes are the nodes the lock uses, in order (never the resource):
	// the current primary of each replication group.
	LockNodes() []cluster.Node
	// Topology is the run's shape.
	Topology() Topology
	// Groups are the replication groups, one per lock node, in order; a
	// group without replicas has a single member.
	Groups() []*Group
	// Sentinels are the addresses of the run's sentinels (processes or
	// containers, by backend).
	Sentinels() []string
	// Clock is the clock shim's control of node, or nil when the node runs
	// without the shim.
	Clock(node cluster.Node) *cluster.Clock
}

// Topology is the shape of a run, which decides whether a nemesis applies.
type Topology struct {
	Backend   string // "local", "docker", …
	Lock      string
	LockNodes int
	// Replicas per lock node; Sentinels watching them.
	Replicas  int
	Sentinels int
	// Persistence of the lock nodes: "none", "everysec" or "always" (AOF).
	Persistence string
	Clients     int
	TTL         time.Duration
}

// Holding is one hold in progress.
type Holding struct {
	Client int
	Key    string
	Since  time.Time
}

// Spec registers one nemesis.
type Spec struct {
	Name        string
	Description string
	Options     []option.Spec
	// New builds the nemesis from its resolved options; it returns an error
	// for bad values.
	New func(opts option.Values) (Nemesis, error)
	// Available says whether the nemesis applies to a run of this shape with
	// these options: nil, or an error that says why not and what to change
	// (the runner turns it into a usage error, and a matrix skips the cell).
	// A nil Available applies everywhere.
	Available func(t Topology, opts option.Values) error
	// NodeClock: the lock nodes must start under the clock shim, so that
	// this nemesis can shift their wall clocks (Env.Clock).
	NodeClock bool
}

// ScheduleKey is the option every nemesis has: when its faults happen.
const ScheduleKey = "schedule"

var (
	mu       sync.Mutex
	registry = map[string]Spec{}
)

// Register adds a nemesis; a duplicate name panics at start-up.
func Register(s Spec) {
	mu.Lock()
	defer mu.Unlock()
	if s.Name == "" || s.New == nil {
		panic(fmt.Sprintf("nemesis.Register: spec %q needs a Name and a New function", s.Name))
	}
	if _, dup := registry[s.Name]; dup {
		panic("nemesis.Register: duplicate nemesis " + s.Name)
	}
	s.Options = append(s.Options[:len(s.Options):len(s.Options)], option.Spec{Key: ScheduleKey, Default: "every",
		Help: "when: every[=DUR] (quiet, fault, heal, again), at=1s,3s (since the start) or random[=MIN-MAX] (seeded gaps)"})
	registry[s.Name] = s
}

// Lookup finds a nemesis by name; the error lists the known ones.
func Lookup(name string) (Spec, error) {
	mu.Lock()
	defer mu.Unlock()
	s, ok := registry[name]
	if !ok {
		return Spec{}, fmt.Errorf("unknown nemesis %q; known: none, %s", name, strings.Join(namesLocked(), ", "))
	}
	return s, nil
}

// All returns every registered nemesis, by name.
func All() []Spec {
	mu.Lock()
	defer mu.Unlock()
	var out []Spec
	for _, n := range namesLocked() {
		out = append(out, registry[n])
	}
	return out
}

func namesLocked() []string {
	var ns []string
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// newFrom builds a nemesis from a spec and raw options (tests).
func newFrom(s Spec, given map[string]string) (Nemesis, error) {
	v, err := option.Resolve(s.Name, s.Options, given, 0)
	if err != nil {
		return nil, err
	}
	return s.New(v)
}
