package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/runner"
)

const marginUsage = `Usage: lockchaos margin --locks L1,L2,... [--nemeses N1,N2,...] [--vary OPTION --from A --to B] [--seeds K] [--steps S] --out DIR

How large must a fault be to break a lock? For each lock and fault, margin
runs the fault at several sizes — a pause's length, a reply's delay, a
clock's step — and finds by bisection the largest size the lock survived
and the smallest that broke it: "survives a pause of 0.83ttl, breaks at
1.07ttl". Each size runs up to K seeds, stopped at the first violation; a
size survives only when every seed was safe with its fault landed; a size
whose seeds stayed no evidence stops the search there.

The size is the nemesis's option marked as such (lockchaos list NEMESIS
shows it: duration for pause-client, delay for slow-reply, by for
clock-jump...), searched over its default range, or --vary's option
between --from and --to (both multiples of the TTL, both durations, or
numbers). Cells take the grid's settings, as in compare.

It writes DIR/margin.md (a row per lock and fault, then every size run,
with its seeds) and DIR/margin.json; each size's runs are in
DIR/LOCK+NEMESIS.OPTION=SIZE/seedN.

Exit status: 0 every search ran to its end, 2 interrupted, 3 usage error,
4 a cell could not be set up or the results could not be written.
`

func cmdMargin(args []string) int {
	fs := newFlags("margin")
	spec := compare.MarginSpec{}
	lockList, nemList := bindCells(fs, &spec.Spec, "pause-client", 3)
	fs.StringVar(&spec.Vary, "vary", "", "the nemesis `OPTION` to vary (default: the nemesis's size, lockchaos list NEMESIS)")
	fs.StringVar(&spec.From, "from", "", "the smallest size searched (default: the size option's range)")
	fs.StringVar(&spec.To, "to", "", "the largest size searched (default: the size option's range)")
	fs.IntVar(&spec.Steps, "steps", 5, "bisection steps after the two ends (each halves the interval)")
	out := fs.String("out", "", "output directory (default results/margin-<time>)")
	force := fs.Bool("force", false, "let --out replace the margins it holds")
	var lf lockFlags
	lf.bind(fs)
	if code, ok := parse(fs, marginUsage, args); !ok {
		return code
	}
	_, opts, ok := lf.load("margin")
	if !ok {
		return ExitUsage
	}
	spec.Options = opts
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos margin: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	spec.EarlyStop, spec.MinSeeds = true, 1
	if spec.Steps < 0 || spec.Steps > 20 {
		fmt.Fprintf(os.Stderr, "lockchaos margin: --steps %d: want 0 to 20\n", spec.Steps)
		return ExitUsage
	}
	// The cells as compare would plan them: this checks every flag.
	if _, err := planCompare(&spec.Spec, *lockList, *nemList); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos margin:", err)
		return ExitUsage
	}
	var errs []error
	for _, n := range spec.Nemeses {
		if _, _, _, _, err := spec.ParseRange(n); err != nil {
			errs = append(errs, fmt.Errorf("--nemeses %s: %w", n, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos margin:", strings.ReplaceAll(err.Error(), "\n", "; "))
		return ExitUsage
	}
	if dir, err := outFolder(*out, "margin"); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos margin: results folder:", err)
		return ExitSetup
	} else {
		*out = dir
	}
	defer markLatest(*out) // once it holds its result
	if code, ok := claimOut("margin", *out, compare.MarginJSONFile, "a margin search", *force, true); !ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "lockchaos margin: %d locks × %d faults, %d bisection steps, up to %d seeds a size, %d runs at a time → %s\n",
		len(spec.Locks), len(spec.Nemeses), spec.Steps, spec.Seeds, spec.Parallel, *out)

	ctx, stop := signalContext()
	defer stop()
	ms := compare.FindMargins(ctx, spec, compare.MarginOptions{
		Options: compare.Options{Out: *out, Force: *force, Progress: os.Stderr, Run: runner.Run,
			AfterRun: func(dir string) error { _, err := writeRunReport(dir); return err }},
		Plan: func(one compare.Spec) []compare.Cell {
			cells, err := planCompare(&one, strings.Join(one.Locks, ","), strings.Join(one.Nemeses, ","))
			if err != nil {
				return []compare.Cell{{Lock: one.Locks[0], Nemesis: one.Nemeses[0], Skip: compare.SkipError, Why: err.Error()}}
			}
			return cells
		},
	})
	words := []string{rundir.Program(), "margin"}
	for _, a := range args {
		words = append(words, shellwords.Quote(a))
	}
	ms.Command = strings.Join(words, " ")
	if err := compare.WriteMargins(*out, ms); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos margin:", err)
		return ExitSetup
	}
	fmt.Println()
	setupErrs := 0
	for _, m := range ms.Margins {
		fmt.Printf("%-24s %-20s %s\n", m.Lock, m.Fault(), m.Says())
		if m.Skip == compare.SkipError {
			setupErrs++
		}
	}
	fmt.Printf("\n%s (every size run, with its seeds and runs)\n", filepath.Join(*out, compare.MarginMDFile))
	switch {
	case ms.Interrupted:
		return ExitMatrixIncomplete
	case setupErrs > 0:
		return ExitSetup
	}
	return 0
}
