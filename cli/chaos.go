package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/lockchaos/lockchaos/internal/words"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
)

// DefaultParallel is how many runs `chaos`, `compare` and `audit` perform
// at once. Runs mostly sleep (holds, think times, faults), so eight fit on
// two idle cores without stretching the timings the verdicts depend on; a
// run that starts JVMs or containers counts as two (settings.Run.Weight),
// so four of those go at once; and while the machine's CPUs are busy,
// half as many (grid.Pool): the four at a time the grid's timings were
// measured at beside CPU hogs.
const DefaultParallel = 8

// parallelHelp is the help of --parallel.
const parallelHelp = "runs at once (half as many while the machine's CPUs are busy); a run that starts JVMs (a Java adapter, ZooKeeper) or containers counts as two"

// DefaultBaseline is the committed summary that `chaos` compares with.
const DefaultBaseline = "results/baseline/summary.json"

// Exit codes of chaos and merge (3 and 4 are ExitUsage and ExitSetup).
const (
	ExitMatrixPassed     = 0 // every cell that ran matched, nothing asked for was skipped
	ExitMatrixMismatch   = 1 // some verdict differed from its expectation
	ExitMatrixIncomplete = 2 // evidence was missing (and no verdict differed)
)

const chaosUsage = `Usage: lockchaos chaos [--quick] [--scenarios GLOB[,GLOB...]] [--shard I/N] [--json] [flags]

Runs the catalogue of scenarios and the lock × fault grid, compares every
verdict with its expectation, and writes every run, summary.json and an HTML
index. Every skipped cell is printed with why, and counted in the last line.

Exit status (chaos and merge):
  0  passed: every cell that ran matched its expectation (cells skipped only
     because this build lacks a feature, or the grid has no expectation for
     them, are listed and counted, and fail nothing)
  1  a verdict differed from its expectation (a mismatch) — whatever else
  2  evidence was missing, and no verdict differed: a cell inconclusive
     (unless --allow-inconclusive), interrupted, or skipped although asked
     for by name or for a file that is not there; no cell ran; or (merge)
     a shard was missing
  3  usage error: bad flags, --shard, or merge inputs (the message says what)
  4  setup error: a cell's run could not be set up, or the results could
     not be written (and no verdict differed)
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
	parallel := fs.Int("parallel", DefaultParallel, parallelHelp)
	junit := fs.String("junit", "", "also write JUnit XML (one test case per cell) to `FILE`")
	out := fs.String("out", "", "output directory (default results/<time>)")
	allowInconclusive := fs.Bool("allow-inconclusive", false, "do not fail the matrix on inconclusive cells")
	gridFile := fs.String("grid-file", "", "grid and its expectations (default: the built-in scenarios/grid.yaml)")
	baseline := fs.String("baseline", DefaultBaseline, "committed summary to compare outcomes with, when the file exists")
	backend := fs.String("backend", "", "run every cell on this backend (local, docker), overriding the scenario files")
	image := fs.String("image", "", "container image for --backend docker (default: the backend's)")
	updateBaseline := fs.Bool("update-baseline", false, "write this matrix's outcomes to --baseline (the full matrix only)")
	force := fs.Bool("force", false, "let --out replace the matrix it holds")
	shard := fs.String("shard", "", "run only shard `I/N` of the cells (1 ≤ I ≤ N), chosen by cell name; join the shards' folders with lockchaos merge")
	jsonOut := fs.Bool("json", false, "print the summary as JSON on stdout (the human-readable summary goes to stderr)")
	shrinkCells := fs.Bool("shrink", false, "after the matrix, shrink every mismatch whose run violated into OUT/CELL.shrink (lockchaos shrink)")
	var shrinkBudget time.Duration
	var spans settings.Spans
	spans.DurationVar(fs, &shrinkBudget, "shrink-budget", 5*time.Minute, "time for all the shrinks of --shrink together")
	var lf lockFlags
	lf.bind(fs)
	if code, ok := parse(fs, chaosUsage, args); !ok {
		return code
	}
	_, lockOpts, ok := lf.load("chaos")
	if !ok {
		return ExitUsage
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
	if shrinkBudget <= 0 {
		fmt.Fprintf(os.Stderr, "lockchaos chaos: --shrink-budget %v: want a positive duration such as 5m\n", shrinkBudget)
		return ExitUsage
	}
	fromFiles := *pattern != "" && (strings.HasSuffix(*pattern, ".yaml") || strings.HasSuffix(*pattern, ".yml"))
	withGrid := *grid && ((!*quick && !fromFiles) || set["grid"])
	if *updateBaseline && (*quick || *pattern != "" || !withGrid || *shard != "") {
		fmt.Fprintln(os.Stderr, "lockchaos chaos: --update-baseline records the full matrix: leave out --quick, --scenarios, --shard and --grid=false (or merge the shards first)")
		return ExitUsage
	}
	sh, ok := shardFlag("chaos", *shard)
	if !ok {
		return ExitUsage
	}

	opts := scenarios.PlanOptions{Quick: *quick, Backend: *backend, Image: *image, Validate: runner.Validate}
	if fromFiles {
		opts.Named = !strings.ContainsAny(*pattern, "*?[")
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
	matrix, err := scenarios.Plan(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos chaos:", err)
		return ExitUsage
	}
	for i := range matrix {
		matrix[i].Config = matrix[i].Config.WithOptions(lockOpts)
	}
	cells := matrix
	if sh != nil {
		cells = scenarios.ShardOf(matrix, sh.Index, sh.Count)
	}

	if dir, err := outFolder(*out, ""); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos chaos: results folder:", err)
		return ExitSetup
	} else {
		*out = dir
	}
	defer markLatest(*out) // once it holds its result
	if code, ok := claimOut("chaos", *out, scenarios.SummaryFile, "a matrix", *force, true); !ok {
		return code
	}
	printPlan(os.Stderr, cells, *parallel, *out)
	if sh != nil {
		fmt.Fprintf(os.Stderr, "  shard %s: %d of the matrix's %d cells (chosen by name; lockchaos merge joins the shards)\n", sh, len(cells), len(matrix))
	}

	ctx, stop := signalContext()
	defer stop()
	sum := scenarios.Execute(ctx, cells, scenarios.ExecOptions{
		Out: *out, Force: *force, Parallel: *parallel, AllowInconclusive: *allowInconclusive, Quick: *quick,
		Progress: os.Stderr, Shard: sh, Matrix: matrix, Run: runner.Run,
		AfterRun: func(dir string) error { _, err := writeRunReport(dir); return err },
	})
	code := finishMatrix("chaos", sum, *out, finishOptions{
		JUnit: *junit, Baseline: *baseline, BaselineExplicit: set["baseline"], UpdateBaseline: *updateBaseline, JSON: *jsonOut,
	})
	if *shrinkCells && shrinkMismatches(ctx, sum, *out, shrinkBudget) > 0 {
		if _, err := writeIndex(*out, sum); err != nil { // now with the shrinks' links
			fmt.Fprintln(os.Stderr, "lockchaos chaos:", err)
		}
	}
	return code
}

// finishOptions say what finishMatrix writes besides summary.json and
// index.html.
type finishOptions struct {
	JUnit            string
	Baseline         string
	BaselineExplicit bool
	UpdateBaseline   bool
	JSON             bool
	// MissingShards are the shards a merge lacked.
	MissingShards []string
}

// matrixJSON is what --json prints: the summary, and where its files are
// and how the command exits.
type matrixJSON struct {
	scenarios.Summary
	Exit            int      `json:"exit"`
	Out             string   `json:"out"`
	Index           string   `json:"index,omitempty"`
	JUnit           string   `json:"junit,omitempty"`
	BaselineFile    string   `json:"baseline_file,omitempty"`
	BaselineChanges []string `json:"baseline_changes"`
	MissingShards   []string `json:"missing_shards,omitempty"`
}

// finishMatrix writes a matrix's summary.json, index.html and (when asked)
// JUnit XML to out, prints its summary and its changes since the baseline,
// and returns chaos's exit code for it.
func finishMatrix(cmd string, sum scenarios.Summary, out string, o finishOptions) int {
	human := io.Writer(os.Stdout)
	if o.JSON {
		human = os.Stderr
	}
	var writeErrs []error
	if err := sum.Write(out); err != nil {
		writeErrs = append(writeErrs, err)
	}
	index, err := writeIndex(out, sum)
	if err != nil {
		writeErrs = append(writeErrs, err)
	}
	if o.JUnit != "" {
		if err := sum.JUnit(o.JUnit, out); err != nil {
			writeErrs = append(writeErrs, err)
		}
	}
	printSummary(human, sum)
	changes := compareBaseline(human, sum, o.Baseline, o.BaselineExplicit)
	if o.UpdateBaseline {
		if err := sum.WriteBaseline(o.Baseline); err != nil {
			writeErrs = append(writeErrs, err)
		} else {
			fmt.Fprintf(human, "baseline written: %s\n", o.Baseline)
		}
	}
	fmt.Fprintf(human, "\nruns, summary.json and the HTML index: %s\n", index)
	code := matrixExit(sum)
	if len(writeErrs) > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos %s: %v\n", cmd, errors.Join(writeErrs...))
		if code != ExitMatrixMismatch {
			code = ExitSetup
		}
	}
	if o.JSON {
		doc := matrixJSON{Summary: sum, Exit: code, Out: out, Index: index, JUnit: o.JUnit, BaselineChanges: changes, MissingShards: o.MissingShards}
		if changes != nil {
			doc.BaselineFile = o.Baseline
		}
		if doc.BaselineChanges == nil {
			doc.BaselineChanges = []string{}
		}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			fmt.Fprintf(os.Stderr, "lockchaos %s: --json: %v\n", cmd, err)
			return ExitSetup
		}
		os.Stdout.Write(append(b, '\n'))
	}
	return code
}

// matrixExit is the exit code of a matrix: a mismatch first (it is a
// finding), then a run that could not be set up, then missing evidence.
func matrixExit(s scenarios.Summary) int {
	switch s.Outcome {
	case scenarios.OutcomeMismatch:
		return ExitMatrixMismatch
	case scenarios.OutcomeError:
		return ExitSetup
	case scenarios.OutcomeIncomplete:
		return ExitMatrixIncomplete
	}
	return ExitMatrixPassed
}

// skipNote marks a skipped cell that fails the matrix.
func skipNote(asked bool, reason scenarios.SkipReason) string {
	switch {
	case asked:
		return " (asked for by name: the matrix is incomplete)"
	case reason == scenarios.SkipMissingFile:
		return " (a file is missing: the matrix is incomplete)"
	case reason == scenarios.SkipMissingToolchain:
		return " (an adapter's toolchain or build is missing: the matrix is incomplete)"
	}
	return ""
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
			fmt.Fprintf(w, "  skipped %s%s: %s\n", c.Name, skipNote(c.Asked, c.Reason), c.Why)
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
			fmt.Fprintf(w, "  skipped %s%s: %s\n", c.Name, skipNote(c.Asked, c.Reason), c.Why)
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
	fmt.Fprintf(w, "\n%s in %s\n", tally(s), (time.Duration(s.Seconds * float64(time.Second))).Round(time.Second))
	for _, c := range failed {
		if c.Status == scenarios.StatusSkipped {
			continue
		}
		fmt.Fprintf(w, "  %s %s: expected %s, got %s — %s\n", strings.ToUpper(string(c.Status)), c.Name, orDash(c.Expect), orDash(c.Got), c.Detail)
	}
	skipped, _ := s.Skipped()
	for _, c := range skipped {
		fmt.Fprintf(w, "  SKIPPED %s%s: %s\n", c.Name, skipNote(c.Asked, c.SkipReason), c.Detail)
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
	_, by := s.Skipped()
	var skips []string
	for _, r := range []struct {
		reason scenarios.SkipReason
		what   string
	}{
		{scenarios.SkipMissingFile, "need a file that is not there"},
		{scenarios.SkipMissingToolchain, "need an adapter that is not built or whose toolchain is missing (make adapters)"},
		{scenarios.SkipMissingFeature, "need what this build lacks"},
		{scenarios.SkipNoExpectation, "have no expectation in the grid"},
		{"", "for another reason"},
	} {
		if n := by[r.reason]; n > 0 {
			skips = append(skips, fmt.Sprintf("%d %s", n, r.what))
		}
	}
	counts := " (" + strings.Join(parts, ", ") + ")"
	skipped := ""
	if len(skips) > 0 {
		skipped = fmt.Sprintf(" — %d SKIPPED: %s", s.Counts[scenarios.StatusSkipped], strings.Join(skips, ", "))
	}
	if s.Shard != nil {
		counts += fmt.Sprintf(" [shard %s]", s.Shard)
	}
	switch s.Outcome {
	case scenarios.OutcomeMismatch:
		return fmt.Sprintf("FAILED: %d %s differ from the expectation%s%s", s.Counts[scenarios.StatusMismatch],
			plural(s.Counts[scenarios.StatusMismatch], "verdict", "verdicts"), counts, skipped)
	case scenarios.OutcomeError:
		return "FAILED: a run could not be set up or recorded" + counts + skipped
	case scenarios.OutcomeIncomplete:
		if s.Ran() == 0 && s.Shard == nil {
			return "FAILED: no cell ran" + counts + skipped
		}
		return "INCOMPLETE: evidence is missing, no verdict differed" + counts + skipped
	}
	if skipped != "" {
		return "PASSED with cells skipped: every verdict that ran as expected" + counts + skipped
	}
	return "PASSED: every verdict as expected" + counts
}

// compareBaseline prints the cells whose outcome changed since the
// committed baseline. It is information for review, not a failure: the
// expectations decide that.
func compareBaseline(w io.Writer, s scenarios.Summary, path string, explicit bool) []string {
	base, err := scenarios.ReadSummary(path)
	if err != nil {
		if explicit || !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(w, "baseline: %v\n", err)
		}
		return nil
	}
	changes := s.Changes(base)
	if len(changes) == 0 {
		fmt.Fprintf(w, "baseline %s: no outcome changed\n", path)
		return []string{}
	}
	fmt.Fprintf(w, "baseline %s: %d %s changed (update it with --update-baseline once understood):\n", path, len(changes), plural(len(changes), "outcome", "outcomes"))
	for _, c := range changes {
		fmt.Fprintf(w, "  %s\n", c)
	}
	return changes
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, one, many string) string { return words.Plural(n, one, many) }
