package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/grid"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/settings"
)

// Kind says where a cell of the matrix comes from.
type Kind string

const (
	KindCatalogue Kind = "catalogue"
	KindGrid      Kind = "grid"
	// KindAudit is a fault of `lockchaos audit`, KindRun one `lockchaos
	// run` (their JUnit suites).
	KindAudit Kind = "audit"
	KindRun   Kind = "run"
)

// NoFault is the grid's column without faults.
const NoFault = "none"

// Status is how a cell's outcome compares with its expectation.
type Status string

const (
	StatusMatch    Status = "match"    // the verdict is the expected one, for the right reason
	StatusMismatch Status = "mismatch" // it is not: the run fails
	// StatusInconclusive: the runs were no evidence either way (the
	// checker could not decide, the faults never landed, or a stall of the
	// harness made the overlap); fails unless inconclusive cells are allowed.
	StatusInconclusive Status = "inconclusive"
	StatusError        Status = "error"   // the run could not be set up or recorded
	StatusNA           Status = "n/a"     // the fault does not apply to this lock or topology
	StatusSkipped      Status = "skipped" // needs a lock, nemesis, option or field this build lacks
	StatusNotRun       Status = "not-run" // the matrix was interrupted before its turn
)

// Fails says whether a cell with this status makes `lockchaos chaos` fail.
func (s Status) Fails(allowInconclusive bool) bool {
	switch s {
	case StatusMismatch, StatusError, StatusNotRun:
		return true
	case StatusInconclusive:
		return !allowInconclusive
	}
	return false
}

// Cell is one run of the matrix: a catalogue scenario, or one lock against
// one fault of the grid.
type Cell struct {
	// Name is the scenario's name, or LOCK+NEMESIS for a grid cell; it is
	// also the folder of the run.
	Name string
	Kind Kind
	Lock string
	// Nemesis is the grid column (NoFault for none); for a catalogue
	// scenario, its nemeses joined by commas.
	Nemesis string
	Shows   string
	Source  string
	File    string
	// Expect is what the run must show.
	Expect Expectation
	// Seeds is how many seeds the cell may run, from Config.Seed on: a
	// violation expected of it must show in at least one, safe in every one.
	Seeds  int
	Config settings.Run
	// Skip, when set (StatusNA, StatusSkipped, StatusError), says the cell
	// does not run; Why says why, and Reason, for a skipped cell, what it
	// lacks.
	Skip   Status
	Why    string
	Reason SkipReason
	// Asked says the cell was asked for by name (--scenarios NAME, or a
	// scenario file named as such), not only by a glob or the whole matrix:
	// skipping it hides something the user asked for.
	Asked bool
}

// SkipReason says why a cell was skipped.
type SkipReason string

const (
	// SkipMissingFeature: the cell needs a lock, nemesis or option this
	// build lacks.
	SkipMissingFeature SkipReason = "missing-feature"
	// SkipMissingFile: a file the cell names (a lua lock's script) is not
	// there, usually because the matrix runs from outside the repository.
	SkipMissingFile SkipReason = "missing-file"
	// SkipMissingToolchain: the cell's lock is an adapter whose language's
	// toolchain is missing here, or which is not built (make adapters).
	// The matrix is then incomplete: it never says PASSED as if it ran.
	SkipMissingToolchain SkipReason = "missing-toolchain"
	// SkipNoExpectation: a grid cell with no expectation in grid.yaml (a
	// lock registered from outside).
	SkipNoExpectation SkipReason = "no-expectation"
)

// GridName is the name of the grid cell lock × nem.
func GridName(lock, nem string) string { return lock + "+" + nem }

// PlanOptions choose the cells of a matrix.
type PlanOptions struct {
	// Quick runs each scenario's short version and leaves out those marked
	// quick: skip.
	Quick bool
	// Catalogue are the scenarios to run; nil means the built-in ones.
	Catalogue []Scenario
	// Grid, when not nil, adds every registered lock against every
	// registered nemesis and none.
	Grid *Grid
	// Filter keeps only cells whose name matches one of its comma-separated
	// globs (path.Match); "" keeps all.
	Filter string
	// Backend and Image, when set, run every cell there (--backend docker).
	Backend, Image string
	// Named says Catalogue was named file by file (no glob): its cells are
	// all asked for.
	Named bool
	// Validate checks a cell's settings as a run would, without starting
	// anything (runner.Validate); required.
	Validate func(settings.Run) error
}

// Plan lists the cells of a matrix: the catalogue first, then the grid row
// by row. Cells that cannot run are included, marked with why.
func Plan(opts PlanOptions) ([]Cell, error) {
	if opts.Validate == nil {
		panic("scenarios.Plan: PlanOptions.Validate is nil (pass runner.Validate)")
	}
	validate := opts.Validate
	cat := opts.Catalogue
	if cat == nil {
		var err error
		if cat, err = Catalogue(); err != nil {
			return nil, err
		}
	}
	var cells []Cell
	for _, s := range cat {
		if opts.Quick && s.QuickDuration == 0 {
			continue
		}
		c := Cell{
			Name: s.Name, Kind: KindCatalogue, Lock: s.Config.Lock, Nemesis: nemesisColumn(s.Config.Nemeses),
			Shows: s.Shows, Source: s.Source, File: s.File, Expect: s.Expect,
			Config: s.RunConfig(opts.Quick),
		}
		c.Asked = opts.Named
		if why := missingToolchain(c.Config.Lock); why != "" {
			c.Skip, c.Why, c.Reason = StatusSkipped, why, SkipMissingToolchain
		} else if why := s.Unavailable(); why != "" {
			c.Skip, c.Why, c.Reason = StatusSkipped, why, SkipMissingFeature
		} else if err := validate(withOut(c.Config)); err != nil {
			c.Skip, c.Why, c.Reason = invalid("invalid scenario", err)
		}
		cells = append(cells, c)
	}
	if opts.Grid != nil {
		cells = append(cells, gridCells(*opts.Grid, validate)...)
	}
	if opts.Backend != "" {
		for i := range cells {
			c := &cells[i]
			c.Config.Backend, c.Config.Image = opts.Backend, opts.Image
			if c.Skip == "" {
				if err := validate(withOut(c.Config)); err != nil {
					c.Skip, c.Why, c.Reason = invalid("not on backend "+opts.Backend, err)
				}
			}
		}
	}
	if opts.Filter == "" {
		return cells, nil
	}
	var kept []Cell
	for _, c := range cells {
		ok, err := matchAny(opts.Filter, c.Name)
		if err != nil {
			return nil, err
		}
		if ok {
			c.Asked = c.Asked || namedExactly(opts.Filter, c.Name)
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("--scenarios %q matches no scenario or grid cell (grid cells are named LOCK+NEMESIS)", opts.Filter)
	}
	return kept, nil
}

func matchAny(globs, name string) (bool, error) {
	for _, g := range strings.Split(globs, ",") {
		ok, err := path.Match(strings.TrimSpace(g), name)
		if err != nil {
			return false, fmt.Errorf("--scenarios %q: %w", g, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// namedExactly says one of the comma-separated globs is name itself,
// without wildcards.
func namedExactly(globs, name string) bool {
	for _, g := range strings.Split(globs, ",") {
		if strings.TrimSpace(g) == name {
			return true
		}
	}
	return false
}

// invalid classifies a configuration that runner.Validate refused: an error
// in the scenario or grid, except for an option naming a file that is not
// there (the lua lock's script, given relative to the repository), which
// only means the matrix runs from another directory.
func invalid(what string, err error) (Status, string, SkipReason) {
	if errors.Is(err, fs.ErrNotExist) {
		return StatusSkipped, what + ": " + err.Error() + " (paths are relative to the repository: run from its root)", SkipMissingFile
	}
	return StatusError, what + ": " + err.Error(), ""
}

// withOut gives cfg a placeholder output folder for Validate, which wants one.
func withOut(cfg settings.Run) settings.Run {
	if cfg.Out == "" {
		cfg.Out = "validate"
	}
	return cfg
}

func nemesisColumn(ns []string) string {
	var out []string
	for _, n := range ns {
		if n != "" && n != NoFault {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return NoFault
	}
	return strings.Join(out, ",")
}

// GridAxes returns the grid's rows (every registered lock) and columns (no
// fault, then every registered nemesis).
func GridAxes() (lockNames, nemesisNames []string) {
	for _, l := range locks.All() {
		lockNames = append(lockNames, l.Name)
	}
	nemesisNames = []string{NoFault}
	for _, n := range nemesis.All() {
		nemesisNames = append(nemesisNames, n.Name)
	}
	return lockNames, nemesisNames
}

// missingToolchain says why an adapter lock cannot run here ("" when it
// can, or when the lock is written in Go). One the binary carries is built
// first when it is not yet (locks.Manifest.Ready).
func missingToolchain(lock string) string {
	spec, err := locks.Lookup(lock)
	if err != nil || spec.Adapter == nil {
		return ""
	}
	if why := spec.Adapter.Ready(); why != "" {
		return "adapter " + lock + ": " + why
	}
	return ""
}

func gridCells(g Grid, validate func(settings.Run) error) []Cell {
	lockNames, nemesisNames := GridAxes()
	var cells []Cell
	for _, l := range lockNames {
		// A lock whose own settings in the grid are wrong is an error in
		// every column, not n/a.
		base, baseErr := g.Config(l, NoFault)
		if baseErr == nil && unavailable(base) == "" {
			baseErr = validate(withOut(base))
		}
		expect, _ := g.ExpectOf(l)
		for _, n := range nemesisNames {
			c := Cell{Name: GridName(l, n), Kind: KindGrid, Lock: l, Nemesis: n, File: g.File, Expect: Expectation{Verdict: expect[n], Liveness: g.Liveness[l][n]}, Seeds: g.Seeds(l, n)}
			if g.Chance[l][n] {
				c.Expect.Verdict, c.Expect.Chance = checker.Violation, true
			}
			cfg, err := g.Config(l, n)
			c.Config = cfg
			switch {
			case err != nil:
				c.Skip, c.Why = StatusError, err.Error()
			case missingToolchain(l) != "":
				c.Skip, c.Why, c.Reason = StatusSkipped, missingToolchain(l), SkipMissingToolchain
			case unavailable(cfg) != "":
				c.Skip, c.Why, c.Reason = StatusSkipped, unavailable(cfg), SkipMissingFeature
			case baseErr != nil:
				c.Skip, c.Why, c.Reason = invalid("grid settings of lock "+l, baseErr)
			case g.NA[l][n] != "":
				c.Skip, c.Why = StatusNA, fmt.Sprintf("%s (%s)", g.NA[l][n], g.File)
			default:
				if err := validate(withOut(cfg)); err != nil {
					var ue settings.UsageError
					if errors.As(err, &ue) {
						c.Skip, c.Why = StatusNA, err.Error()
					} else {
						c.Skip, c.Why = StatusError, err.Error()
					}
				} else if c.Expect.Verdict == "" {
					// Never silently: a lock registered from outside has no
					// row in the built-in grid until its author adds one.
					why := fmt.Sprintf("no expectation for this cell in %s: add expect.%s.%s (safe or violation)", g.File, l, n)
					if f := locks.GivenFile(l); f != "" {
						why = fmt.Sprintf("no expectation for this cell: %s (%s) does not claim %s; add it to the manifest's claims to expect safe", l, f, n)
					}
					c.Skip, c.Why, c.Reason = StatusSkipped, why, SkipNoExpectation
				}
			}
			cells = append(cells, c)
		}
	}
	return cells
}

// ExecOptions tune Execute.
type ExecOptions struct {
	// Out is the matrix's folder; each run writes Out/<cell name>/.
	Out string
	// Force lets the runs replace those of an earlier matrix in Out.
	Force bool
	// Parallel is how many runs go at once (runs mostly sleep), a run
	// counted by its settings.Run.Weight.
	Parallel int
	// AllowInconclusive keeps inconclusive cells from failing the matrix.
	AllowInconclusive bool
	Quick             bool
	// Progress receives a line as each run starts and ends.
	Progress io.Writer
	// AfterRun, when set, is called with the folder of each finished run
	// (to render its report); an error is shown but changes no verdict.
	AfterRun func(dir string) error
	// Run performs one run (runner.Run); required.
	Run settings.RunFunc
	// Shard, when set, says the cells are shard Index of Count of the
	// matrix Matrix (ShardOf): the summary then keeps the whole matrix's
	// plan and axes, and lists its cells, so that shards can be merged.
	Shard  *Shard
	Matrix []Cell
}

// Execute runs the cells that can run, Parallel at a time (by weight), and compares each
// verdict with its expectation. Cancelling ctx stops the runs in progress in
// order and leaves the rest not run.
func Execute(ctx context.Context, cells []Cell, opts ExecOptions) Summary {
	if opts.Parallel < 1 {
		opts.Parallel = 1
	}
	run := opts.Run
	if run == nil {
		panic("scenarios.Execute: ExecOptions.Run is nil (pass runner.Run)")
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	start := time.Now()
	results := make([]CellResult, len(cells))
	var todo []int
	for i, c := range cells {
		results[i] = newResult(c)
		if c.Skip != "" {
			results[i].Status, results[i].Detail = c.Skip, c.Why
			continue
		}
		results[i].Status = StatusNotRun
		todo = append(todo, i)
	}
	todo = runOrder(cells, todo)
	weight := make([]int, len(cells))
	for _, i := range todo {
		weight[i] = cells[i].Config.Weight()
	}

	var mu sync.Mutex // results, done and tally
	done, tally, next := 0, map[Status]int{}, 0
	grid.Pool(ctx, opts.Parallel, func() (int, int, bool) {
		if next == len(todo) {
			return 0, 0, false
		}
		next++
		return todo[next-1], weight[todo[next-1]], true
	}, func(i int) {
		c := cells[i]
		began := time.Now()
		r := runCell(ctx, c, opts, run)
		r.Seconds = time.Since(began).Seconds()
		r.Began = began.Format(time.RFC3339Nano)
		mu.Lock()
		defer mu.Unlock()
		results[i] = r
		done++
		tally[r.Status]++
		fmt.Fprintf(progress, "[%*d/%d %s] %-40s %-16s %s   (so far: %s)\n",
			len(fmt.Sprint(len(todo))), done, len(todo), Clock(time.Since(start)), c.Name, r.Got, describeStatus(r), tallyLine(tally))
		if r.ReportError != "" {
			fmt.Fprintf(progress, "    report: %s\n", r.ReportError)
		}
	})

	s := Summary{
		Started: start.Format(time.RFC3339), Seconds: time.Since(start).Seconds(), Quick: opts.Quick,
		AllowInconclusive: opts.AllowInconclusive, Cells: results,
	}
	whole := cells
	if opts.Shard != nil {
		whole = opts.Matrix
		sh := *opts.Shard
		sh.Planned = Names(whole)
		s.Shard = &sh
	}
	s.Plan = Fingerprint(whole, opts.Quick, opts.AllowInconclusive)
	s.Host, _ = os.Hostname()
	s.Locks, s.Nemeses = Axes(whole)
	s.tally()
	return s
}

// runCell runs one cell: each of its seeds in turn, each up to MaxAttempts
// times while it is spoiled. A violation expected of a cell is found as
// soon as one seed shows it; safe must hold for every seed. A seed runs
// again while it is spoiled (grid.MaxAttempts).
func runCell(ctx context.Context, c Cell, opts ExecOptions, run settings.RunFunc) CellResult {
	seeds := max(c.Seeds, 1)
	var (
		r        CellResult
		attempts int
		found    []string
	)
	for k := 0; k < seeds; k++ {
		cfg := c.Config
		cfg.Seed = c.Config.Seed + int64(k)
		// A cell that must break ends soon after it did.
		cfg.StopOnViolation = cfg.StopOnViolation || c.Expect.Verdict == checker.Violation
		dir := c.Name
		if seeds > 1 {
			dir += fmt.Sprintf(".seed%d", cfg.Seed)
		}
		seed := grid.Seed{Out: opts.Out, Dir: dir, Force: opts.Force, AfterRun: opts.AfterRun,
			Run: func(ctx context.Context, out string, force bool) (checker.Result, error) {
				cfg.Out, cfg.Force = out, force
				return run(ctx, cfg)
			}}
		attempts += seed.Attempts(ctx, func(a grid.Attempt) bool {
			var spoiled bool
			r, spoiled = classify(c, a.Result, a.Err, ctx.Err() != nil)
			r.Dir, r.Seed = a.Dir, cfg.Seed
			if a.AfterErr != nil {
				r.ReportError = a.AfterErr.Error()
			}
			return spoiled
		})
		found = append(found, fmt.Sprintf("seed %d: %s", cfg.Seed, r.Status))
		if ctx.Err() != nil || r.Status != StatusMatch && c.Expect.Verdict == checker.Safe || r.Status == StatusMatch && c.Expect.Verdict == checker.Violation {
			break
		}
	}
	r.Attempts, r.SeedsRun = attempts, len(found)
	if seeds > 1 {
		r.Detail = fmt.Sprintf("%d of up to %d seeds run (%s) — %s", len(found), seeds, strings.Join(found, ", "), r.Detail)
	}
	if attempts > len(found) {
		r.Detail = fmt.Sprintf("after %d runs (a run whose faults did not land, whose overlap or unavailability a stall of the harness made, or whose servers did not start, is run again) — %s", attempts, r.Detail)
	}
	return r
}

// runOrder returns the order in which to start the cells todo: the longest
// runs first, so the slowest do not start last and leave the other slots
// idle; and, among runs of the same length, the grid by diagonals, so that
// runs going at once are of different locks and different faults. Four runs
// of one five-node lock at once (twenty redis-servers) or of one heavy
// fault would load the two cores in the same way at the same time.
func runOrder(cells []Cell, todo []int) []int {
	row, col := map[string]int{}, map[string]int{}
	for _, c := range cells {
		if c.Kind != KindGrid {
			continue
		}
		if _, ok := row[c.Lock]; !ok {
			row[c.Lock] = len(row)
		}
		if _, ok := col[c.Nemesis]; !ok {
			col[c.Nemesis] = len(col)
		}
	}
	diagonal := func(c Cell) int {
		if c.Kind != KindGrid {
			return -1 // the catalogue first
		}
		return (row[c.Lock] + col[c.Nemesis]) % max(len(col), 1)
	}
	out := append([]int(nil), todo...)
	sort.SliceStable(out, func(a, b int) bool {
		ca, cb := cells[out[a]], cells[out[b]]
		if ca.Config.Duration != cb.Config.Duration {
			return ca.Config.Duration > cb.Config.Duration
		}
		return diagonal(ca) < diagonal(cb)
	})
	return out
}

// classify compares one run's outcome with its cell's expectation. spoiled
// says the run was no evidence either way (Expectation.Judge): another
// attempt may be.
func classify(c Cell, res checker.Result, err error, interrupted bool) (r CellResult, spoiled bool) {
	r = newResult(c)
	r.Verdict, r.Got = string(res.Verdict), c.Expect.Outcome(res)
	r.Detail = res.Summary
	if keys := res.Liveness.DeadlockedKeys; len(keys) > 0 && c.Expect.Deadlock == nil {
		r.Detail += fmt.Sprintf("; deadlocked: %s", strings.Join(keys, ", "))
	}
	status, why := c.Expect.Assess(res, len(c.Config.Nemeses) > 0)
	switch {
	case err != nil:
		r.Status, r.Detail = StatusError, err.Error()
		if res.Verdict == "" {
			r.Got = "error"
		}
		return r, settings.IsStartError(err) && !interrupted
	case interrupted && res.Verdict != checker.Violation:
		r.Status, r.Detail = StatusNotRun, "interrupted: "+res.Summary
		return r, false
	}
	r.Status = status
	if status != StatusMatch && res.Verdict != checker.Inconclusive {
		r.Detail = why + " — " + r.Detail
	}
	return r, status == StatusInconclusive
}

func newResult(c Cell) CellResult {
	expect := c.Expect.String()
	if c.Seeds > 1 && expect != "" {
		if c.Expect.Verdict == checker.Violation {
			expect += fmt.Sprintf(" in ≥1 of %d seeds", c.Seeds)
		} else {
			expect += fmt.Sprintf(" in all %d seeds", c.Seeds)
		}
	}
	return CellResult{
		Name: c.Name, Kind: c.Kind, Lock: c.Lock, Nemesis: c.Nemesis, Shows: c.Shows, Source: c.Source,
		File: c.File, Expect: expect, Seed: c.Config.Seed, SkipReason: c.Reason, Asked: c.Asked,
	}
}

func describeStatus(r CellResult) string {
	switch r.Status {
	case StatusMatch:
		return "as expected"
	case StatusMismatch:
		return "MISMATCH: expected " + r.Expect
	case StatusInconclusive:
		return "INCONCLUSIVE"
	case StatusError:
		return "ERROR: " + r.Detail
	}
	return string(r.Status)
}

func tallyLine(t map[Status]int) string {
	var parts []string
	for _, s := range []Status{StatusMatch, StatusMismatch, StatusInconclusive, StatusError, StatusNotRun} {
		if t[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", t[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// Clock writes d as m:ss, for progress lines.
func Clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// Axes returns the grid's locks and nemeses in the order the cells list them.
func Axes(cells []Cell) (lockNames, nemesisNames []string) {
	seenL, seenN := map[string]bool{}, map[string]bool{}
	for _, c := range cells {
		if c.Kind != KindGrid {
			continue
		}
		if !seenL[c.Lock] {
			seenL[c.Lock] = true
			lockNames = append(lockNames, c.Lock)
		}
		if !seenN[c.Nemesis] {
			seenN[c.Nemesis] = true
			nemesisNames = append(nemesisNames, c.Nemesis)
		}
	}
	return lockNames, nemesisNames
}
