package compare

import (
	"math"
	"slices"

	"github.com/lockchaos/lockchaos/checker"
)

// Outcomes of one seed (Run.Outcome).
const (
	// OutcomeViolation: two clients held the lock at once, or the resource
	// shows the damage, and not only because the harness stalled.
	OutcomeViolation = "violation"
	// OutcomeSafe: the whole history was checked, no overlap, and the
	// faults landed (a run without faults needs none).
	OutcomeSafe = "safe"
	// OutcomeNoEvidence: the checker could not decide, the faults never
	// landed, a stall of the harness made every overlap, or a fault took
	// a lease away and no other client came for it: the run says nothing
	// about the lock either way, even after MaxAttempts.
	OutcomeNoEvidence = "no-evidence"
	// OutcomeError: the run could not be set up or recorded.
	OutcomeError = "error"
)

// Run is one seed of a cell, as its last attempt ended.
type Run struct {
	Seed int64 `json:"seed"`
	// Dir is its folder, relative to the comparison's.
	Dir      string `json:"dir"`
	Attempts int    `json:"attempts"`
	// Retried says why each earlier attempt was no evidence and was run
	// again (the same seed, so the same fault decisions).
	Retried []string `json:"retried,omitempty"`
	Outcome string   `json:"outcome"`
	// Why says why it is no evidence, or the error.
	Why     string          `json:"why,omitempty"`
	Verdict checker.Verdict `json:"verdict,omitempty"`
	Faults  int             `json:"faults"`
	Landed  int             `json:"landed"`
	// FaultOverlaps counts the overlaps a fault that landed caused
	// (checker's evidence.landed_fault_overlaps).
	FaultOverlaps int `json:"fault_overlaps"`
	// TTFVTTL is the time from the fault's start (or the run's, for an
	// overlap no fault caused) to the first overlap, in TTLs.
	TTFVTTL *float64 `json:"ttfv_ttl,omitempty"`
	// Acquires and AcquiresOK count every acquire; FaultAcquires and
	// FaultAcquiresOK those invoked while a fault was active.
	Acquires        int     `json:"acquires"`
	AcquiresOK      int     `json:"acquires_ok"`
	FaultAcquires   int     `json:"fault_acquires"`
	FaultAcquiresOK int     `json:"fault_acquires_ok"`
	AcquireP50ms    float64 `json:"acquire_p50_ms"`
	AcquireP99ms    float64 `json:"acquire_p99_ms"`
	Holds           int     `json:"holds"`
	WorkloadS       float64 `json:"workload_s"`
	LostUpdates     int     `json:"lost_updates"`
	StaleAccepted   int     `json:"stale_accepted"`
	// Resource is what the protected resource showed (damaged, intact,
	// fenced or unknown).
	Resource checker.ResourceState `json:"resource,omitempty"`
}

// runOf sums up one run's result; ttl is its TTL.
func runOf(res checker.Result, err error, ttlMs float64) Run {
	r := Run{Verdict: res.Verdict}
	switch {
	case err != nil:
		r.Outcome, r.Why = OutcomeError, err.Error()
		return r
	case res.Verdict == checker.Violation && !res.StallOnly():
		r.Outcome = OutcomeViolation
	case res.Verdict == checker.Inconclusive:
		r.Outcome, r.Why = OutcomeNoEvidence, res.Summary
	case res.NoEvidence() != "":
		r.Outcome, r.Why = OutcomeNoEvidence, res.NoEvidence()
	default:
		r.Outcome = OutcomeSafe
	}
	r.Faults, r.Landed, r.FaultOverlaps = res.Evidence.Faults, res.Evidence.Landed, res.Evidence.LandedFaultOverlaps
	if r.Outcome == OutcomeViolation && res.FirstViolationMs != nil && ttlMs > 0 {
		t := *res.FirstViolationMs / ttlMs
		r.TTFVTTL = &t
	}
	r.Acquires, r.AcquiresOK = res.Acquire.Attempted, res.Acquire.OK
	r.FaultAcquires, r.FaultAcquiresOK = res.Acquire.DuringFaults.Attempted, res.Acquire.DuringFaults.OK
	r.AcquireP50ms, r.AcquireP99ms = res.Acquire.P50ms, res.Acquire.P99ms
	r.Holds = res.Mutex.Holds
	r.WorkloadS = res.WorkloadMs / 1e3
	r.LostUpdates, r.StaleAccepted = res.Resource.LostUpdates, res.Resource.StaleAccepted
	r.Resource = res.Resource.State
	return r
}

// Row is one cell of the comparison, summed over its seeds: a line of
// compare.csv (the fields in CSVHeader) and of compare.json.
type Row struct {
	Lock    string `json:"lock"`
	Nemesis string `json:"nemesis"`
	// Status is ran, n/a (the fault does not apply) or error; Why says why
	// a cell did not run.
	Status string  `json:"status"`
	Why    string  `json:"why,omitempty"`
	TTLms  float64 `json:"ttl_ms"`
	HoldMs float64 `json:"hold_ms"`
	// SeedsPlanned is --seeds; Seeds those that ran (early stopping ends a
	// cell sooner); StoppedEarly says it did.
	SeedsPlanned int  `json:"seeds_planned"`
	Seeds        int  `json:"seeds"`
	StoppedEarly bool `json:"stopped_early"`
	// Violations and Safe count the seeds by outcome; Inconclusive, the
	// seeds that were no evidence either way (or could not run). Detection
	// rate is Violations / (Violations + Safe), with its 95 % Wilson
	// interval; nil when no seed was evidence.
	Violations    int      `json:"violations"`
	Safe          int      `json:"safe"`
	Inconclusive  int      `json:"inconclusive"`
	DetectionRate *float64 `json:"detection_rate"`
	CILow         *float64 `json:"ci_low"`
	CIHigh        *float64 `json:"ci_high"`
	// FaultsLanded counts the seeds in which at least one fault landed
	// (nil for the column without faults).
	FaultsLanded *int `json:"faults_landed"`
	// TTFV: time from the fault's start to the first overlap, in TTLs,
	// over the violating seeds (nil without any).
	TTFVMedianTTL *float64  `json:"ttfv_median_ttl"`
	TTFVP90TTL    *float64  `json:"ttfv_p90_ttl"`
	TTFV          []float64 `json:"ttfv_ttl"`
	// AcquireOKRate is acquires that returned the lock over all acquires,
	// summed over the seeds; FaultAcquireOKRate the same for acquires made
	// while a fault was active (availability during faults).
	AcquireOKRate      *float64 `json:"acquire_ok_rate"`
	FaultAcquireOKRate *float64 `json:"fault_acquire_ok_rate"`
	// AcquireP50ms and AcquireP99ms are the medians over the seeds of each
	// run's own percentiles of successful acquires.
	AcquireP50ms       float64 `json:"acquire_p50_ms"`
	AcquireP99ms       float64 `json:"acquire_p99_ms"`
	HoldsPerS          float64 `json:"holds_per_s"`
	LostUpdatesTotal   int     `json:"lost_updates_total"`
	StaleAcceptedTotal int     `json:"stale_accepted_total"`
	// Dir is the cell's folder; Runs every seed that ran, in seed order.
	Dir  string `json:"dir"`
	Runs []Run  `json:"runs"`
}

// Status of a row that ran (Row.Status).
const StatusRan = "ran"

// rowOf sums up the runs of cell c.
func rowOf(c Cell, runs []Run, planned int, stopped bool) Row {
	r := Row{Lock: c.Lock, Nemesis: c.Nemesis, Status: StatusRan, SeedsPlanned: planned, StoppedEarly: stopped, Dir: c.Name(),
		TTLms: ms(c.Config.TTL.Seconds()), HoldMs: ms(c.Config.Hold.Seconds())}
	if c.Skip != "" {
		r.Status, r.Why = c.Skip, c.Why
		r.Runs = []Run{}
		r.TTFV = []float64{}
		return r
	}
	runs = slices.Clone(runs)
	slices.SortFunc(runs, func(a, b Run) int { return int(a.Seed - b.Seed) })
	r.Runs, r.Seeds = runs, len(runs)
	var acq, acqOK, facq, facqOK, holds int
	var secs float64
	var p50s, p99s []float64
	landed := 0
	r.TTFV = []float64{}
	for _, x := range runs {
		switch x.Outcome {
		case OutcomeViolation:
			r.Violations++
			if x.TTFVTTL != nil {
				r.TTFV = append(r.TTFV, *x.TTFVTTL)
			}
		case OutcomeSafe:
			r.Safe++
		default:
			r.Inconclusive++
		}
		if x.Landed > 0 {
			landed++
		}
		if x.Outcome == OutcomeError {
			continue
		}
		acq += x.Acquires
		acqOK += x.AcquiresOK
		facq += x.FaultAcquires
		facqOK += x.FaultAcquiresOK
		holds += x.Holds
		secs += x.WorkloadS
		if x.AcquiresOK > 0 {
			p50s, p99s = append(p50s, x.AcquireP50ms), append(p99s, x.AcquireP99ms)
		}
		r.LostUpdatesTotal += x.LostUpdates
		r.StaleAcceptedTotal += x.StaleAccepted
	}
	if len(c.Config.Nemeses) > 0 {
		r.FaultsLanded = &landed
	}
	if n := r.Violations + r.Safe; n > 0 {
		p := float64(r.Violations) / float64(n)
		lo, hi := Wilson(r.Violations, n)
		r.DetectionRate, r.CILow, r.CIHigh = &p, &lo, &hi
	}
	if len(r.TTFV) > 0 {
		s := slices.Clone(r.TTFV)
		slices.Sort(s)
		r.TTFVMedianTTL, r.TTFVP90TTL = ptr(Quantile(s, 0.5)), ptr(Quantile(s, 0.9))
	}
	r.AcquireOKRate, r.FaultAcquireOKRate = ratio(acqOK, acq), ratio(facqOK, facq)
	slices.Sort(p50s)
	slices.Sort(p99s)
	r.AcquireP50ms, r.AcquireP99ms = Quantile(p50s, 0.5), Quantile(p99s, 0.5)
	if secs > 0 {
		r.HoldsPerS = float64(holds) / secs
	}
	return r
}

// Wilson returns the 95 % Wilson score interval of k successes in n
// trials: unlike the normal approximation, it stays within [0, 1] and is
// honest at k = 0 and k = n with few trials.
func Wilson(k, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	nf := float64(n)
	p := float64(k) / nf
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	lo, hi = max(center-half, 0), min(center+half, 1)
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return lo, hi
}

// Quantile is the q-quantile of sorted, by linear interpolation between
// closest ranks; 0 for none.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

func ratio(a, b int) *float64 {
	if b == 0 {
		return nil
	}
	return ptr(float64(a) / float64(b))
}

func ptr[T any](v T) *T { return &v }

func ms(s float64) float64 { return s * 1e3 }
