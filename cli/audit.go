package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/audit"
	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/internal/lockargs"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/internal/words"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
)

// Exit status of audit.
const (
	ExitClaimsHeld   = 0 // every claim held (or none was made)
	ExitClaimsBroken = 1 // a claimed fault broke the lock, or no seed of it was evidence
)

const auditUsage = `Usage: lockchaos audit --lock NAME [--seeds K] [--claims F1,F2] [--budget 15m] [--out DIR]
       lockchaos audit --lock-file PATH/lock.yaml [--claims F1,F2] [--junit FILE] [--json] [flags]
       lockchaos audit ... --shard I/N --out DIR    (then: lockchaos merge --out DIR SHARD-DIR...)

A lock's whole safety record in one command. It runs the lock against every
fault of the grid that applies to its store (scenarios/grid.yaml: the
fault's settings there) and the faults' main variants (a pause during the
acquire, a restart with AOF always or delayed past the TTL, a failover that
cuts one replica or none, the holder partitioned; for a quorum lock, faults
that hit a bare majority), K seeds each, stopping a fault that broke it once
--min-seeds seeds ran; beside it, reference locks of the same store under
the same faults (for Redis: token-lua, and etcd-mutex-fenced, a fenced lock
whose token comes from a consensus store). For every fault that broke the
lock it shrinks one violating run to a minimal witness (lockchaos shrink);
for every fault it survived it counts the faults that landed and the
acquires granted during and outside them.

A lock outside the catalogue is given by its manifest (--lock-file, a
lock.yaml anywhere), checked first as lockchaos adapter check checks it
(once per build of the adapter): an adapter that fails the check is
refused, with what failed.

It writes DIR/audit.md (a one-line verdict, a table and a sentence per
broken fault, with the command that reproduces each, run from DIR: a page
to paste into a README),
DIR/audit.html, DIR/audit.json, the comparison it ran (DIR/index.html,
compare.json, the runs) and DIR/witness/FAULT/.

Claims (--claims, or the adapter manifest's claims:) are the faults the
lock says it survives; for a lock outside the catalogue they are what the
table expects of it. A claim is verified on at least 3 seeds of evidence
(--seeds 3 or more). The audit exits 1 when one of them broke it, naming
the witness, or when fewer than 3 of its seeds were evidence ("not enough
evidence for CLAIM"): a library's CI can hold the library to its README
(--junit for its test report, --json for a script).

For a bigger audit, --shard I/N runs only shard I of N of its cells (a
lock against a fault, every seed of it, chosen by the cell's name: each
job of a CI matrix runs the same part on any runner), shrinks the faults
of its share that broke the lock, and judges the claims on its share;
lockchaos merge joins the shards' folders into the audit one run would
have written (audit.md, audit.json, JUnit, its verdict and exit status).
Run every shard with the same flags and build. A --budget bounds each
shard on its own.

Exit status: 0 every claim held (or none made), 1 a claim broke or could
not be verified, 2 interrupted, 3 usage error, 4 a cell could not be set
up or the results could not be written.
`

func cmdAudit(args []string) int {
	fs := newFlags("audit")
	spec := audit.Spec{}
	fs.StringVar(&spec.Lock, "lock", "", "the lock to audit, a `NAME` (lockchaos list locks)")
	nemList := fs.String("nemeses", "all", "the `FAULTS` to run, each a nemesis or NEMESIS:KEY=VALUE[,KEY=VALUE] (all: every column of the grid, none included, and the faults' main variants)")
	refList := fs.String("refs", "", "reference `LOCKS` run beside it, or none (default: the store's, for Redis token-lua,etcd-mutex-fenced)")
	claimList := fs.String("claims", "", "the `FAULTS` the lock claims to survive (default: its manifest's claims)")
	fs.IntVar(&spec.Seeds, "seeds", audit.DefaultSeeds, "seeds per fault at most")
	fs.Int64Var(&spec.FirstSeed, "seed", 1, "first seed")
	fs.IntVar(&spec.MinSeeds, "min-seeds", 3, "seeds a fault that broke the lock runs before it stops")
	fs.IntVar(&spec.Parallel, "parallel", DefaultParallel, parallelHelp+" (shrinks too)")
	fs.IntVar(&spec.ShrinkTries, "shrink-tries", audit.DefaultShrinkTries, "runs of each shrink candidate")
	var spans settings.Spans
	spans.DurationVar(fs, &spec.Budget, "budget", 0, "bound on the whole audit (0: none): the runs get 70 %, the shrinks the rest, and audit.md says what was left out")
	spans.DurationVar(fs, &spec.ShrinkBudget, "shrink-budget", audit.DefaultShrinkBudget, "time for each shrink's search")
	out := fs.String("out", "", "output directory (default results/audit-<time>)")
	force := fs.Bool("force", false, "let --out replace the audit it holds")
	junit := fs.String("junit", "", "also write JUnit XML (one test case per fault; a claimed fault fails when it broke the lock or had too few seeds of evidence) to `FILE`")
	jsonOut := fs.Bool("json", false, "print the audit (audit.json) on stdout (the human-readable lines go to stderr)")
	shard := fs.String("shard", "", "run only shard `I/N` of the audit's cells (1 ≤ I ≤ N), chosen by cell name; join the shards' folders with lockchaos merge")
	var lf lockFlags
	lf.bind(fs)
	if code, ok := parse(fs, auditUsage, args); !ok {
		return code
	}
	given, opts, ok := lf.load("audit")
	if !ok {
		return ExitUsage
	}
	spec.Options = opts
	if spec.Lock == "" && len(given) == 1 {
		spec.Lock = given[0].Name
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos audit: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	if spec.Lock == "" {
		fmt.Fprintln(os.Stderr, "lockchaos audit: --lock: name the lock to audit (lockchaos list locks)")
		return ExitUsage
	}
	sh, ok := shardFlag("audit", *shard)
	if !ok {
		return ExitUsage
	}
	l, err := locks.Lookup(spec.Lock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos audit: --lock:", err)
		return ExitUsage
	}
	spec.Nemeses = splitFaults(*nemList)
	if *nemList == "all" {
		spec.Nemeses = audit.Nemeses(l)
	}
	switch *refList {
	case "":
		spec.Refs = audit.References(l)
	case "none":
		spec.Refs = []string{}
	default:
		spec.Refs = splitList(*refList)
	}
	spec.Claims = splitFaults(*claimList)
	if *claimList == "" && l.Adapter != nil {
		spec.Claims = l.Adapter.Claims
	}
	if err := spec.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos audit:", err)
		return ExitUsage
	}
	cspec := spec.Compare()
	if err := cspec.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos audit:", strings.NewReplacer("--locks", "--lock/--refs").Replace(err.Error()))
		return ExitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	if locks.GivenFile(l.Name) != "" {
		if code, ok := gateAdapter(ctx, "audit", l, os.Stderr); !ok {
			return code
		}
	}
	g, err := scenarios.LoadGrid()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos audit:", err)
		return ExitSetup
	}
	cells := compare.Plan(cspec, g, nil, scenarios.Variant{}, runner.Validate)
	for _, c := range cells {
		if c.Lock == spec.Lock && c.Skip != "" {
			for _, claim := range spec.Claims {
				if claim == c.Nemesis {
					fmt.Fprintf(os.Stderr, "lockchaos audit: --claims %s: the fault cannot run against %s (%s): %s\n", claim, spec.Lock, c.Skip, firstLine(c.Why))
					return ExitUsage
				}
			}
		}
	}
	var na []string
	for _, c := range cells {
		if c.Lock == spec.Lock && c.Skip != "" {
			na = append(na, c.Nemesis)
		}
	}
	if len(na) > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos audit: %d of %d faults apply to %s; not %s (audit.md says why)\n", len(spec.Nemeses)-len(na), len(spec.Nemeses), spec.Lock, strings.Join(na, ", "))
	}
	planned := cells
	if sh != nil {
		cells = compare.ShardOf(planned, sh.Index, sh.Count)
		fmt.Fprintf(os.Stderr, "lockchaos audit: shard %s: %d of the audit's %d cells (chosen by name; lockchaos merge joins the shards)\n", sh, len(cells), len(planned))
	}
	if dir, err := outFolder(*out, "audit"); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos audit: results folder:", err)
		return ExitSetup
	} else {
		*out = dir
	}
	defer markLatest(*out) // once it holds its result
	if code, ok := claimOut("audit", *out, rundir.AuditJSONFile, "an audit", *force, true); !ok {
		return code
	}
	expect, from := g.ExpectOf(spec.Lock)
	a, cmp := audit.Run(ctx, spec, cells, audit.Options{Expect: expect, ExpectFrom: from, Options: compare.Options{
		Out: *out, Force: *force, Progress: os.Stderr, Run: runner.Run,
		AfterRun: func(dir string) error { _, err := writeRunReport(dir); return err }}})
	if sh != nil {
		cmp.MarkShard(*sh, planned)
		a.Shard = cmp.Shard
	}
	a.Command = auditCommand(spec, *claimList != "", sh, *out)
	return finishAudit("audit", a, cmp, *out, *junit, *jsonOut, nil)
}

// finishAudit writes the audit a (and the comparison it ran, cmp) to out,
// prints it (on stdout, or on stderr with --json, which prints audit.json
// on stdout) and returns audit's exit status: the one place that says how
// an audit ends, for an audit and for a merge of its shards (missing:
// the shards the merge lacked).
func finishAudit(cmd string, a audit.Audit, cmp compare.Comparison, out, junit string, jsonOut bool, missing []string) int {
	cmp.Command = rundir.Program() + " compare --rerun " + shellwords.Quote(out)
	var human io.Writer = os.Stdout
	if jsonOut {
		human = os.Stderr
	}
	var writeErrs []error
	if err := cmp.Write(out); err != nil {
		writeErrs = append(writeErrs, err)
	}
	if _, err := compare.WriteIndex(out, cmp); err != nil {
		writeErrs = append(writeErrs, err)
	}
	if err := a.Write(out); err != nil {
		writeErrs = append(writeErrs, err)
	}
	if junit != "" {
		if err := a.Matrix().JUnit(junit, out); err != nil {
			writeErrs = append(writeErrs, err)
		}
	}
	printAudit(human, a, out)
	if jsonOut {
		if b, err := json.MarshalIndent(a, "", "  "); err != nil {
			writeErrs = append(writeErrs, err)
		} else {
			os.Stdout.Write(append(b, '\n'))
		}
	}
	switch {
	case len(writeErrs) > 0:
		fmt.Fprintf(os.Stderr, "lockchaos %s: %v\n", cmd, errors.Join(writeErrs...))
		return ExitSetup
	case len(missing) > 0:
		fmt.Fprintf(os.Stderr, "lockchaos %s: shard %s missing: its faults did not run (the audit is incomplete)\n", cmd, joinComma(missing))
		return ExitMatrixIncomplete
	case a.Interrupted:
		return ExitMatrixIncomplete
	case len(a.ClaimsBroken) > 0:
		return ExitClaimsBroken
	}
	for _, c := range a.Classes {
		if c.Status == audit.Error {
			fmt.Fprintf(os.Stderr, "lockchaos %s: %s could not run against %s: %s\n", cmd, c.Nemesis, a.Spec.Lock, firstLine(c.Why))
			return ExitSetup
		}
	}
	if len(a.ClaimsUnverified) > 0 {
		return ExitClaimsBroken
	}
	return ExitClaimsHeld
}

// auditCommand is the command line that repeats the audit from its folder
// out, into a folder beside it.
func auditCommand(s audit.Spec, claims bool, sh *scenarios.Shard, out string) string {
	c := fmt.Sprintf("%s audit --lock %s%s%s --seeds %d --seed %d --nemeses %s --refs %s", rundir.PortableProgram(), s.Lock, lockargs.FileArgs(out, s.Lock), lockargs.OptArgs(s.Options), s.Seeds, s.FirstSeed,
		strings.Join(s.Nemeses, ","), orNone(strings.Join(s.Refs, ",")))
	if claims {
		c += " --claims " + strings.Join(s.Claims, ",")
	}
	if s.Budget > 0 {
		c += " --budget " + s.Budget.String()
	}
	if sh != nil {
		c += " --shard " + sh.String()
	}
	return c + " --out " + shellwords.Quote("../"+filepath.Base(filepath.Clean(out))+"-again")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// printAudit prints a line per fault, then the claims, to w.
func printAudit(w io.Writer, a audit.Audit, out string) {
	fmt.Fprintf(w, "\naudit of %s (%s), %s, up to %s each, %s\n", a.Spec.Lock, a.Store, words.Count(len(a.Classes), "fault", "faults"), words.Count(a.Spec.Seeds, "seed", "seeds"),
		(time.Duration(a.Seconds) * time.Second).Round(time.Second))
	for _, c := range a.Classes {
		line := fmt.Sprintf("  %-18s %-12s", c.Nemesis, c.Status)
		switch c.Status {
		case audit.Broken, audit.Held:
			line += fmt.Sprintf(" %d of %s violated", c.Violations, words.Count(c.Violations+c.Safe, "seed", "seeds"))
		default:
			line += " " + firstLine(c.Why)
		}
		if wit := c.Witness; wit != nil {
			line += "; reproduce (in " + out + "): " + wit.Command
		}
		fmt.Fprintln(w, line)
	}
	for _, c := range a.Classes {
		if c.Claimed && c.Status == audit.Broken {
			fmt.Fprintf(w, "CLAIM BROKEN: %s broke %s (witness: %s)\n", c.Nemesis, a.Spec.Lock, witnessPath(out, c.Witness))
		}
	}
	for _, c := range a.Classes {
		if slices.Contains(a.ClaimsUnverified, c.Nemesis) {
			fmt.Fprintf(w, "CLAIM NOT VERIFIED: not enough evidence for %s: %d of the %d seeds of evidence a claim needs\n", c.Nemesis, c.Safe, audit.ClaimSeeds)
		}
	}
	fmt.Fprintln(w, strings.ReplaceAll(a.Verdict(), "**", ""))
	fmt.Fprintf(w, "audit.md, audit.html, audit.json and the runs: %s\n", out)
}

func witnessPath(out string, w *audit.Witness) string {
	switch {
	case w == nil:
		return "none"
	case w.Story != "":
		return filepath.Join(out, w.Story)
	}
	return filepath.Join(out, w.Run)
}
