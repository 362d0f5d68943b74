package checker

import (
	"encoding/json"
	"fmt"

	"github.com/lockchaos/lockchaos/history"
)

// Verdict is the checker's answer about mutual exclusion.
type Verdict string

const (
	// Safe: the whole history was checked and no two holds overlapped.
	Safe Verdict = "safe"
	// Violation: two clients held the same lock at the same time, or the
	// protected resource shows the damage (lost update, stale write accepted).
	// A violation found in a history that was cut short is still a violation.
	Violation Verdict = "violation"
	// Inconclusive: no violation was found, but the evidence is incomplete
	// (history cut short, a worker died unexpectedly, the checker timed out,
	// nothing was ever held). Never reported as safe.
	Inconclusive Verdict = "inconclusive"
)

// Result is what result.json holds.
type Result struct {
	// Schema is the version of this layout (ResultSchema).
	Schema  int     `json:"schema"`
	Verdict Verdict `json:"verdict"`
	// Summary explains the verdict in one sentence, from the history alone.
	Summary string `json:"summary"`
	// Reasons lists every finding behind the verdict: each kind of violation
	// evidence, and each reason the evidence is incomplete.
	Reasons []string `json:"reasons"`

	Lock    string   `json:"lock"`
	Nemesis []string `json:"nemesis"`
	Seed    int64    `json:"seed"`

	Mutex    MutexResult    `json:"mutex"`
	Resource ResourceResult `json:"resource"`
	Acquire  AcquireStats   `json:"acquire"`
	Release  ReleaseStats   `json:"release"`
	Liveness LivenessResult `json:"liveness"`
	Faults   []FaultWindow  `json:"faults"`

	// Evidence says how many faults landed and what became of the leases
	// they hit: a run that asked for faults and in which none landed is
	// inconclusive, never safe.
	Evidence Evidence `json:"evidence"`
	// Errors are the errors the lock answered with, by kind, the most
	// frequent first (LockError); empty when it gave none.
	Errors []LockError `json:"errors"`
	// Stalls are the times a process of the run could not run, or the
	// harness's own resource node held a client up (slowResource).
	Stalls StallStats `json:"stalls"`

	// FirstViolationMs is the time to the start of the first overlap: from
	// the start of the earliest fault that caused it, or, when no fault did,
	// from the start of the run (FirstViolationCause says which); null when
	// there was no overlap. Never negative: a fault that began after an
	// overlap did not cause it.
	FirstViolationMs    *float64 `json:"first_violation_ms"`
	FirstViolationCause string   `json:"first_violation_cause,omitempty"`
	// Complete is false when the history was cut short or a worker died
	// unexpectedly.
	Complete bool `json:"complete"`
	// DurationMs is the span of the run covered by the history.
	DurationMs float64 `json:"duration_ms"`
	// WorkloadMs is how long the workload really ran: from the moment every
	// worker was ready to the stop request (0 in older histories).
	WorkloadMs float64 `json:"workload_ms"`

	// Settings are the run's settings as its run-start recorded them
	// (lock, options, workload, topology); nil when the history has none.
	Settings *history.RunInfo `json:"settings,omitempty"`
	// Reproduce says how to make the run again; the runner writes it.
	Reproduce *Reproduce `json:"reproduce,omitempty"`
}

// Evidence sums up what the faults did.
type Evidence struct {
	// Faults is the number of fault windows; Landed those that hit a live
	// lease the way they are meant to (FaultWindow.Landed).
	Faults int `json:"faults"`
	Landed int `json:"landed"`
	// LeasesLost, LeasesKept and LeasesUnknown count the landed faults by
	// what became of the lease they hit.
	// LeasesLostLeftInTime are the lost ones whose holder left in time
	// (FaultWindow.LeftInTime).
	LeasesLost           int `json:"leases_lost"`
	LeasesLostLeftInTime int `json:"leases_lost_left_in_time,omitempty"`
	LeasesKept           int `json:"leases_kept"`
	LeasesUnknown        int `json:"leases_unknown"`
	// Overlaps counts every overlapping pair of holds by cause (fault,
	// stall, none: see Overlap.Cause). LandedFaultOverlaps are those of
	// Overlaps["fault"] that a fault which landed caused: the rest came
	// under faults that did not do what their nemesis aims for (a delay
	// shorter than the lease), so the lock granted a second holder on its
	// own account.
	Overlaps            map[string]int `json:"overlaps"`
	LandedFaultOverlaps int            `json:"landed_fault_overlaps"`
	// Missed are the nemeses' steps that became no fault, with why.
	Missed []MissedStep `json:"missed,omitempty"`
}

// MissedStep is a step of a nemesis that became no fault.
type MissedStep struct {
	Nemesis string `json:"nemesis"`
	Step    int    `json:"step"`
	Why     string `json:"why"`
}

// StallStats counts the stalls of the run's processes.
type StallStats struct {
	Count int     `json:"count"`
	MaxMs float64 `json:"max_ms"`
	// Worst names the process of the longest stall (-1: the coordinator,
	// or the lock node WorstNode when it is set).
	Worst     int    `json:"worst"`
	WorstNode string `json:"worst_node,omitempty"`
}

// MutexResult is the mutual-exclusion check: porcupine and the interval sweep.
type MutexResult struct {
	// Ops is the number of operations given to porcupine (successful acquires
	// and hold ends: releases, losses, deaths).
	Ops int `json:"ops"`
	// Holds is the number of critical sections (outermost acquire to hold end).
	Holds int `json:"holds"`
	// KeyHolders is the most clients that held one key: under 2, no key
	// ever passed from one client to another.
	KeyHolders int `json:"key_holders"`
	// Linearizable is porcupine's answer; null when it timed out.
	Linearizable *bool `json:"linearizable"`
	// Porcupine is porcupine's raw result: "Ok", "Illegal" or "Unknown".
	Porcupine string `json:"porcupine"`
	// Agree is true when porcupine and the sweep reach the same answer.
	Agree bool `json:"agree"`
	// OverlapCount counts every overlapping pair of holds; Overlaps lists the
	// first MaxOverlaps of them in time order.
	OverlapCount int       `json:"overlap_count"`
	Overlaps     []Overlap `json:"overlaps"`
	// IncidentCount counts the incidents: overlaps of one key that touch in
	// time or share a hold, merged (six pauses make six incidents, however
	// many pairs of holds each one let overlap). Incidents lists the first MaxOverlaps
	// in time order; CoexistMs is the total time, over every key, during
	// which two or more clients held the same key.
	IncidentCount int        `json:"incident_count"`
	Incidents     []Incident `json:"incidents"`
	CoexistMs     float64    `json:"coexist_ms"`
	// PastLease is the hold that went on longest after its lease had
	// certainly run out (its acquire's answer plus the lease), among the
	// holds that overlapped; nil for a lock without a lease of known
	// length (lease-less, renewed) or when none did.
	PastLease *PastLease `json:"past_lease,omitempty"`
	CheckMs   float64    `json:"check_ms"`
}

// PastLease is how long a client held on after its lease ran out.
type PastLease struct {
	Client int     `json:"client"`
	Key    string  `json:"key"`
	Ms     float64 `json:"ms"`
}

// Incident is one episode of broken exclusion on a key: overlapping pairs
// of holds that touch in time or share a hold (one hold outliving its lease
// while other clients took the key in turn).
type Incident struct {
	Key string `json:"key"`
	// StartMs and EndMs bound it; CoexistMs is how long two or more clients
	// held the key in it (the union of its overlaps).
	StartMs   float64 `json:"start_ms"`
	EndMs     float64 `json:"end_ms"`
	CoexistMs float64 `json:"coexist_ms"`
	// Pairs counts its overlapping pairs of holds; Clients are every client
	// in them, sorted.
	Pairs   int   `json:"pairs"`
	Clients []int `json:"clients"`
	// Faults are the IDs of the faults that can explain any of its pairs
	// (Overlap.Faults), sorted; Cause is fault when a fault explains one of
	// its pairs, else none when one has no explanation, else stall.
	Faults []int  `json:"faults"`
	Cause  string `json:"cause"`
	// First is the index in MutexResult.Overlaps of its first listed pair,
	// -1 when none of its pairs is listed.
	First int `json:"first"`
}

// MaxOverlaps bounds the overlaps listed in a result.
const MaxOverlaps = 100

// Overlap is one pair of clients that held the same key at the same time.
type Overlap struct {
	Key string `json:"key"`
	// Clients: the earlier holder first.
	Clients [2]int `json:"clients"`
	// StartMs and EndMs bound the time both held the key, in ms since the run
	// started.
	StartMs float64 `json:"start_ms"`
	EndMs   float64 `json:"end_ms"`
	// Holds are the two holds, earlier first, in ms since the run started.
	Holds [2]HoldSpan `json:"holds"`
	// Faults are the IDs of the fault windows that can explain it: those
	// that began before the overlap and were active at some point since the
	// earlier hold's acquire was invoked.
	Faults []int `json:"faults"`
	// Cause is what explains it: fault, stall (the harness stalled the
	// earlier holder at least as long as the overlap lasted, or kept the
	// later one's answer unread for a lease before it read its ok) or none
	// (the lock broke on its own). Stall, when set, is the longest stall of
	// the holder (or of the coordinator) that bears on it.
	Cause string     `json:"cause"`
	Stall *StallNote `json:"stall,omitempty"`
	// Late, with a lock whose release ends whoever's lock, is another
	// client's release that may have reached the store late and ended the
	// earlier holder's live lease (what delayed it is the cause).
	Late *LateRelease `json:"late_release,omitempty"`
}

// LateRelease is a release that may have ended another client's lease.
type LateRelease struct {
	// Client released; InvokedMs is when, in ms since the run started;
	// Victim is the client whose lease it may have ended.
	Client    int     `json:"client"`
	InvokedMs float64 `json:"invoked_ms"`
	Victim    int     `json:"victim"`
	Text      string  `json:"text"`
}

// StallNote is a stall of the harness behind an overlap.
type StallNote struct {
	// Client is the process that stalled: a client, or -1 the coordinator.
	Client int `json:"client"`
	// Ms is that stall's length; TotalMs everything the harness stalled the
	// holder it names between its grant and the overlap's end (or, for the
	// later holder, its reading the ok).
	Ms      float64 `json:"ms"`
	TotalMs float64 `json:"total_ms"`
	// Text says it in words: "client 2 could not run for 260 ms".
	Text string `json:"text"`
	// LeaseLived: the earlier holder's lease, counted from the earliest its
	// key could have been set, still lived when the later holder's acquire
	// returned: its stall does not explain the overlap, whatever its length.
	LeaseLived bool `json:"lease_lived,omitempty"`
}

// HoldSpan is one client's critical section and how it ended.
type HoldSpan struct {
	Client int `json:"client"`
	// AcquireMs is when the hold's latest acquire was invoked.
	AcquireMs float64 `json:"acquire_ms"`
	StartMs   float64 `json:"start_ms"`
	EndMs     float64 `json:"end_ms"`
	// End says what ended the hold.
	End HoldEnd `json:"end"`
	// LeaseEndMs is when the lease of the hold's latest acquire had run out
	// on the lock's nodes at the latest, by their own clocks: that
	// acquire's return plus the lease the run used (RunInfo.Lease); the
	// nodes set it no earlier than the acquire's invocation, so it may have
	// run out from LeaseFromMs on. A client that still held after
	// LeaseEndMs held a lease the lock no longer had. Both are 0 when the
	// history cannot tell: no lease recorded, or clients renewed their
	// leases (renewals are not recorded).
	LeaseFromMs float64 `json:"lease_from_ms,omitempty"`
	LeaseEndMs  float64 `json:"lease_end_ms,omitempty"`
}

// ResourceResult is the resource oracle: what overlapping holds did to the
// counter they protect.
type ResourceResult struct {
	// Holds is the number of holds that wrote the resource and were accepted.
	Holds int `json:"holds"`
	// LostUpdates is accepted writes minus the counter's growth, summed over
	// keys: each is an increment that another overwrote.
	LostUpdates int `json:"lost_updates"`
	// StaleReads counts reads that returned a value older than a write that
	// had already been acknowledged.
	StaleReads int `json:"stale_reads"`
	// StaleAccepted counts fenced writes the resource accepted although a
	// higher fencing token had already reached it: a violation even for a
	// fenced lock. StaleRejected counts fenced writes it refused.
	StaleAccepted int `json:"stale_accepted"`
	// FenceReused counts fenced operations accepted under a token that a
	// different client had already used: the lock issued one token twice.
	FenceReused   int `json:"fence_reused"`
	StaleRejected int `json:"stale_rejected"`
	// Safe is true when none of the above shows damage and the final
	// counters were read.
	Safe bool `json:"safe"`
	// State sums it up: damaged, unknown, fenced or intact.
	State ResourceState `json:"state"`
	// Summary says in words what happened to the resource.
	Summary string `json:"summary"`
}

// ResourceState is what the protected resource shows (ResourceResult.State).
type ResourceState string

const (
	// ResourceDamaged: an update was lost, a read was stale, or a stale or
	// reused fencing token was accepted.
	ResourceDamaged ResourceState = "damaged"
	// ResourceUnknown: no damage seen, but the evidence is incomplete (the
	// final counters were not read).
	ResourceUnknown ResourceState = "unknown"
	// ResourceFenced: intact, and at least one operation with a stale
	// fencing token was rejected — fencing did the work.
	ResourceFenced ResourceState = "fenced"
	// ResourceIntact: no lost update, no stale read, no stale fenced
	// operation accepted, and the final counters were read.
	ResourceIntact ResourceState = "intact"
)

// AcquireStats counts acquire operations (a blocking acquire is one).
type AcquireStats struct {
	Attempted int `json:"attempted"`
	OK        int `json:"ok"`
	Failed    int `json:"failed"`
	Unknown   int `json:"unknown"` // timed out, errored, or never completed
	// Latency of successful acquires, in ms.
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	Maxms float64 `json:"max_ms"`
	// DuringFaults counts the acquires invoked while a fault window was
	// open: the lock's availability under its faults.
	DuringFaults Availability `json:"during_faults"`
}

// Availability counts acquires and those that returned the lock.
type Availability struct {
	Attempted int `json:"attempted"`
	OK        int `json:"ok"`
}

// ReleaseStats counts release operations.
type ReleaseStats struct {
	Attempted int     `json:"attempted"`
	OK        int     `json:"ok"`
	NotHeld   int     `json:"not_held"`
	Unknown   int     `json:"unknown"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	Maxms     float64 `json:"max_ms"`
}

// LivenessResult reports progress failures, separate from safety.
type LivenessResult struct {
	// DeadlockedKeys are lock keys that, after the workload stopped, still
	// existed with no expiry on some node: no client can ever acquire them.
	DeadlockedKeys []string `json:"deadlocked_keys"`
	// StuckAfterMs is how long a key must stay unavailable outside faults
	// to be stuck (StuckAfter); Stuck lists the spans that were, and Keys
	// each key's longest unavailable span (liveness.go).
	StuckAfterMs float64           `json:"stuck_after_ms"`
	Stuck        []StuckKey        `json:"stuck,omitempty"`
	Keys         []KeyAvailability `json:"keys"`
	// Orphans are keys the end-of-run probe found held by nobody the
	// history knows (orphan in liveness.go).
	Orphans []string `json:"orphans,omitempty"`
	// Unfinished are spans the run's end cut short: nobody held the key
	// from during a fault (or within a lease after one) to the end of the
	// run while clients tried, for less than StuckAfterMs outside faults.
	// Whether the fault left the key stuck the run cannot tell: it ended
	// too soon after the fault. Faults lists the faults before the span.
	// The summary says so only when the key stayed free for a lease after
	// the faults healed; most runs end during or just after a fault.
	Unfinished []StuckKey `json:"unfinished,omitempty"`
	// Stalled are spans that were unavailable past StuckAfterMs outside
	// faults, but not once the time measured stalls of the harness cover
	// is taken out (StuckKey.StalledMs): the machine may have kept the key
	// from its clients. No evidence either way: neither stuck nor shown
	// available.
	Stalled []StuckKey `json:"stalled,omitempty"`
}

// FaultWindow is one fault, in ms since the run started.
type FaultWindow struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	// Action is what kind of thing it did ("" in older histories).
	Action  history.Action    `json:"action,omitempty"`
	Target  string            `json:"target"`
	Params  map[string]string `json:"params,omitempty"`
	Clients []int             `json:"clients,omitempty"`
	Stopped []int             `json:"stopped,omitempty"`
	Nodes   []int             `json:"nodes,omitempty"`
	// Step is the fault's place in its nemesis's schedule.
	Step    int     `json:"step,omitempty"`
	StartMs float64 `json:"start_ms"`
	// EndMs is null when the fault never healed within the history.
	EndMs *float64 `json:"end_ms"`
	// Aim is the hold the fault was aimed at; nil for none.
	Aim *AimedHold `json:"aim,omitempty"`
	// Landed: the fault hit a live lease the way it is meant to (a pause
	// past the lease, a node that forgot a lease while its holder still
	// worked, a link slow past the lease; each nemesis says). A fault that
	// did not land is no evidence about the lock either way.
	Landed bool `json:"landed"`
	// Lease is what became of the lease it hit: lost, kept or unknown; ""
	// when it did not land or hit no particular lease.
	Lease string `json:"lease,omitempty"`
	// LeftInTime: the lease was lost, but its holder had left its critical
	// section (its lock told it the lease was lost, or it released, or it
	// died) before the lease could have run out on the lock's nodes, so no
	// second client could have acquired the key under it: the race the fault
	// opened was settled by the lock, and a safe run is evidence
	// (Result.RaceNotRun). The history can tell only of a lease it knows the
	// length of (not one kept alive) and a fault that leaves the nodes'
	// memory and clocks alone (not a crash, a failover or a clock fault,
	// which can end the lease early).
	LeftInTime bool `json:"left_in_time,omitempty"`
	// Effect says in words what the fault did.
	Effect string `json:"effect,omitempty"`
	// Overdone says what the machine added to the fault, or "" (the
	// nemesis's history.Effect.Overdone).
	Overdone string `json:"overdone,omitempty"`
}

// AimedHold is the hold a fault was aimed at.
type AimedHold struct {
	Client  int     `json:"client"`
	Key     string  `json:"key"`
	SinceMs float64 `json:"since_ms"`
}

// StallOnly says whether every overlap the run found was a stall of the
// harness (and there was at least one).
func (r Result) StallOnly() bool {
	return r.Mutex.OverlapCount > 0 && r.Evidence.Overlaps[CauseStall] == r.Mutex.OverlapCount
}

// Overdone says, of a run whose every overlap came from a stall of the
// harness or from faults the machine overdid (FaultWindow.Overdone: a
// starved client held off the CPU longer than the fault held it), that
// it is no evidence about the lock under its faults as asked, in the
// words of the first such fault; "" when some overlap had another cause,
// or there were none.
func (r Result) Overdone() string {
	overdone := map[int]string{}
	for _, f := range r.Faults {
		if f.Overdone != "" {
			overdone[f.ID] = f.Overdone
		}
	}
	why := ""
	for _, o := range r.Mutex.Overlaps {
		switch o.Cause {
		case CauseStall:
			continue
		case CauseFault:
			for _, id := range o.Faults {
				if overdone[id] == "" {
					return ""
				}
				if why == "" {
					why = overdone[id]
				}
			}
		default:
			return ""
		}
	}
	if why == "" || len(r.Mutex.Overlaps) < r.Mutex.OverlapCount {
		return ""
	}
	return why
}

// NoEvidence says why the run is no evidence about the lock either way, or
// "" when it is: every overlap it found was a stall of the harness (or a
// fault the machine overdid), it had faults and none of them landed, or it
// had none and no key passed between clients (Uncontended). Such a run says something about the
// machine, not the lock; a matrix (and a test) runs it again.
func (r Result) NoEvidence() string {
	switch {
	case r.Uncontended():
		return "no key ever passed from one client to another"
	case r.StallOnly():
		return "every overlap came from a stall of the harness"
	case r.Overdone() != "":
		return "every overlap came from a fault the machine overdid: " + r.Overdone()
	case len(r.Nemesis) > 0 && r.Evidence.Landed == 0:
		return fmt.Sprintf("none of the %d faults landed", r.Evidence.Faults)
	}
	return r.RaceNotRun()
}

// Uncontended says of a run without faults, of two clients or more, that
// no key ever passed from one client to another and none got stuck:
// nothing was excluded, so it is no evidence either way (decide).
func (r Result) Uncontended() bool {
	return r.Mutex.Holds > 0 && r.Mutex.KeyHolders < 2 && r.Settings != nil && r.Settings.Clients > 1 &&
		len(r.Settings.Nemesis) == 0 && len(r.Faults) == 0 && len(r.Liveness.Stuck) == 0
}

// RaceNotRun says, of a safe run in which a fault took a live lease away
// but no other client acquired the key before its holder was let go, that
// the race the fault opened was not run to its end: the lock lost the lease
// all the same, so "safe" is no evidence that it protects one. A lease
// whose holder left before it could have run out (FaultWindow.LeftInTime:
// a Redlock whose validity ran out told its holder) opened no race: the
// lock settled it. "" otherwise.
func (r Result) RaceNotRun() string {
	open := r.Evidence.LeasesLost - r.Evidence.LeasesLostLeftInTime
	if r.Verdict != Safe || open <= 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d faults took a live lease away, but no other client acquired the key before its holder moved on", open, r.Evidence.Faults)
}

// ResultSchema is the version of result.json's layout (Result.Schema).
// 2 added the run's settings, incidents, lease ends and the reproduction.
//
// 3 added errors, evidence.missed, mutex.past_lease and stalls.worst_node,
// and renamed evidence.fault_overlaps to evidence.landed_fault_overlaps; a
// run that asked for faults and in which none landed became inconclusive.
//
// 4 added faults[].left_in_time and evidence.leases_lost_left_in_time: a
// lease lost after its holder left opened no race (Result.RaceNotRun);
// later, within 4, fields omitted when empty: mutex.overlaps[].stall's
// lease_lived, liveness.stalled and the stuck spans' stalled_ms; and
// mutex.overlaps[].late_release and mutex.key_holders (2026-11-30).
const ResultSchema = 4

// Reproduce is how to make the run again: written into result.json by the
// runner that made it (nil when a history was only checked).
type Reproduce struct {
	// Version is the version of lockchaos that made the run.
	Version string `json:"version"`
	// Command is the one command line that runs it again, the fault
	// schedule it executed included.
	Command string `json:"command"`
	// Config and Schedule are the run's whole configuration (config.json)
	// and the fault schedule it executed (schedule.json).
	Config   json.RawMessage `json:"config,omitempty"`
	Schedule json.RawMessage `json:"schedule,omitempty"`
}
