// Package audit gives one lock's whole safety record: every fault of the
// grid that applies to the lock, over several seeds (a comparison,
// package compare), beside reference locks of the same store; for every
// fault that broke it, a minimal witness (package shrink); for every fault
// it survived, how often the fault landed and what it cost in
// availability. A lock's claims (the faults it says it survives) turn the
// audit into a test a library's CI can run. It is what `lockchaos audit`
// does; compare's result.json summaries and shrink's reports are its only
// input, so every figure comes from recorded histories.
package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/grid"
	"github.com/lockchaos/lockchaos/internal/lockargs"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/internal/words"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/shrink"
)

// Spec is an audit as asked: saved in audit.json.
type Spec struct {
	Lock string `json:"lock"`
	// Refs are the reference locks run beside it (the yardstick).
	Refs    []string `json:"refs"`
	Nemeses []string `json:"nemeses"`
	// Claims are the faults the lock claims to survive: the audit fails
	// when one of them broke it, or when none of its seeds was evidence.
	Claims    []string `json:"claims"`
	Seeds     int      `json:"seeds"`
	FirstSeed int64    `json:"first_seed"`
	MinSeeds  int      `json:"min_seeds"`
	Parallel  int      `json:"parallel"`
	// Budget bounds the whole audit (0: none); ShrinkBudget each shrink.
	Budget       time.Duration `json:"budget_ns"`
	ShrinkBudget time.Duration `json:"shrink_budget_ns"`
	ShrinkTries  int           `json:"shrink_tries"`
	// Options are --opt's, by owner (the lock's or a nemesis's name).
	Options map[string]map[string]string `json:"options,omitempty"`
}

// Defaults of the options.
const (
	DefaultSeeds        = 5
	DefaultShrinkBudget = time.Minute
	DefaultShrinkTries  = 2
	// CompareShare is the part of a --budget the runs get; the shrinks
	// share the rest.
	CompareShare = 0.7
	// ClaimSeeds is the evidence a claim needs to be verified: seeds of
	// its fault that were evidence, and safe. Fewer leave an interval too
	// wide to say anything (held 0/1: [0 %, 79 %]).
	ClaimSeeds = 3
)

// References are the reference locks of lock's store
// (cluster.Store.References), without lock itself.
func References(lock locks.Spec) []string {
	s, err := cluster.LookupStore(lock.Store)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range s.References {
		if r != lock.Name {
			out = append(out, r)
		}
	}
	return out
}

// Status of a fault class for the audited lock (Class.Status).
const (
	Broken     = "broken"      // at least one seed violated
	Held       = "held"        // every seed that was evidence was safe, and some were
	NoEvidence = "no evidence" // no seed was evidence either way
	NotRun     = "not run"     // the budget or an interrupt left it out
	NA         = "n/a"         // the fault does not apply to the lock
	Error      = "error"       // the cell could not be set up
)

// Class is one fault (a nemesis, or none) and what it did to the lock.
type Class struct {
	Nemesis string `json:"nemesis"`
	Status  string `json:"status"`
	Why     string `json:"why,omitempty"`
	Claimed bool   `json:"claimed"`
	// Seeds ran, of which Violations violated and Safe were safe;
	// Detection is Violations/(Violations+Safe) with its 95 % Wilson
	// interval (nil without evidence).
	Seeds      int      `json:"seeds"`
	Violations int      `json:"violations"`
	Safe       int      `json:"safe"`
	Detection  *float64 `json:"detection,omitempty"`
	CILow      *float64 `json:"ci_low,omitempty"`
	CIHigh     *float64 `json:"ci_high,omitempty"`
	// TTFVMedianTTL: median time from the fault to the first overlap, in
	// TTLs, over the violating seeds.
	TTFVMedianTTL *float64 `json:"ttfv_median_ttl,omitempty"`
	LostUpdates   int      `json:"lost_updates"`
	// FaultsLanded counts the faults that landed over every seed (a fault
	// that did not land says nothing).
	FaultsLanded int `json:"faults_landed"`
	// Availability: the share of acquires granted while a fault was
	// active, and outside faults (nil without any such acquire).
	GrantedDuring  *float64 `json:"granted_during,omitempty"`
	GrantedOutside *float64 `json:"granted_outside,omitempty"`
	// Fencing (broken classes) says whether a fenced lock's resource
	// stayed intact under the same fault (the reference FencedBy, in every seed that ran):
	// "saved" (fencing would have kept the data), "damaged" (not even
	// fencing did), "" (no fenced reference ran this fault).
	Fencing  string `json:"fencing,omitempty"`
	FencedBy string `json:"fenced_by,omitempty"`
	// Expected is the verdict expected of the lock under this fault: the
	// catalogue's (scenarios/grid.yaml), or for a lock outside it its
	// manifest's claims (Audit.ExpectFrom); "" where there is none.
	Expected string `json:"expected,omitempty"`
	// Witness is the shrunk violation (broken classes).
	Witness *Witness `json:"witness,omitempty"`
	// Cell is the comparison's folder of this class's runs.
	Cell string `json:"cell"`
	// Refs are the reference locks under the same fault.
	Refs []Ref `json:"refs"`
}

// Ref is a reference lock's figures under one fault.
type Ref struct {
	Lock       string   `json:"lock"`
	Status     string   `json:"status"`
	Seeds      int      `json:"seeds"`
	Violations int      `json:"violations"`
	Safe       int      `json:"safe"`
	Detection  *float64 `json:"detection,omitempty"`
	// Fenced: the lock gives out fencing tokens. Resource: every seed's
	// resource intact or fenced ("intact"), some damaged ("damaged"), or
	// unknown ("").
	Fenced        bool     `json:"fenced"`
	Resource      string   `json:"resource,omitempty"`
	GrantedDuring *float64 `json:"granted_during,omitempty"`
}

// Witness is the minimal violation of a broken class.
type Witness struct {
	// Run is the violating run that was shrunk (relative to the audit's
	// folder); Dir the shrink's folder.
	Run string `json:"run"`
	Dir string `json:"dir"`
	// Shrunk says whether a minimal scenario was written; Why, if not.
	Shrunk   bool   `json:"shrunk"`
	Why      string `json:"why,omitempty"`
	Minimal  string `json:"minimal,omitempty"` // e.g. "1 fault, 2 clients, 1 key, hold 50ms, 2.1s"
	Scenario string `json:"scenario,omitempty"`
	Story    string `json:"story,omitempty"`
	Report   string `json:"report,omitempty"`
	// Verified counts the re-runs of the minimal scenario that violated.
	Verified string `json:"verified,omitempty"`
	// Command reproduces it.
	Command string `json:"command"`
}

// Audit is what audit.json holds.
type Audit struct {
	Schema      int     `json:"schema"`
	Version     string  `json:"version"`
	Started     string  `json:"started"`
	Seconds     float64 `json:"seconds"`
	Interrupted bool    `json:"interrupted"`
	Spec        Spec    `json:"spec"`
	Description string  `json:"description"`
	Store       string  `json:"store"`
	Classes     []Class `json:"classes"`
	// LeftOut says what the budget left out.
	LeftOut []string `json:"left_out,omitempty"`
	// ExpectFrom says where Class.Expected comes from: "catalogue",
	// "claims" (the lock's manifest, for a lock outside the catalogue), or
	// "" (none).
	ExpectFrom string `json:"expect_from,omitempty"`
	// ClaimsBroken and ClaimsUnverified name the claims that failed: a
	// claim is unverified when fewer than ClaimSeeds of its seeds were
	// evidence.
	ClaimsBroken     []string `json:"claims_broken"`
	ClaimsUnverified []string `json:"claims_unverified"`
	// Command repeats the audit from its folder.
	Command string `json:"command"`
	// Shard, when set, says the audit holds only shard Index of Count of
	// its runs (audit --shard I/N; compare.json has the plan): its claims
	// are judged on its share, and lockchaos merge joins the shards into
	// the whole audit (Merge).
	Shard *scenarios.Shard `json:"shard,omitempty"`
}

// Schema is the version of audit.json's layout.
const Schema = 1

// Validate says what is wrong with spec, naming the flag to fix; claims
// must name faults of the audit that apply to the lock (na lists those
// that do not, with why).
func (s Spec) Validate() error {
	var errs []string
	if _, err := locks.Lookup(s.Lock); err != nil {
		errs = append(errs, "--lock: "+err.Error())
	}
	if s.Seeds < 1 {
		errs = append(errs, fmt.Sprintf("--seeds %d: want at least 1", s.Seeds))
	} else if len(s.Claims) > 0 && s.Seeds < ClaimSeeds {
		errs = append(errs, fmt.Sprintf("--seeds %d: a claim is verified on at least %d seeds of evidence (%s): give --seeds %d or more", s.Seeds, ClaimSeeds, strings.Join(s.Claims, ","), ClaimSeeds))
	}
	if s.ShrinkBudget <= 0 {
		errs = append(errs, fmt.Sprintf("--shrink-budget %v: want a positive duration such as 1m", s.ShrinkBudget))
	}
	if s.Budget < 0 {
		errs = append(errs, fmt.Sprintf("--budget %v: want a positive duration such as 15m, or 0 for none", s.Budget))
	}
	for _, c := range s.Claims {
		if !slices.Contains(s.Nemeses, c) {
			errs = append(errs, fmt.Sprintf("--claims %s: not among the faults audited (%s)", c, strings.Join(s.Nemeses, ",")))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Options tune Run: the comparison's (its folder is the audit's: the runs,
// compare.json and index.html, the witnesses and the audit's own files),
// and the catalogue's expectations.
type Options struct {
	compare.Options
	// Expect is the expectation of each fault for the lock, shown beside
	// what the audit found, and ExpectFrom where it comes from
	// (scenarios.Grid.ExpectOf).
	Expect     map[string]checker.Verdict
	ExpectFrom string
}

// Compare is the comparison an audit runs: the lock and its references
// against its faults, stopping a cell that broke once MinSeeds ran.
func (s Spec) Compare() compare.Spec {
	return compare.Spec{Locks: append([]string{s.Lock}, s.Refs...), Nemeses: s.Nemeses, Seeds: s.Seeds,
		FirstSeed: s.FirstSeed, EarlyStop: true, MinSeeds: s.MinSeeds, Parallel: s.Parallel, Options: s.Options}
}

// Run runs the planned cells (compare.Plan of the lock and its references
// against the nemeses), shrinks a violating run of every fault that broke
// the lock, and sums it all up.
func Run(ctx context.Context, spec Spec, cells []compare.Cell, o Options) (Audit, compare.Comparison) {
	start := time.Now()
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	cspec := spec.Compare()
	runCtx, cancel := ctx, func() {}
	if spec.Budget > 0 {
		runCtx, cancel = context.WithDeadline(ctx, start.Add(time.Duration(float64(spec.Budget)*CompareShare)))
	}
	fmt.Fprintf(progress, "audit %s: %s × %s (the lock and its references), up to %s each\n",
		spec.Lock, words.Count(len(spec.Nemeses), "fault", "faults"), words.Count(len(cspec.Locks), "lock", "locks"), words.Count(spec.Seeds, "seed", "seeds"))
	co := o.Options
	co.Progress = progress
	cmp := compare.Execute(runCtx, cspec, cells, co)
	outOfTime := errors.Is(runCtx.Err(), context.DeadlineExceeded)
	cancel()
	a := Summarize(spec, cmp, o.Expect)
	a.ExpectFrom = o.ExpectFrom
	if o.Expect == nil {
		a.ExpectFrom = ""
	}
	a.Started = start.Format(time.RFC3339)
	if ctx.Err() == nil && outOfTime {
		if short := seedsRun(cmp); short != "" {
			a.LeftOut = append(a.LeftOut, fmt.Sprintf("the runs reached %.0f%% of the --budget %v and stopped: %s", 100*CompareShare, spec.Budget, short))
		}
	}
	cmp.Interrupted = ctx.Err() != nil
	a.Interrupted = ctx.Err() != nil

	// Shrink one violating run of each broken class, Parallel at a time.
	var broken []int
	for i, c := range a.Classes {
		if c.Status == Broken {
			broken = append(broken, i)
		}
	}
	// A shrink runs the lock's runs one after another: it weighs what one
	// of them does (settings.Run.Weight).
	weight := 1
	for _, c := range cells {
		if c.Lock == spec.Lock {
			weight = c.Config.Weight()
			break
		}
	}
	shrinkBudget := spec.ShrinkBudget
	if spec.Budget > 0 && len(broken) > 0 {
		left := time.Until(start.Add(spec.Budget))
		at := max(spec.Parallel/weight, 1)
		waves := (len(broken) + at - 1) / at
		if per := left / time.Duration(waves); per < shrinkBudget {
			shrinkBudget = max(per, 0)
			a.LeftOut = append(a.LeftOut, fmt.Sprintf("each shrink had %v of its %v (the --budget's rest): a witness may be less than minimal", shrinkBudget.Round(time.Second), spec.ShrinkBudget))
		}
	}
	next := 0
	grid.Pool(ctx, spec.Parallel, func() (int, int, bool) {
		if next >= len(broken) || shrinkBudget <= 0 {
			return 0, 0, false
		}
		next++
		return broken[next-1], weight, true
	}, func(i int) {
		c := &a.Classes[i]
		c.Witness = witness(ctx, c, cmp, spec, shrinkBudget, o, progress)
	})
	for _, i := range broken {
		if a.Classes[i].Witness == nil {
			a.Classes[i].Witness = &Witness{Run: firstViolation(cmp, spec.Lock, a.Classes[i].Nemesis), Why: "not shrunk: the budget ran out or the audit was interrupted"}
			a.Classes[i].Witness.Command = replay(a.Classes[i].Witness.Run, spec, o.Out)
		}
	}
	a.Interrupted = ctx.Err() != nil
	a.Seconds = time.Since(start).Seconds()
	return a, cmp
}

// seedsRun says how far the cells the budget cut short got, naming them;
// "" when none was cut short (every cell ran its seeds, or stopped early
// on a violation).
func seedsRun(cmp compare.Comparison) string {
	var short []string
	for _, r := range cmp.Rows {
		if r.Status != compare.StatusRan || r.StoppedEarly || r.Seeds >= cmp.Spec.Seeds {
			continue
		}
		short = append(short, fmt.Sprintf("%s under %s ran %d of %s", r.Lock, r.Nemesis, r.Seeds, words.Count(cmp.Spec.Seeds, "seed", "seeds")))
	}
	return strings.Join(short, "; ")
}

// replay is the command that runs the violating run in dir (relative to
// the audit's folder out) again, fault for fault, from that folder (when
// no minimal scenario was written).
func replay(dir string, spec Spec, out string) string {
	return rundir.ReplayCommand(rundir.PortableProgram(), dir) + lockargs.FileArgs(out, spec.Lock)
}

// firstViolation is the folder (relative to the audit's) of the lowest
// violating seed of lock under nemesis.
func firstViolation(cmp compare.Comparison, lock, nemesis string) string {
	for _, r := range cmp.Rows {
		if r.Lock != lock || r.Nemesis != nemesis {
			continue
		}
		for _, x := range r.Runs {
			if x.Outcome == compare.OutcomeViolation {
				return x.Dir
			}
		}
	}
	return ""
}

// witness shrinks the first violating run of class c.
func witness(ctx context.Context, c *Class, cmp compare.Comparison, spec Spec, budget time.Duration, o Options, progress io.Writer) *Witness {
	w := &Witness{Run: firstViolation(cmp, spec.Lock, c.Nemesis), Dir: filepath.ToSlash(filepath.Join(rundir.AuditWitnessDir, scenarios.FaultDir(c.Nemesis)))}
	src := filepath.Join(o.Out, w.Run)
	w.Command = replay(w.Run, spec, o.Out)
	fmt.Fprintf(progress, "audit %s: shrinking the violation under %s (%s, budget %v)\n", spec.Lock, c.Nemesis, w.Run, budget.Round(time.Second))
	rep, err := shrink.Shrink(ctx, src, shrink.Options{Out: filepath.Join(o.Out, w.Dir), Force: o.Force, Tries: spec.ShrinkTries,
		Budget: budget, AfterRun: o.AfterRun, Run: o.Run})
	switch {
	case errors.Is(err, shrink.ErrNotReproduced):
		w.Why = fmt.Sprintf("the violation did not happen again in %d tries of the same seed and faults (a rare interleaving): its run is the witness", spec.ShrinkTries)
		return w
	case err != nil:
		w.Why = "shrink: " + err.Error()
		return w
	}
	w.Shrunk = true
	w.Minimal = rep.Minimal.String()
	w.Scenario = filepath.ToSlash(filepath.Join(w.Dir, rep.Scenario))
	w.Story = filepath.ToSlash(filepath.Join(w.Dir, rundir.ShrinkWitnessFile))
	w.Report = filepath.ToSlash(filepath.Join(w.Dir, rundir.ShrinkMinimalDir, rundir.ReportFile))
	if rep.Verify != nil {
		w.Verified = fmt.Sprintf("%d of %d", rep.Verify.Violated, rep.Verify.Runs)
	}
	if rep.Stopped != "" {
		w.Why = "the search stopped early (" + rep.Stopped + "): the smallest found so far"
	}
	w.Command = rundir.PortableProgram() + " run" + lockargs.FileArgs(o.Out, spec.Lock) + " --scenario " + shellwords.Quote(w.Scenario)
	fmt.Fprintf(progress, "audit %s: %s: minimal %s\n", spec.Lock, c.Nemesis, w.Minimal)
	return w
}

// Summarize sums the comparison up per fault class of the audited lock,
// with its references beside it, and checks the claims; expect is the
// catalogue's expectation of each fault for the lock (nil for none).
func Summarize(spec Spec, cmp compare.Comparison, expect map[string]checker.Verdict) Audit {
	l, _ := locks.Lookup(spec.Lock)
	a := Audit{Schema: Schema, Version: rundir.Version(), Spec: spec, Description: l.Description, Store: l.Store,
		ClaimsBroken: []string{}, ClaimsUnverified: []string{}}
	rows := map[[2]string]compare.Row{}
	for _, r := range cmp.Rows {
		rows[[2]string{r.Lock, r.Nemesis}] = r
	}
	for _, n := range spec.Nemeses {
		r, ok := rows[[2]string{spec.Lock, n}]
		if !ok {
			continue
		}
		c := classOf(r)
		c.Claimed = slices.Contains(spec.Claims, n)
		c.Expected = string(expect[n])
		for _, ref := range spec.Refs {
			rr, ok := rows[[2]string{ref, n}]
			if !ok {
				continue
			}
			x := refOf(rr)
			c.Refs = append(c.Refs, x)
			if c.Status == Broken && c.Fencing == "" && x.Fenced && rr.Status == compare.StatusRan && x.Resource != "" {
				c.FencedBy = ref
				c.Fencing = map[string]string{"intact": "saved", "damaged": "damaged"}[x.Resource]
			}
		}
		if c.Claimed {
			switch {
			case c.Status == Broken:
				a.ClaimsBroken = append(a.ClaimsBroken, n)
			case c.Status != Held || c.Safe < ClaimSeeds:
				a.ClaimsUnverified = append(a.ClaimsUnverified, n)
			}
		}
		a.Classes = append(a.Classes, c)
	}
	return a
}

// fencedLock says whether the lock gives out fencing tokens.
func fencedLock(name string) bool {
	l, err := locks.Lookup(name)
	return err == nil && strings.Contains(strings.ToLower(l.Description), "fencing token")
}

// classOf sums up the audited lock's row under one fault.
func classOf(r compare.Row) Class {
	c := Class{Nemesis: r.Nemesis, Why: r.Why, Cell: r.Dir, Seeds: r.Seeds, Violations: r.Violations, Safe: r.Safe,
		Detection: r.DetectionRate, CILow: r.CILow, CIHigh: r.CIHigh, TTFVMedianTTL: r.TTFVMedianTTL, LostUpdates: r.LostUpdatesTotal, Refs: []Ref{}}
	switch {
	case r.Status == compare.SkipNA:
		c.Status = NA
	case r.Status == compare.SkipError:
		c.Status = Error
	case r.Status == compare.SkipMissing:
		c.Status = NotRun // Why: its shard was missing from the merge
	case r.Seeds == 0:
		c.Status, c.Why = NotRun, "no seed ran (the budget, or an interrupt)"
	case r.Violations > 0:
		c.Status = Broken
	case r.Safe > 0:
		c.Status = Held
	default:
		c.Status = NoEvidence
		if len(r.Runs) > 0 {
			c.Why = r.Runs[0].Why
		}
	}
	var during, duringOK, outside, outsideOK int
	for _, x := range r.Runs {
		c.FaultsLanded += x.Landed
		during, duringOK = during+x.FaultAcquires, duringOK+x.FaultAcquiresOK
		outside, outsideOK = outside+x.Acquires-x.FaultAcquires, outsideOK+x.AcquiresOK-x.FaultAcquiresOK
	}
	c.GrantedDuring, c.GrantedOutside = share(duringOK, during), share(outsideOK, outside)
	return c
}

// refOf sums up a reference lock's row under one fault.
func refOf(r compare.Row) Ref {
	c := classOf(r)
	x := Ref{Lock: r.Lock, Status: c.Status, Fenced: fencedLock(r.Lock), Seeds: r.Seeds, Violations: r.Violations, Safe: r.Safe, Detection: r.DetectionRate, GrantedDuring: c.GrantedDuring}
	damaged, known := 0, 0
	for _, run := range r.Runs {
		switch run.Resource {
		case checker.ResourceDamaged:
			damaged++
			known++
		case checker.ResourceIntact, checker.ResourceFenced:
			known++
		}
	}
	switch {
	case damaged > 0:
		x.Resource = "damaged"
	case known > 0:
		x.Resource = "intact"
	}
	return x
}

func share(a, b int) *float64 {
	if b == 0 {
		return nil
	}
	v := float64(a) / float64(b)
	return &v
}

// Nemeses are the faults an audit runs by default: the grid's columns
// (none first), each with the grid's settings, then the faults' main
// variants (Variants). A variant that does not apply to the lock is n/a,
// as a column is.
func Nemeses(lock locks.Spec) []string {
	_, n := scenarios.GridAxes()
	n = append(n, variants...)
	if lock.Quorum {
		n = append(n, quorumVariants...)
	}
	return n
}

// variants are the faults' main variants beside the grid's columns (whose
// settings they keep but for the options named): a pause while the
// acquire's answer is on its way, a restart with AOF fsynced on every
// write and a restart delayed past the TTL (antirez's two answers to a
// node that forgets), a failover that cuts only the replica it promotes
// or none, a partition that isolates the holder instead of a node.
var variants = []string{
	"pause-client:phase=acquire",
	"crash-restart:persistence=always",
	"crash-restart:delay=1.5ttl",
	"failover:cut=promoted",
	"failover:cut=none",
	"partition:shape=client",
}

// quorumVariants hit a hold with a bare majority, where the grid's columns
// hit one with a vote to spare: one node forgetting breaks the former.
var quorumVariants = []string{
	"crash-restart:votes=bare",
	"clock-jump:votes=bare",
	"failover:votes=bare",
}
