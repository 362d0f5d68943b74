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
	Time    int64  `json:"time"`
	Kind    Kind   `json:"kind"`
	Client  int    `json:"client"` // worker index; -1 for the nemesis and the coordinator
	F       string `json:"f,omitempty"`
	Key     string `json:"key,omitempty"`
	Value   *int64 `json:"value,omitempty"` // resource value read or written
	Fence   int64  `json:"fence,omitempty"` // fencing token carried by a write, 0 when none
	Owner   string `json:"owner,omitempty"` // lock owner identity (reentrant locks)
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"` // human-readable detail

	Fault *Fault   `json:"fault,omitempty"`
	Run   *RunInfo `json:"run,omitempty"`
	// Expected, on WorkerExit: the exit was asked for (stop, nemesis kill).
	Expected bool `json:"expected,omitempty"`
	// PTTL, on a Probe of a lock key: the key's remaining TTL in ms per lock
	// node (-2 missing, -1 no expiry), as Redis's PTTL answers.
	PTTL []int64 `json:"pttl,omitempty"`
}

// NoClient marks events of the nemesis and the coordinator.
const NoClient = -1

// Fault describes one fault window; start and end events carry the same ID.
type Fault struct {
	ID     int               `json:"id"`
	Name   string            `json:"name"`
	Target string            `json:"target"`
	Params map[string]string `json:"params,omitempty"`
	// Clients the fault acted on directly (a paused or killed worker).
	Clients []int `json:"clients,omitempty"`
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
