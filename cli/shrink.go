package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/internal/lockargs"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/shrink"
)

// Exit codes of shrink (3 and 4 are ExitUsage and ExitSetup).
const (
	ExitShrunk        = 0 // minimal.yaml written
	ExitNotReproduced = 1 // the original did not violate again: nothing written but shrink.json
	// ExitShrinkInterrupted: SIGINT or SIGTERM ended the search (the
	// smallest run found so far is written, if the original violated
	// again), as compare, audit and chaos exit when interrupted.
	ExitShrinkInterrupted = ExitMatrixIncomplete
)

const shrinkUsage = `Usage: lockchaos shrink DIR [--tries K] [--budget 10m] [--out DIR2] [--force]

Searches for the smallest configuration of the run in DIR (a violation)
that still violates: fewer faults (delta debugging over the recorded fault
steps), fewer keys and clients, a run cut shortly after the first overlap, a
shorter hold. Each candidate is a real run, taken up to K times and kept when
one violates. It writes DIR2/minimal.yaml (a scenario that reproduces it:
lockchaos run --scenario DIR2/minimal.yaml), DIR2/witness.md (what happened),
DIR2/shrink.json (every candidate tried) and DIR2/minimal/ (the minimal run,
with its report), then runs minimal.yaml K times again.

Exit status: 0 minimal found, 1 the original violation could not be
reproduced (nothing written but shrink.json), 2 interrupted (the smallest
found so far is written, once the original violated again), 3 usage error,
4 setup error.
`

func cmdShrink(args []string) int {
	fs := newFlags("shrink")
	tries := fs.Int("tries", shrink.DefaultTries, "runs of each candidate before it is given up (kept when one violates)")
	out := fs.String("out", "", "the folder it writes (default DIR.shrink)")
	force := fs.Bool("force", false, "let --out replace the shrink it holds")
	var budget time.Duration
	var spans settings.Spans
	spans.DurationVar(fs, &budget, "budget", shrink.DefaultBudget, "time for the search (a run under way finishes; minimal.yaml's runs after it are not counted)")
	var lf lockFlags
	lf.bind(fs)
	// Flags may come before or after the folder.
	var dirs []string
	for rest := args; ; {
		if code, ok := parse(fs, shrinkUsage, rest); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		dirs, rest = append(dirs, fs.Arg(0)), fs.Args()[1:]
	}
	dir := ""
	if len(dirs) > 0 {
		dir = dirs[0]
	}
	switch {
	case dir == "":
		fmt.Fprintln(os.Stderr, "usage: lockchaos shrink DIR [--tries K] [--budget 10m] [--out DIR2]   (DIR holds a run whose verdict is violation)")
		return ExitUsage
	case len(dirs) > 1:
		fmt.Fprintf(os.Stderr, "lockchaos shrink: unexpected argument %q (one run folder at a time)\n", dirs[1])
		return ExitUsage
	case *tries < 1:
		fmt.Fprintf(os.Stderr, "lockchaos shrink: --tries %d: want at least 1\n", *tries)
		return ExitUsage
	case budget <= 0:
		fmt.Fprintf(os.Stderr, "lockchaos shrink: --budget %v: want a positive duration such as 10m\n", budget)
		return ExitUsage
	}
	if _, opts, ok := lf.load("shrink"); !ok {
		return ExitUsage
	} else if opts != nil {
		fmt.Fprintln(os.Stderr, "lockchaos shrink: --opt: a shrink keeps the options its run had (DIR/config.json): run it again with --opt, then shrink that run")
		return ExitUsage
	}
	outGiven := *out != ""
	if !outGiven {
		*out = rundir.ShrinkDir(dir)
	}
	ctx, stop := signalContext()
	defer stop()
	rep, err := shrink.Shrink(ctx, dir, shrink.Options{Out: *out, OutGiven: outGiven, Force: *force, Tries: *tries, Budget: budget, Progress: os.Stderr, AfterRun: afterShrink, Run: runner.Run})
	lockFile := ""
	if cfg, err := settings.LoadReplay(dir); err == nil {
		lockFile = lockargs.FileArgs("", cfg.Lock)
	}
	return shrinkOutcome(rep, err, *out, lockFile)
}

// shrinkOutcome prints the shrink's last lines and maps its outcome to an
// exit code.
func shrinkOutcome(rep *shrink.Report, err error, out, lockFile string) int {
	var ue settings.UsageError
	interrupted := rep != nil && rep.Stopped == shrink.StoppedInterrupted
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(os.Stderr, "lockchaos shrink:", err)
		return ExitUsage
	case interrupted && errors.Is(err, shrink.ErrNotReproduced):
		fmt.Fprintf(os.Stderr, "lockchaos shrink: %v; no minimal scenario written (the runs tried: %s)\n", err, filepath.Join(out, rundir.ShrinkReportFile))
		return ExitShrinkInterrupted
	case errors.Is(err, shrink.ErrNotReproduced):
		fmt.Fprintf(os.Stderr, "lockchaos shrink: %v; no minimal scenario written (the runs tried: %s)\n", err, filepath.Join(out, rundir.ShrinkReportFile))
		return ExitNotReproduced
	case err != nil:
		fmt.Fprintln(os.Stderr, "lockchaos shrink:", err)
		return ExitSetup
	}
	fmt.Printf("minimal: %s (was %s)", rep.Minimal, rep.Original)
	if rep.Stopped != "" {
		fmt.Printf(" — search stopped early (%s): the smallest found so far", rep.Stopped)
	}
	fmt.Println()
	if v := rep.Verify; v != nil {
		note := ""
		if v.Violated == 0 {
			note = " — it violated in the search, but not again: a flaky witness"
		}
		fmt.Printf("re-run of %s: violated in %d of %d runs%s\n", rundir.ShrinkScenarioFile, v.Violated, v.Runs, note)
	}
	fmt.Printf("scenario: %s\nwitness:  %s\nrun:      %s\n", filepath.Join(out, rundir.ShrinkScenarioFile), filepath.Join(out, rundir.ShrinkWitnessFile),
		filepath.Join(out, rundir.ShrinkMinimalDir, rundir.ReportFile))
	fmt.Printf("reproduce: %s run%s --scenario %s\n", rundir.Program(), lockFile, shellwords.Quote(filepath.Join(out, rundir.ShrinkScenarioFile)))
	if interrupted {
		return ExitShrinkInterrupted
	}
	return ExitShrunk
}

// shrinkMismatches shrinks, after a matrix, every cell whose verdict
// differed from its expectation and whose run violated, into
// OUT/CELL.shrink; the cells share the budget equally. It prints a line
// per cell on stderr (stdout may be chaos --json's) and returns how many
// it shrank. A shrink's outcome changes
// nothing of the matrix's.
func shrinkMismatches(ctx context.Context, sum scenarios.Summary, out string, budget time.Duration) int {
	var cells []scenarios.CellResult
	for _, c := range sum.Cells {
		if c.Status == scenarios.StatusMismatch && c.Verdict == string(checker.Violation) && c.Dir != "" {
			cells = append(cells, c)
		}
	}
	if len(cells) == 0 {
		return 0
	}
	fmt.Fprintf(os.Stderr, "\nshrinking %d %s that violated against the expectation, %v in all\n", len(cells), plural(len(cells), "mismatch", "mismatches"), budget)
	deadline := time.Now().Add(budget)
	shrunk := 0
	for i, c := range cells {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "shrink %s: not tried (the shrink budget is spent)\n", c.Name)
			continue
		}
		dir := filepath.Join(out, c.Dir)
		rep, err := shrink.Shrink(ctx, dir, shrink.Options{Out: rundir.ShrinkDir(dir), Force: true, Budget: left / time.Duration(len(cells)-i), Progress: os.Stderr, AfterRun: afterShrink, Run: runner.Run})
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "shrink %s: %v\n", c.Name, err)
		default:
			shrunk++
			fmt.Fprintf(os.Stderr, "shrink %s: %s (was %s) → %s\n", c.Name, rep.Minimal, rep.Original, filepath.Join(rundir.ShrinkDir(dir), rundir.ShrinkScenarioFile))
		}
	}
	return shrunk
}

func afterShrink(dir string) error { _, err := writeRunReport(dir); return err }
