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

	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

const compareUsage = `Usage: lockchaos compare --locks L1,L2,... [--nemeses N1,N2,...] [--seeds K] [flags] --out DIR
       lockchaos compare --rerun DIR [--out DIR2]
       lockchaos compare ... --shard I/N --out DIR   (then: lockchaos merge --out DIR SHARD-DIR...)

Runs every lock against every fault for K seeds, each seed its own run
(DIR/LOCK+NEMESIS/seedN), and sums the runs up per cell: how often the fault
broke the lock (detection rate, with its 95 % Wilson interval), how soon
(time to the first violation, in TTLs), and at what cost (acquire latency,
holds per second, availability during faults). It writes DIR/compare.csv,
DIR/compare.json and DIR/index.html.

Cells take the grid's settings (scenarios/grid.yaml: each lock's and each
fault's), or, with --scenario, that scenario's with another lock and fault;
--ttl, --hold, --duration, --clients and --keys replace them in every cell.
A cell that has violated stops early once at least --min-seeds of its seeds
ran (its interval then excludes 0); --early-stop=false runs every seed.

--shard I/N runs only shard I of N of the cells (each with all its seeds,
chosen by the cell's name: each job of a CI matrix runs the same part on
any runner); lockchaos merge joins the shards' folders into the
comparison one run would have written. Run every shard with the same
flags and build.

Exit status: 0 every planned run was done (whatever the verdicts: a
comparison has no expectations), 2 interrupted, 3 usage error, 4 a cell
could not be set up or the results could not be written.
`

// DefaultCompareNemeses are the faults compared when --nemeses is left out.
const DefaultCompareNemeses = "none,pause-client,crash-restart,clock-jump,partition"

func cmdCompare(args []string) int {
	fs := newFlags("compare")
	spec := compare.Spec{}
	lockList, nemList := bindCells(fs, &spec, DefaultCompareNemeses, 20)
	fs.BoolVar(&spec.StopOnViolation, "stop-on-violation", false, "end each run soon after its first violation (detection and time to it stay; throughput and availability are then over the shorter run)")
	fs.BoolVar(&spec.EarlyStop, "early-stop", true, "stop a cell once it has violated (its interval excludes 0) and run --min-seeds seeds")
	fs.IntVar(&spec.MinSeeds, "min-seeds", 5, "seeds a cell runs before it may stop early")
	out := fs.String("out", "", "output directory (default results/compare-<time>)")
	force := fs.Bool("force", false, "let --out replace the comparison it holds")
	shard := fs.String("shard", "", "run only shard `I/N` of the cells (1 ≤ I ≤ N), chosen by cell name; join the shards' folders with lockchaos merge")
	rerun := fs.String("rerun", "", "repeat the comparison stored in `DIR` (its compare.json): the same cells, seeds and settings")
	var lf lockFlags
	lf.bind(fs)
	if code, ok := parse(fs, compareUsage, args); !ok {
		return code
	}
	_, opts, ok := lf.load("compare")
	if !ok {
		return ExitUsage
	}
	spec.Options = opts
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos compare: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	sh, ok := shardFlag("compare", *shard)
	if !ok {
		return ExitUsage
	}
	var cells []compare.Cell
	if *rerun != "" {
		given := []string{}
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "rerun" && f.Name != "out" && f.Name != "force" && f.Name != "lock-file" {
				given = append(given, "--"+f.Name)
			}
		})
		if len(given) > 0 {
			fmt.Fprintf(os.Stderr, "lockchaos compare: --rerun repeats the stored comparison as it was: drop %s (only --out, --force and --lock-file may be given)\n", strings.Join(given, ", "))
			return ExitUsage
		}
		old, err := compare.Read(*rerun)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos compare: --rerun:", err)
			return ExitUsage
		}
		spec, cells = old.Spec, old.Cells
		if *out != "" && filepath.Clean(*out) == filepath.Clean(*rerun) {
			fmt.Fprintln(os.Stderr, "lockchaos compare: --rerun: give --out another folder than the comparison it repeats")
			return ExitUsage
		}
	} else {
		var err error
		if cells, err = planCompare(&spec, *lockList, *nemList); err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos compare:", err)
			return ExitUsage
		}
	}
	planned := cells
	if sh != nil {
		cells = compare.ShardOf(planned, sh.Index, sh.Count)
		fmt.Fprintf(os.Stderr, "lockchaos compare: shard %s: %d of the comparison's %d cells (chosen by name; lockchaos merge joins the shards)\n", sh, len(cells), len(planned))
	}
	if dir, err := outFolder(*out, "compare"); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos compare: results folder:", err)
		return ExitSetup
	} else {
		*out = dir
	}
	defer markLatest(*out) // once it holds its result
	if code, ok := claimOut("compare", *out, compare.JSONFile, "a comparison", *force, true); !ok {
		return code
	}
	ready := 0
	for _, c := range cells {
		switch c.Skip {
		case "":
			ready++
		case compare.SkipError:
			fmt.Fprintf(os.Stderr, "  ERROR %s: %s\n", c.Name(), c.Why)
		case compare.SkipNA:
			fmt.Fprintf(os.Stderr, "  n/a %s: %s\n", c.Name(), c.Why)
		}
	}
	fmt.Fprintf(os.Stderr, "lockchaos compare: %d cells (%d locks × %d faults, %d to run), up to %d seeds each, %d runs at a time → %s\n",
		len(cells), len(spec.Locks), len(spec.Nemeses), ready, spec.Seeds, spec.Parallel, *out)

	ctx, stop := signalContext()
	defer stop()
	cmp := compare.Execute(ctx, spec, cells, compare.Options{
		Out: *out, Force: *force, Progress: os.Stderr, Run: runner.Run,
		AfterRun: func(dir string) error { _, err := writeRunReport(dir); return err },
	})
	if sh != nil {
		cmp.MarkShard(*sh, planned)
	}
	return finishCompare("compare", cmp, *out, nil)
}

// bindCells binds the flags that choose a comparison's cells, their seeds
// and their settings: those of compare and margin.
func bindCells(fs *flag.FlagSet, spec *compare.Spec, nemeses string, seeds int) (lockList, nemList *string) {
	lockList = fs.String("locks", "", "comma-separated `LOCKS` (lockchaos list), or all")
	nemList = fs.String("nemeses", nemeses, "comma-separated `FAULTS` (none for the column without faults); NEMESIS:KEY=VALUE sets an option on top of the grid's, e.g. pause-client:phase=acquire, crash-restart:persistence=always")
	fs.IntVar(&spec.Seeds, "seeds", seeds, "seeds per cell at most")
	fs.Int64Var(&spec.FirstSeed, "seed", 1, "first seed; seed k of a cell is SEED+k")
	fs.IntVar(&spec.Parallel, "parallel", DefaultParallel, parallelHelp)
	fs.StringVar(&spec.TTL, "ttl", "", "lease time of every cell, a `DURATION` (default: the grid's, per lock and fault)")
	fs.StringVar(&spec.Hold, "hold", "", "time in each critical section, a `SPAN`: 200ms or 0.2ttl (default: the grid's)")
	fs.StringVar(&spec.Duration, "duration", "", "how long each run's workload runs, a `SPAN`: 5s or 10ttl (default: the grid's)")
	fs.IntVar(&spec.Clients, "clients", 0, "client processes of every cell (0: the grid's)")
	fs.IntVar(&spec.Keys, "keys", 0, "lock keys of every cell (0: the grid's)")
	fs.StringVar(&spec.Scenario, "scenario", "", "vary the scenario in `FILE` (or a built-in one's name) instead of the grid's cells; --nemeses scenario keeps its own faults")
	fs.StringVar(&spec.Backend, "backend", "", "run every cell on this backend (local, docker)")
	fs.StringVar(&spec.Image, "image", "", "container image for --backend docker")
	return lockList, nemList
}

// finishCompare writes the comparison cmp to out, prints it and returns
// compare's exit status: for a comparison and for a merge of its shards
// (missing: the shards the merge lacked).
func finishCompare(cmd string, cmp compare.Comparison, out string, missing []string) int {
	cmp.Command = rundir.Program() + " compare --rerun " + shellwords.Quote(out)
	var writeErrs []error
	if err := cmp.Write(out); err != nil {
		writeErrs = append(writeErrs, err)
	}
	index, err := compare.WriteIndex(out, cmp)
	if err != nil {
		writeErrs = append(writeErrs, err)
	}
	printComparison(os.Stdout, cmp)
	fmt.Fprintf(os.Stdout, "\ncompare.csv, compare.json, the runs and the HTML index: %s\n", index)
	setupErrs := 0
	for _, c := range cmp.Cells {
		if c.Skip == compare.SkipError {
			setupErrs++
		}
	}
	switch {
	case len(writeErrs) > 0:
		fmt.Fprintf(os.Stderr, "lockchaos %s: %v\n", cmd, errors.Join(writeErrs...))
		return ExitSetup
	case len(missing) > 0:
		fmt.Fprintf(os.Stderr, "lockchaos %s: shard %s missing: its cells did not run (the comparison is incomplete)\n", cmd, joinComma(missing))
		return ExitMatrixIncomplete
	case cmp.Interrupted:
		return ExitMatrixIncomplete
	case setupErrs > 0:
		return ExitSetup
	}
	return 0
}

// planCompare checks the flags and lists the cells.
func planCompare(spec *compare.Spec, lockList, nemList string) ([]compare.Cell, error) {
	var v scenarios.Variant
	if spec.TTL != "" {
		s, err := option.ParseSpan(spec.TTL)
		switch {
		case err != nil:
			return nil, fmt.Errorf("--ttl %s: %w", spec.TTL, err)
		case s.TTL != 0:
			return nil, fmt.Errorf("--ttl %s: want a plain duration such as 300ms (not a multiple of the TTL)", spec.TTL)
		}
		v.TTL = &s
	}
	for _, f := range []struct {
		name, val string
		dst       **option.Span
	}{{"hold", spec.Hold, &v.Hold}, {"duration", spec.Duration, &v.Duration}} {
		if f.val == "" {
			continue
		}
		s, err := option.ParseSpan(f.val)
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %w", f.name, f.val, err)
		}
		*f.dst = &s
	}
	if spec.Clients < 0 || spec.Keys < 0 {
		return nil, errors.New("--clients and --keys: want a positive number, or 0 for the grid's")
	}
	v.Clients, v.Keys = spec.Clients, spec.Keys
	spec.Locks, spec.Nemeses = splitList(lockList), splitFaults(nemList)
	if lockList == "all" {
		spec.Locks, _ = scenarios.GridAxes()
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	g, err := scenarios.LoadGrid()
	if err != nil {
		return nil, err
	}
	var sc *scenarios.Scenario
	if spec.Scenario != "" {
		s, err := scenarios.Load(spec.Scenario)
		if err != nil {
			return nil, fmt.Errorf("--scenario: %w", err)
		}
		sc = &s
	}
	return compare.Plan(*spec, g, sc, v, runner.Validate), nil
}

// splitFaults splits a list of fault columns: a piece KEY=VALUE after a
// NEMESIS:KEY=VALUE is another option of that column
// (crash-restart:persistence=always,delay=1.5ttl is one column).
func splitFaults(s string) []string {
	var out []string
	for _, x := range splitList(s) {
		if n := len(out); n > 0 && strings.Contains(out[n-1], ":") && strings.Contains(x, "=") && !strings.Contains(x, ":") {
			out[n-1] += "," + x
			continue
		}
		out = append(out, x)
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// printComparison prints a row per cell.
func printComparison(w io.Writer, c compare.Comparison) {
	fmt.Fprintf(w, "\n%-20s %-16s %6s %5s %-22s %9s %8s %8s %9s\n", "LOCK", "NEMESIS", "SEEDS", "VIOL", "DETECTION [95% CI]", "TTFV/TTL", "HOLDS/s", "ACQ OK", "ACQ p50")
	pct := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", *p*100)
	}
	for _, r := range c.Rows {
		if r.Status != compare.StatusRan {
			fmt.Fprintf(w, "%-20s %-16s %s: %s\n", r.Lock, r.Nemesis, r.Status, firstLine(r.Why))
			continue
		}
		det := "no evidence"
		if r.DetectionRate != nil {
			det = fmt.Sprintf("%s [%s, %s]", pct(r.DetectionRate), pct(r.CILow), pct(r.CIHigh))
		}
		ttfv := "-"
		if r.TTFVMedianTTL != nil {
			ttfv = fmt.Sprintf("%.2f", *r.TTFVMedianTTL)
		}
		seeds := fmt.Sprint(r.Seeds)
		if r.StoppedEarly {
			seeds += "*"
		}
		fmt.Fprintf(w, "%-20s %-16s %6s %5d %-22s %9s %8.1f %8s %7.1fms\n", r.Lock, r.Nemesis, seeds, r.Violations, det, ttfv, r.HoldsPerS, pct(r.AcquireOKRate), r.AcquireP50ms)
	}
	for _, r := range c.Rows {
		if r.StoppedEarly {
			fmt.Fprintln(w, "(* stopped early: the cell violated and its interval excludes 0)")
			break
		}
	}
	fmt.Fprintln(w, "Detection rate: seeds that violated / seeds that were evidence (inconclusive seeds are left out).")
	fmt.Fprintf(w, "%s in %s\n", map[bool]string{true: "INTERRUPTED", false: "done"}[c.Interrupted], (time.Duration(c.Seconds * float64(time.Second))).Round(time.Second))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
