package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/grid"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
)

// Files of a comparison's folder.
const (
	JSONFile  = "compare.json"
	CSVFile   = "compare.csv"
	IndexFile = "index.html"
)

// Comparison is what compare.json holds: the spec, the cells as planned
// (each with its whole run configuration, so that --rerun repeats them
// exactly), and a row per cell.
type Comparison struct {
	Header
	Spec  Spec   `json:"spec"`
	Cells []Cell `json:"cells"`
	Rows  []Row  `json:"rows"`
	// Shard, when set, says the comparison holds only shard Index of Count
	// of its cells (compare --shard I/N; Planned names them all) and Plan
	// identifies its configuration (Fingerprint): lockchaos merge joins
	// the shards of one plan into the whole comparison.
	Shard *scenarios.Shard `json:"shard,omitempty"`
	Plan  string           `json:"plan,omitempty"`
	// Command is the command line that repeats it.
	Command string `json:"command"`
}

// Header opens compare.json and margin.json: what made them, where, when
// and for how long.
type Header struct {
	Schema  int     `json:"schema"`
	Version string  `json:"version"`
	Host    string  `json:"host"`
	Started string  `json:"started"`
	Seconds float64 `json:"seconds"`
	// Interrupted says it was stopped before every run was done.
	Interrupted bool `json:"interrupted"`
}

// header starts a Header at start; done sets its end.
func header(start time.Time) Header {
	h := Header{Schema: Schema, Version: rundir.Version(), Started: start.Format(time.RFC3339)}
	h.Host, _ = os.Hostname()
	return h
}

func (h *Header) done(ctx context.Context, start time.Time) {
	h.Seconds, h.Interrupted = time.Since(start).Seconds(), ctx.Err() != nil
}

// Schema is the version of compare.json's layout.
const Schema = 1

// Options tune Execute.
type Options struct {
	// Out is the comparison's folder; a run writes Out/LOCK+NEMESIS/seedN.
	Out   string
	Force bool
	// Progress receives a line as each run ends.
	Progress io.Writer
	// AfterRun, when set, is called with each finished run's folder (to
	// render its report); an error is shown but changes nothing.
	AfterRun func(dir string) error
	// Run performs one run (runner.Run); required.
	Run settings.RunFunc
}

// job is one seed of one cell.
type job struct{ cell, seed int }

// Execute runs the cells' seeds, Parallel at a time (by weight,
// settings.Run.Weight), seed by seed across
// the cells so that every cell advances together, and stops a cell early
// once it has violated and run MinSeeds seeds (when EarlyStop is set). A
// run that was no evidence either way runs again with the same seed, up
// to grid.MaxAttempts times, as in the matrix. Cancelling ctx stops
// the runs in progress and leaves the rest out.
func Execute(ctx context.Context, spec Spec, cells []Cell, opts Options) Comparison {
	run := opts.Run
	if run == nil {
		panic("compare.Execute: Options.Run is nil (pass runner.Run)")
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	start := time.Now()
	var jobs []job
	for k := 0; k < spec.Seeds; k++ {
		for i, c := range cells {
			if c.Skip == "" {
				jobs = append(jobs, job{i, k})
			}
		}
	}
	var (
		mu      sync.Mutex // runs, stopped, done and skipped, beside the pool's next
		runs    = make([][]Run, len(cells))
		stopped = make([]bool, len(cells))
		done    int
		skipped int // jobs left out by early stops
		next    int
	)
	weight := make([]int, len(cells))
	for i, c := range cells {
		weight[i] = c.Config.Weight()
	}
	grid.Pool(ctx, spec.Parallel, func() (int, int, bool) {
		mu.Lock()
		defer mu.Unlock()
		for next < len(jobs) {
			next++
			if stopped[jobs[next-1].cell] {
				skipped++
				continue
			}
			return next - 1, weight[jobs[next-1].cell], true
		}
		return 0, 0, false
	}, func(ji int) {
		j := jobs[ji]
		c := cells[j.cell]
		r := runSeed(ctx, c, j.seed, opts, run)
		if ctx.Err() != nil && r.Outcome != OutcomeViolation {
			return // interrupted: not evidence
		}
		mu.Lock()
		defer mu.Unlock()
		runs[j.cell] = append(runs[j.cell], r)
		done++
		n, v := len(runs[j.cell]), 0
		for _, x := range runs[j.cell] {
			if x.Outcome == OutcomeViolation {
				v++
			}
		}
		note := ""
		if spec.EarlyStop && !stopped[j.cell] && n >= spec.MinSeeds && n < spec.Seeds {
			if lo, _ := Wilson(v, n); lo > 0 {
				stopped[j.cell] = true
				note = fmt.Sprintf(" — stops early: its interval excludes 0 after %d seeds", n)
			}
		}
		elapsed := time.Since(start)
		remaining := len(jobs) - done - skipped - countStopped(jobs[next:], stopped)
		eta := "?"
		if done > 0 {
			eta = scenarios.Clock(time.Duration(float64(elapsed) / float64(done) * float64(max(remaining, 0))))
		}
		fmt.Fprintf(progress, "[cell %d/%d, %d runs done, %s elapsed, ETA ≤%s] %s seed %d: %s%s (%d of %d seeds violated)%s\n",
			j.cell+1, len(cells), done, scenarios.Clock(elapsed), eta, c.Name(), r.Seed, r.Outcome, attempts(r), v, n, note)
	})

	cmp := Comparison{Header: header(start), Spec: spec, Cells: cells}
	cmp.done(ctx, start)
	for i, c := range cells {
		cmp.Rows = append(cmp.Rows, rowOf(c, runs[i], spec.Seeds, stopped[i]))
	}
	return cmp
}

// countStopped counts the jobs left that belong to stopped cells.
func countStopped(left []job, stopped []bool) int {
	n := 0
	for _, j := range left {
		if stopped[j.cell] {
			n++
		}
	}
	return n
}

// attempts says how many times a seed ran and why: a run that was no
// evidence either way is run again.
func attempts(r Run) string {
	if r.Attempts <= 1 {
		return ""
	}
	s := fmt.Sprintf(" after %d attempts", r.Attempts)
	if len(r.Retried) > 0 {
		s += fmt.Sprintf(" (%s no evidence, so it ran again; the first: %s)", plural(len(r.Retried), "earlier attempt was", "earlier attempts were"), r.Retried[0])
	}
	return s
}

// runSeed runs seed k of cell c, again while it is no evidence.
func runSeed(ctx context.Context, c Cell, k int, opts Options, run settings.RunFunc) Run {
	cfg := c.Config
	cfg.Seed = c.Config.Seed + int64(k)
	var r Run
	var retried []string
	seed := grid.Seed{Out: opts.Out, Dir: filepath.Join(c.Name(), fmt.Sprintf("seed%d", cfg.Seed)), Force: opts.Force, AfterRun: opts.AfterRun,
		Run: func(ctx context.Context, out string, force bool) (checker.Result, error) {
			cfg.Out, cfg.Force = out, force
			return run(ctx, cfg)
		}}
	seed.Attempts(ctx, func(a grid.Attempt) bool {
		r = runOf(a.Result, a.Err, float64(cfg.TTL.Milliseconds()))
		r.Seed, r.Dir, r.Attempts, r.Retried = cfg.Seed, filepath.ToSlash(a.Dir), a.Try, retried
		retried = append(retried, r.Why)
		return r.Outcome == OutcomeNoEvidence || settings.IsStartError(a.Err) && ctx.Err() == nil
	})
	return r
}

// Write writes compare.json and compare.csv to dir.
func (c Comparison) Write(dir string) error {
	if err := rundir.WriteJSON(filepath.Join(dir, JSONFile), c); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, CSVFile))
	if err != nil {
		return err
	}
	if err := WriteCSV(f, c.Rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Read reads the comparison in dir (its compare.json).
func Read(dir string) (Comparison, error) {
	var c Comparison
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return c, fmt.Errorf("%w (a comparison's folder holds %s)", err, JSONFile)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", filepath.Join(dir, JSONFile), err)
	}
	if c.Schema != Schema {
		return c, fmt.Errorf("%s: schema %d, this lockchaos reads %d", filepath.Join(dir, JSONFile), c.Schema, Schema)
	}
	return c, nil
}
