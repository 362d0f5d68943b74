// Package history defines the record every run leaves behind: an append-only
// list of events, one JSON object per line, that the checker reads and nothing
// else. Everything a verdict or a report says is derived from these events.
package history

import (
	"encoding/json"
	"fmt"
)

// Kind says what an event is.
type Kind string

// Operation events follow Jepsen's vocabulary: an invoke is followed by exactly
// one completion of the same client, which is ok, fail (definitely did not take
// effect, or the lock said no), or info (indeterminate: it may or may not have
// taken effect). A client is sequential: its completion belongs to its latest
// invoke.
const (
	Invoke Kind = "invoke"
	OK     Kind = "ok"
	Fail   Kind = "fail"
	Info   Kind = "info"

	// Lost: the client learned it no longer holds Key (a renewal failed, its
	// validity ran out); it stops touching the resource at this instant.
	Lost Kind = "lost"

	FaultStart Kind = "fault-start"
	FaultEnd   Kind = "fault-end"

	RunStart Kind = "run-start"
	// WorkerExit: the coordinator saw a worker process end. Expected is true
	// when the run told it to stop or a nemesis killed it on purpose.
	WorkerExit Kind = "worker-exit"
	// Probe: a read of the final state taken after the workload stopped.
	Probe Kind = "probe"
	// RunEnd marks a complete history. A history without it was cut short.
	RunEnd Kind = "run-end"

	// Stall: a process of the run (a worker, or the coordinator with
	// Client -1, which also forwards every proxied byte) could not run for
	// a while: a timer of its own fired StallNs late. Time is when it ran
	// again, so the stall covers [Time-StallNs, Time]. The checker blames an
	// overlap on a stall only when no fault explains it.
	Stall Kind = "stall"
	// Stretch: a worker took a nemesis's request to keep its holds of Key
	// inside the critical section after the hold time (Message "on"), let
	// it go ("off"), or a hold it keeps reached the end of its work and
	// waits there, before its write ("holding"). The stretch is part of the
	// fault that asked for it.
	Stretch Kind = "stretch"
)

// Operation names (the F field of operation events).
const (
	Acquire = "acquire"
	Release = "release"
	Read    = "read"  // read of the protected resource
	Write   = "write" // write of the protected resource; fail = rejected stale fence
)

// Error strings recorded on completions the checker interprets.
const (
	ErrNotHeld = "not-held" // a release found the lease gone
)

// Event is one line of history.jsonl.
//
// Time is CLOCK_MONOTONIC in nanoseconds, which every process on the host
// shares, so events of workers and of the coordinator order correctly even
// though they are written to the file in order of arrival, not of time.
type Event struct {
	Time   int64  `json:"time"`
	Kind   Kind   `json:"kind"`
	Client int    `json:"client"` // worker index; -1 for the nemesis and the coordinator
	F      string `json:"f,omitempty"`
	Key    string `json:"key,omitempty"`
	Value  *int64 `json:"value,omitempty"` // resource value read or written
	Fence  int64  `json:"fence,omitempty"` // fencing token carried by a write, 0 when none
	Owner  string `json:"owner,omitempty"` // lock owner identity (reentrant locks)
	// Token, on an acquire's ok, is the value that marks this lease on the
	// lock's nodes (the key's value, or its hash field): how a nemesis
	// tells the lease it aimed at from the next holder's.
	Token   string `json:"token,omitempty"`
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"` // human-readable detail

	Fault *Fault   `json:"fault,omitempty"`
	Run   *RunInfo `json:"run,omitempty"`
	// Expected, on WorkerExit: the exit was asked for (stop, nemesis kill).
	Expected bool `json:"expected,omitempty"`
	// PTTL, on a Probe of a lock key: the key's remaining TTL in ms per lock
	// node (-2 missing, -1 no expiry), as Redis's PTTL answers.
	PTTL []int64 `json:"pttl,omitempty"`
	// StallNs, on a Stall: how late the process ran, in nanoseconds.
	StallNs int64 `json:"stall_ns,omitempty"`
	// Effect, on a FaultEnd: what the fault did to the lease it aimed at.
	Effect *Effect `json:"effect,omitempty"`
	// WorkloadNs, on the RunEnd: how long the workload really ran, from the
	// moment every worker was ready (the run-start) to the stop request.
	WorkloadNs int64 `json:"workload_ns,omitempty"`
}

// NoClient marks events of the nemesis and the coordinator.
const NoClient = -1

// Fault describes one fault window; start and end events carry the same ID.
type Fault struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	// Action is what kind of thing the fault did (older histories: "").
	Action Action            `json:"action,omitempty"`
	Target string            `json:"target"`
	Params map[string]string `json:"params,omitempty"`
	// Clients the fault acted on directly (a paused or killed worker, a
	// client whose links it slowed or cut).
	Clients []int `json:"clients,omitempty"`
	// Stopped are the clients whose process the fault stopped (SIGSTOP):
	// the stalls they record meanwhile are the fault, not the harness.
	Stopped []int `json:"stopped,omitempty"`
	// Nodes are the lock nodes it acted on directly (crashed, paused, its
	// clock moved), by index.
	Nodes []int `json:"nodes,omitempty"`
	// Aim is the lease the fault was aimed at: a hold of Client on Key that
	// had begun (its acquire returned) when the fault started. Nil for a
	// fault aimed at no particular lease.
	Aim *Aim `json:"aim,omitempty"`
	// Step is the fault's place in its nemesis's schedule (1, 2, …).
	Step int `json:"step,omitempty"`
}

// Action is what kind of thing a fault did, so that a report can draw and
// describe it without knowing any nemesis by name.
type Action string

const (
	ActionPause    Action = "pause"    // stopped processes (SIGSTOP) for a while: Fault.Stopped, or Nodes
	ActionKill     Action = "kill"     // ended client processes (SIGKILL): Fault.Clients
	ActionCrash    Action = "crash"    // killed lock nodes, restarted later: Fault.Nodes
	ActionFailover Action = "failover" // killed a primary and promoted a replica: Fault.Nodes
	ActionNetwork  Action = "network"  // slowed, cut or reset links
	ActionClock    Action = "clock"    // moved lock nodes' clocks: Fault.Nodes
	ActionSlow     Action = "slow"     // made clients' work slow: Fault.Clients
)

// Aim names the hold a fault was aimed at.
type Aim struct {
	Client int    `json:"client"`
	Key    string `json:"key"`
	// Since is when that hold's acquire returned (CLOCK_MONOTONIC ns).
	Since int64 `json:"since"`
}

// Lease fates: what became of the lease a fault hit.
const (
	LeaseLost    = "lost"    // it was gone while its holder still held (a second client could take it)
	LeaseKept    = "kept"    // it survived the fault
	LeaseUnknown = "unknown" // the history cannot tell
)

// Effect is what a nemesis saw its fault do, recorded on the fault-end.
type Effect struct {
	// Landed: the fault hit a live lease the way it is meant to (each
	// nemesis says what that takes: a pause past the lease, a node that
	// forgot a lease while its holder still worked, …). A fault that did
	// not land is no evidence about the lock either way.
	Landed bool `json:"landed"`
	// Lease is what the nemesis saw become of that lease (LeaseLost,
	// LeaseKept), or "" when only the history can tell.
	Lease string `json:"lease,omitempty"`
	// Note says in words what happened, for the report.
	Note string `json:"note,omitempty"`
}

// RunInfo is the configuration of the run, recorded first so a stored history
// can be re-checked without anything else.
type RunInfo struct {
	Lock       string            `json:"lock"`
	Nemesis    []string          `json:"nemesis"`
	Seed       int64             `json:"seed"`
	Clients    int               `json:"clients"`
	Keys       int               `json:"keys"`
	TTLms      int64             `json:"ttl_ms"`
	Holdms     int64             `json:"hold_ms"`
	Durationms int64             `json:"duration_ms"`
	Nodes      int               `json:"nodes"`
	Backend    string            `json:"backend"`
	Options    map[string]string `json:"options,omitempty"`
	Reentrant  bool              `json:"reentrant,omitempty"`
	// Renew: clients renewed their leases every TTL/3 while holding.
	Renew bool `json:"renew,omitempty"`
	// Reentry: the probability that a hold re-acquired its lock inside.
	Reentry float64 `json:"reentry,omitempty"`
	// Topology of the run: replicas per lock node, sentinels, persistence,
	// and every node's address by name (for forensics across runs).
	Replicas    int               `json:"replicas,omitempty"`
	Sentinels   int               `json:"sentinels,omitempty"`
	Persistence string            `json:"persistence,omitempty"`
	NodeAddrs   map[string]string `json:"node_addrs,omitempty"`
	// LeaseMs is the lease the lock really uses: the TTL, unless a lock
	// option set another one explicitly (Redisson's watchdog timeout,
	// redsync's expiry). Zero in histories from before it was recorded:
	// read it as the TTL.
	LeaseMs int64 `json:"lease_ms,omitempty"`
	// TimeScale multiplied every duration of the run (1 when absent).
	TimeScale float64 `json:"time_scale,omitempty"`
	// RoundTrip is the round trip to the lock nodes through the proxies,
	// measured at start-up (p50 and p99, µs).
	RoundTripP50us int64 `json:"round_trip_p50_us,omitempty"`
	RoundTripP99us int64 `json:"round_trip_p99_us,omitempty"`
}

// Lease returns the lease the run's lock used, in ms.
func (r RunInfo) Lease() int64 {
	if r.LeaseMs > 0 {
		return r.LeaseMs
	}
	return r.TTLms
}

// Int64 returns a pointer to v, for Event.Value.
func Int64(v int64) *int64 { return &v }

// Marshal encodes e as one line without the trailing newline.
func (e Event) Marshal() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("history: marshal event: %v", err)) // only plain data inside
	}
	return b
}
