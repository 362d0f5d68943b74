package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/scenarios"
)

// DefaultParallel is how many runs `chaos` performs at once. Runs mostly
// sleep (holds, think times, faults), so a few fit on two cores without
// stretching the timings the verdicts depend on.
const DefaultParallel = 4

// DefaultBaseline is the committed summary that `chaos` compares with.
const DefaultBaseline = "results/baseline/summary.json"

const chaosUsage = `Usage: lockchaos chaos [--quick] [--scenarios GLOB[,GLOB...]] [flags]

Runs the catalogue of scenarios and the lock × fault grid, compares every
verdict with its expectation, and writes every run, summary.json and an HTML
index. Exits 0 only when every cell that ran matched (and at least one ran).
`

// cmdChaos runs the catalogue and the lock × fault grid, compares each
// verdict with its expectation, and writes every run, summary.json and an
// HTML index. It exits 0 only when no cell differs from its expectation
// (nor errs, nor — unless allowed — ends inconclusive).
func cmdChaos(args []string) int {
	fs := newFlags("chaos")
	quick := fs.Bool("quick", false, "run each catalogue scenario's short version and leave out the grid (unless --grid)")
	grid := fs.Bool("grid", true, "run the lock × fault grid too (under --quick only when given)")
	pattern := fs.String("scenarios", "", "only the cells whose names match `GLOB[,GLOB...]` (grid cells are LOCK+NEMESIS); a GLOB ending in .yaml loads those scenario files instead of the catalogue")
	parallel := fs.Int("parallel", DefaultParallel, "runs at once")
	junit := fs.String("junit", "", "also write JUnit XML (one test case per cell) to `FILE`")
	out := fs.String("out", "", "output directory (default results/<time>)")
	allowInconclusive := fs.Bool("allow-inconclusive", false, "do not fail the matrix on inconclusive cells")
	gridFile := fs.String("grid-file", "", "grid and its expectations (default: the built-in scenarios/grid.yaml)")
	baseline := fs.String("baseline", DefaultBaseline, "committed summary to compare outcomes with, when the file exists")
	backend := fs.String("backend", "", "run every cell on this backend (local, docker), overriding the scenario files")
	image := fs.String("image", "", "container image for --backend docker (default: the backend's)")
	updateBaseline := fs.Bool("update-baseline", false, "write this matrix's outcomes to --baseline (the full matrix only)")
	force := fs.Bool("force", false, "let --out replace the matrix it holds")
	if code, ok := parse(fs, chaosUsage, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos chaos: unexpected argument %q (to choose scenarios use --scenarios GLOB)\n", fs.Arg(0))
		return ExitUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *parallel < 1 {
		fmt.Fprintf(os.Stderr, "lockchaos chaos: --parallel %d: want at least 1\n", *parallel)
		return ExitUsage
	}
	fromFiles := *pattern != "" && (strings.HasSuffix(*pattern, ".yaml") || strings.HasSuffix(*pattern, ".yml"))
	withGrid := *grid && ((!*quick && !fromFiles) || set["grid"])
	if *updateBaseline && (*quick || *pattern != "" || !withGrid) {
		fmt.Fprintln(os.Stderr, "lockchaos chaos: --update-baseline records the full matrix: leave out --quick, --scenarios and --grid=false")
		return ExitUsage
	}

	opts := scenarios.PlanOptions{Quick: *quick, Backend: *backend, Image: *image}
	if fromFiles {
		cat, err := scenarios.LoadGlob(*pattern)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos chaos:", err)
			return ExitUsage
		}
		opts.Catalogue = cat
	} else {
		opts.Filter = *pattern
	}
	if withGrid {
		g, err := scenarios.LoadGrid()
		if *gridFile != "" {
			g, err = scenarios.LoadGridFile(*gridFile)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos chaos:", err)
			return ExitUsage
		}
		opts.Grid = &g
	}
	cells, err := scenarios.Plan(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos chaos:", err)
		return ExitUsage
	}

	if *out == "" {
		*out = filepath.Join("results", time.Now().Format("20060102-150405"))
	}
	if _, err := os.Stat(filepath.Join(*out, scenarios.SummaryFile)); err == nil && !*force {
		fmt.Fprintf(os.Stderr, "lockchaos chaos: --out %s already holds a matrix (%s): choose another folder, or give --force to replace it\n", *out, scenarios.SummaryFile)
		return ExitUsage
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "lockchaos chaos: create %s: %v\n", *out, err)
		return ExitSetup
	}
	printPlan(os.Stderr, cells, *parallel, *out)

	ctx, stop := signalContext()
	defer stop()
	sum := scenarios.Execute(ctx, cells, scenarios.ExecOptions{
		Out: *out, Force: *force, Parallel: *parallel, AllowInconclusive: *allowInconclusive, Quick: *quick,
		Progress: os.Stderr,
		AfterRun: func(dir string) error { _, err := writeRunReport(dir); return err },
	})

	var writeErrs []error
	if err := sum.Write(*out); err != nil {
		writeErrs = append(writeErrs, err)
	}
	index, err := writeIndex(*out, sum)
	if err != nil {
		writeErrs = append(writeErrs, err)
	}
	if *junit != "" {
		if err := sum.JUnit(*junit); err != nil {
			writeErrs = append(writeErrs, err)
		}
	}
	printSummary(os.Stdout, sum)
	compareBaseline(os.Stdout, sum, *baseline, set["baseline"])
	if *updateBaseline {
		if err := sum.WriteBaseline(*baseline); err != nil {
			writeErrs = append(writeErrs, err)
		} else {
			fmt.Printf("baseline written: %s\n", *baseline)
		}
	}
	fmt.Printf("\nruns, summary.json and the HTML index: %s\n", index)
	if len(writeErrs) > 0 {
		fmt.Fprintln(os.Stderr, "lockchaos chaos:", errors.Join(writeErrs...))
		return ExitSetup
	}
	if !sum.Passed {
		return 1
	}
	return 0
}

func printPlan(w io.Writer, cells []scenarios.Cell, parallel int, out string) {
	var run, cat, grid int
	skipped := map[scenarios.Status][]string{}
	for _, c := range cells {
		if c.Skip != "" {
			skipped[c.Skip] = append(skipped[c.Skip], c.Name)
			continue
		}
		run++
		if c.Kind == scenarios.KindGrid {
			grid++
		} else {
			cat++
		}
	}
	fmt.Fprintf(w, "lockchaos chaos: %d runs (%d catalogue, %d grid), %d at a time → %s\n", run, cat, grid, parallel, out)
	for _, c := range cells {
		if c.Skip == scenarios.StatusSkipped && c.Kind == scenarios.KindCatalogue {
			fmt.Fprintf(w, "  skipped %s: %s\n", c.Name, c.Why)
		}
		if c.Skip == scenarios.StatusError {
			fmt.Fprintf(w, "  ERROR %s: %s\n", c.Name, c.Why)
		}
	}
	if n := len(skipped[scenarios.StatusNA]); n > 0 {
		fmt.Fprintf(w, "  %d grid cells n/a (the fault does not apply)\n", n)
	}
	for _, c := range cells {
		if c.Skip == scenarios.StatusSkipped && c.Kind == scenarios.KindGrid {
			fmt.Fprintf(w, "  skipped %s: %s\n", c.Name, c.Why)
		}
	}
}

// gridSymbols are the one-letter verdicts of the terminal's grid.
var gridSymbols = map[string]string{"safe": "S", "violation": "V", "inconclusive": "I", "error": "E"}

// printSummary prints the catalogue as a table, the grid as a compact
// matrix, and every cell that failed.
func printSummary(w io.Writer, s scenarios.Summary) {
	var cat []scenarios.CellResult
	for _, c := range s.Cells {
		if c.Kind == scenarios.KindCatalogue {
			cat = append(cat, c)
		}
	}
	if len(cat) > 0 {
		fmt.Fprintf(w, "\n%-40s %-20s %-20s %s\n", "SCENARIO", "EXPECTED", "GOT", "STATUS")
		for _, c := range cat {
			status := string(c.Status)
			if c.Status == scenarios.StatusSkipped || c.Status == scenarios.StatusError {
				status += ": " + c.Detail
			}
			fmt.Fprintf(w, "%-40s %-20s %-20s %s\n", c.Name, orDash(c.Expect), orDash(c.Got), status)
		}
	}
	if len(s.Locks) > 0 {
		width := 4
		for _, l := range s.Locks {
			width = max(width, len(l))
		}
		fmt.Fprintf(w, "\nGRID (S safe, V violation, I inconclusive, E error, · n/a, ? skipped; ! differs from the expectation or is no evidence)\n")
		fmt.Fprintf(w, "%-*s", width+1, "")
		for i := range s.Nemeses {
			fmt.Fprintf(w, " %-3d", i+1)
		}
		fmt.Fprintln(w)
		for _, l := range s.Locks {
			fmt.Fprintf(w, "%-*s", width+1, l)
			for _, n := range s.Nemeses {
				c, _ := s.Cell(scenarios.GridName(l, n))
				fmt.Fprintf(w, " %-3s", gridSymbol(c))
			}
			fmt.Fprintln(w)
		}
		var cols []string
		for i, n := range s.Nemeses {
			cols = append(cols, fmt.Sprintf("%d %s", i+1, n))
		}
		fmt.Fprintf(w, "columns: %s\n", strings.Join(cols, ", "))
	}
	failed := s.Failed()
	fmt.Fprintf(w, "\n%s in %s\n", tally(s), (time.Duration(s.Seconds) * time.Second).Round(time.Second))
	for _, c := range failed {
		fmt.Fprintf(w, "  %s %s: expected %s, got %s — %s\n", strings.ToUpper(string(c.Status)), c.Name, orDash(c.Expect), orDash(c.Got), c.Detail)
	}
}

func gridSymbol(c scenarios.CellResult) string {
	switch c.Status {
	case scenarios.StatusNA:
		return "·"
	case scenarios.StatusSkipped:
		return "?"
	case scenarios.StatusNotRun:
		return "-"
	case scenarios.StatusError:
		return "E!"
	}
	sym := gridSymbols[c.Verdict]
	if sym == "" {
		sym = "?"
	}
	switch c.Status {
	case scenarios.StatusMismatch, scenarios.StatusInconclusive:
		sym += "!"
	}
	return sym
}

func tally(s scenarios.Summary) string {
	var parts []string
	for _, st := range []scenarios.Status{scenarios.StatusMatch, scenarios.StatusMismatch, scenarios.StatusInconclusive,
		scenarios.StatusError, scenarios.StatusNA, scenarios.StatusSkipped, scenarios.StatusNotRun} {
		if n := s.Counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	verdict := "PASSED: every verdict as expected"
	switch {
	case s.Ran() == 0:
		verdict = "FAILED: no cell ran"
	case !s.Passed:
		verdict = "FAILED"
	}
	return verdict + " (" + strings.Join(parts, ", ") + ")"
}

// compareBaseline prints the cells whose outcome changed since the
// committed baseline. It is information for review, not a failure: the
// expectations decide that.
func compareBaseline(w io.Writer, s scenarios.Summary, path string, explicit bool) {
	base, err := scenarios.ReadSummary(path)
	if err != nil {
		if explicit || !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(w, "baseline: %v\n", err)
		}
		return
	}
	changes := s.Changes(base)
	if len(changes) == 0 {
		fmt.Fprintf(w, "baseline %s: no outcome changed\n", path)
		return
	}
	fmt.Fprintf(w, "baseline %s: %d %s changed (update it with --update-baseline once understood):\n", path, len(changes), plural(len(changes), "outcome", "outcomes"))
	for _, c := range changes {
		fmt.Fprintf(w, "  %s\n", c)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
