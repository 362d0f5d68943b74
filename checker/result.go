package checker

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

	// FirstViolationMs is the time from the first fault's start (or from the
	// start of the run when there was no fault) to the start of the first
	// overlap; null when there was no overlap.
	FirstViolationMs *float64 `json:"first_violation_ms"`
	// Complete is false when the history was cut short or a worker died
	// unexpectedly.
	Complete bool `json:"complete"`
	// DurationMs is the span of the run covered by the history.
	DurationMs float64 `json:"duration_ms"`
}

// MutexResult is the mutual-exclusion check: porcupine and the interval sweep.
type MutexResult struct {
	// Ops is the number of operations given to porcupine (successful acquires
	// and hold ends: releases, losses, deaths).
	Ops int `json:"ops"`
	// Holds is the number of critical sections (outermost acquire to hold end).
	Holds int `json:"holds"`
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
	CheckMs      float64   `json:"check_ms"`
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
	// Faults are the IDs of the fault windows that were active at some point
	// between the start of the earlier hold and the end of the overlap: the
	// faults that can explain it.
	Faults []int `json:"faults"`
}

// HoldSpan is one client's critical section and how it ended.
type HoldSpan struct {
	Client  int     `json:"client"`
	StartMs float64 `json:"start_ms"`
	EndMs   float64 `json:"end_ms"`
	// End says what ended the hold: "release", "release-not-held" (the
	// release found the lease gone), "release-unknown", "lost" (the client
	// learned it lost the lock), "exit" (the process died), "open" (still held
	// when the history ends).
	End string `json:"end"`
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
	// Summary says in words what happened to the resource.
	Summary string `json:"summary"`
}

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
}

// ReleaseStats counts release operations.
type ReleaseStats struct {
	Attempted int     `json:"attempted"`
	OK        int     `json:"ok"`
	NotHeld   int     `json:"not_held"`
	Unknown   int     `json:"unknown"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
}

// LivenessResult reports progress failures, separate from safety.
type LivenessResult struct {
	// DeadlockedKeys are lock keys that, after the workload stopped, still
	// existed with no expiry on some node: no client can ever acquire them.
	DeadlockedKeys []string `json:"deadlocked_keys"`
}

// FaultWindow is one fault, in ms since the run started.
type FaultWindow struct {
	ID      int               `json:"id"`
	Name    string            `json:"name"`
	Target  string            `json:"target"`
	Params  map[string]string `json:"params,omitempty"`
	Clients []int             `json:"clients,omitempty"`
	StartMs float64           `json:"start_ms"`
	// EndMs is null when the fault never healed within the history.
	EndMs *float64 `json:"end_ms"`
}
