// Package history defines the record every run leaves behind: an append-only
// list of events, one JSON object per line, that the checker reads and nothing
// else. Everything a verdict or a report says is derived from these events.
package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
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
	// FaultMissed: a step of a nemesis became no fault (its target never
	// came, the run ended first); Fault names the nemesis and the step,
	// Message says why. A run whose nemeses only missed tested nothing of
	// what they were asked to do.
	FaultMissed Kind = "fault-missed"

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
	// waits there, before its write ("holding"), or it began the rest the
	// stretch asked for first, holding nothing until its "on" ("resting").
	// The stretch is part of the fault that asked for it.
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
	// ErrCancelled begins the error of an operation the client cancelled
	// in flight (a nemesis asked it to): its outcome is unknown.
	ErrCancelled = "cancelled"
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
	// Queued, on a Stall: the kernel counted it as a wait on the CPU's run
	// queue (ready to run, not running). A process a fault stopped is not
	// on the run queue, so such a wait is the machine's even while a fault
	// stops and starts that process.
	Queued bool `json:"queued,omitempty"`
	// Node, on a Stall of a server (Client -1): the lock node that waited
	// StallNs on the CPU's run queue, ready to run but not running.
	Node string `json:"node,omitempty"`
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
	ActionCancel   Action = "cancel"   // cancelled a client's call in flight: Fault.Clients
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
	// Overdone says what the machine added to the fault (a starved client
	// held off the CPU beyond the fault's stops), or "": the fault was
	// harder than asked, and an overlap only it explains says nothing of
	// the lock under the fault as asked.
	Overdone string `json:"overdone,omitempty"`
	// Answered is, for a fault that held replies back in the proxies
	// (slow-reply), when the last reply to the aimed hold's acquire came
	// from the lock's server, in history time (0: not measured). The reply
	// waited in the proxies from then on: a server that could not run
	// after it delayed nothing of that acquire.
	Answered int64 `json:"answered,omitempty"`
}

// RunInfo is what the checker reads of the run's settings, recorded first
// so that a stored history can be re-checked without anything else. The
// run's whole settings are its config.json (settings.Run); this is not a
// second copy of them.
type RunInfo struct {
	Lock    string   `json:"lock"`
	Nemesis []string `json:"nemesis"`
	Seed    int64    `json:"seed"`
	Clients int      `json:"clients"`
	TTLms   int64    `json:"ttl_ms"`
	// LeaseMs is the lease the lock really uses: the TTL, unless a lock
	// option set another one explicitly (Redisson's watchdog timeout,
	// redsync's expiry). Zero in histories from before it was recorded:
	// read it as the TTL.
	LeaseMs int64 `json:"lease_ms,omitempty"`
	// Leaseless: the lock's grants had no lease (locks.Spec.Leaseless):
	// they lasted until released or until the client's session ended.
	Leaseless bool `json:"leaseless,omitempty"`
	// KeepsAlive: the lock's library renews its lease (a session) in the
	// background (locks.Spec.KeepsAlive): etcd, ZooKeeper.
	KeepsAlive bool `json:"keeps_alive,omitempty"`
	// Renew: clients renewed their leases every TTL/3 while holding.
	Renew bool `json:"renew,omitempty"`
	// BlindRelease: the lock's release ends the key's lock whoever holds
	// it (locks.Spec.BlindRelease).
	BlindRelease bool `json:"blind_release,omitempty"`
	// Options are the lock's option values in force, defaults included
	// ("etcd-mutex.recheck": "true"), as config.json cannot say them.
	Options map[string]string `json:"options,omitempty"`
	// NodeRoles are the lock nodes' names and roles when the run began, in
	// lock-node order, one per node: "n0 primary", "etcd1 leader".
	NodeRoles []string `json:"node_roles,omitempty"`
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
func (e Event) Marshal() []byte { return e.AppendJSON(nil) }

// AppendJSON appends e's JSON encoding, byte for byte what json.Marshal
// makes of it, to b. It writes the fields of an operation event without
// reflection (every worker event passes through it twice, once in the
// worker and once in the coordinator); the nested objects of the rare
// coordinator events, and any string that needs escaping, go through
// encoding/json.
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"time":`...)
	b = strconv.AppendInt(b, e.Time, 10)
	b = append(b, `,"kind":`...)
	b = appendString(b, string(e.Kind))
	b = append(b, `,"client":`...)
	b = strconv.AppendInt(b, int64(e.Client), 10)
	if e.F != "" {
		b = append(b, `,"f":`...)
		b = appendString(b, e.F)
	}
	if e.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, e.Key)
	}
	if e.Value != nil {
		b = append(b, `,"value":`...)
		b = strconv.AppendInt(b, *e.Value, 10)
	}
	if e.Fence != 0 {
		b = append(b, `,"fence":`...)
		b = strconv.AppendInt(b, e.Fence, 10)
	}
	if e.Owner != "" {
		b = append(b, `,"owner":`...)
		b = appendString(b, e.Owner)
	}
	if e.Token != "" {
		b = append(b, `,"token":`...)
		b = appendString(b, e.Token)
	}
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, e.Error)
	}
	if e.Message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, e.Message)
	}
	if e.Fault != nil {
		b = append(b, `,"fault":`...)
		b = appendMarshal(b, e.Fault)
	}
	if e.Run != nil {
		b = append(b, `,"run":`...)
		b = appendMarshal(b, e.Run)
	}
	if e.Expected {
		b = append(b, `,"expected":true`...)
	}
	if len(e.PTTL) > 0 {
		b = append(b, `,"pttl":[`...)
		for i, v := range e.PTTL {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, v, 10)
		}
		b = append(b, ']')
	}
	if e.StallNs != 0 {
		b = append(b, `,"stall_ns":`...)
		b = strconv.AppendInt(b, e.StallNs, 10)
	}
	if e.Queued {
		b = append(b, `,"queued":true`...)
	}
	if e.Node != "" {
		b = append(b, `,"node":`...)
		b = appendString(b, e.Node)
	}
	if e.Effect != nil {
		b = append(b, `,"effect":`...)
		b = appendMarshal(b, e.Effect)
	}
	if e.WorkloadNs != 0 {
		b = append(b, `,"workload_ns":`...)
		b = strconv.AppendInt(b, e.WorkloadNs, 10)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string. Printable ASCII other than the
// characters encoding/json escapes is copied as it is; anything else is
// left to encoding/json, so that the bytes are always its own.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendMarshal(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendMarshal(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("history: marshal event: %v", err)) // only plain data inside
	}
	return append(b, j...)
}

// Unmarshal decodes one line into e, as json.Unmarshal does (e should be
// zero). The lines that workers send, flat objects of known fields whose
// strings need no unescaping, are read without reflection; any other line
// goes through encoding/json, which also gives the errors.
func (e *Event) Unmarshal(line []byte) error {
	if decodeFlat(line, e) {
		return nil
	}
	*e = Event{}
	return json.Unmarshal(line, e)
}

// decodeFlat reads a line as AppendJSON writes an operation event: an
// object of known keys whose values are integers, plain strings (no
// escapes), true or false. It reports false on anything else, leaving e
// partly written.
func decodeFlat(b []byte, e *Event) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '"':
			v, j, ok := plainString(b, i)
			if !ok {
				return false
			}
			switch key {
			case "kind":
				e.Kind = Kind(v)
			case "f":
				e.F = v
			case "key":
				e.Key = v
			case "owner":
				e.Owner = v
			case "token":
				e.Token = v
			case "error":
				e.Error = v
			case "message":
				e.Message = v
			default:
				return false
			}
			i = j
		case 't', 'f':
			var v bool
			switch {
			case bytes.HasPrefix(b[i:], []byte("true")):
				v, i = true, i+4
			case bytes.HasPrefix(b[i:], []byte("false")):
				i += 5
			default:
				return false
			}
			switch key {
			case "expected":
				e.Expected = v
			case "queued":
				e.Queued = v
			default:
				return false
			}
		default:
			j := i
			if j < len(b) && b[j] == '-' {
				j++
			}
			start := j
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			if j == start || j-start > 1 && b[start] == '0' {
				return false
			}
			n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
			if err != nil {
				return false
			}
			switch key {
			case "time":
				e.Time = n
			case "client":
				if int64(int(n)) != n {
					return false
				}
				e.Client = int(n)
			case "value":
				e.Value = Int64(n)
			case "fence":
				e.Fence = n
			case "stall_ns":
				e.StallNs = n
			case "workload_ns":
				e.WorkloadNs = n
			default:
				return false
			}
			i = j
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// plainString reads a JSON string at b[i] that holds printable ASCII and
// no escape, and returns it and the index after its closing quote.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return "", 0, false
		}
	}
	return "", 0, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
