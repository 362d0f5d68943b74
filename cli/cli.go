// Package cli is lockchaos's command line. It is a package, not only a main,
// so a researcher can build their own binary with extra locks or nemeses
// registered (import them, then call cli.Main): workers re-execute the same
// binary and see the same registrations.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/lockchaos/lockchaos/internal/suggest"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/settings"
	// The stores in folders of their own register themselves.
	_ "github.com/lockchaos/lockchaos/stores"

	"github.com/lockchaos/lockchaos/adaptercheck"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/workload"
)

// Exit codes.
const (
	ExitSafe         = 0
	ExitViolation    = 1
	ExitInconclusive = 2
	ExitUsage        = 3 // bad flags or names: the message says what to fix
	ExitSetup        = 4 // the run could not be set up or recorded
)

const usageText = `lockchaos finds out whether a distributed lock really gives mutual exclusion.

Usage:
  lockchaos run   --lock NAME [--nemesis NAME[,NAME...]] [flags]   one run, checked
  lockchaos run   --scenario FILE|NAME [flags]                     one scenario (file or built-in name); flags override its fields
  lockchaos chaos [--quick] [--scenarios GLOB] [--parallel N]      the catalogue and the lock × fault grid
                  [--junit FILE] [--out DIR] [--allow-inconclusive] [--backend docker]
                  [--shard I/N] [--json] [--shrink]
  lockchaos merge DIR...                                           join the folders of chaos, audit or compare --shard runs
  lockchaos compare --locks L1,L2 [--nemeses N1,N2] [--seeds K]    locks side by side: detection rate, time to
                  [--out DIR] [--shard I/N] | --rerun DIR          violation, throughput, availability (CSV, HTML)
  lockchaos margin --locks L1,L2 [--nemeses N1,N2] [--seeds K]     how large a fault must be to break each lock: the
                  [--vary OPTION --from A --to B] [--out DIR]      largest size survived, the smallest that broke it
  lockchaos shrink DIR [--tries K] [--budget 10m] [--out DIR2]     the smallest run that still violates: a scenario
                                                                   (DIR2/minimal.yaml), its witness, its run
  lockchaos audit --lock NAME [--seeds K] [--claims F1,F2]         a lock's whole safety record: every fault, a minimal
                  [--budget 15m] [--out DIR] [--junit FILE]        witness of each that breaks it, its claims held to
                  [--shard I/N]
  lockchaos check DIR                                              re-check a stored run
  lockchaos report DIR                                             render a run's or a matrix's HTML again
  lockchaos list [locks|nemeses|stores|scenarios|NAME]             what this build has; NAME: its options
  lockchaos adapter check NAME|FILE | build [NAME...]              test an adapter lock (any language) / build them
  lockchaos runs [--all]                                           past runs, newest first (results/latest: the newest with a result)
  lockchaos clean [--run ID]                                       remove what a killed run left behind
  lockchaos version                                                this build and its lock libraries
  lockchaos completion bash|zsh|fish                               shell completion (source <(lockchaos completion bash))
  lockchaos help COMMAND                                           a command's usage and flags (or COMMAND -h)

Exit status of run and check: 0 safe, 1 violation, 2 inconclusive,
3 usage error, 4 setup error. chaos and merge of its shards: 0 passed,
1 a verdict differed from its expectation, 2 evidence was missing,
3 usage, 4 setup (lockchaos chaos -h). shrink: 0 minimal found, 1 not
reproduced, 2 interrupted, 3, 4.
audit and merge of its shards: 0 every claim held, 1 a claim broke or was
not verified, 2 interrupted or a shard missing, 3, 4.

run, chaos, compare, audit and shrink take --lock-file PATH/lock.yaml (an
adapter lock anywhere, by its name beside the shipped ones; repeatable)
and --opt NAME.KEY=VALUE.

Run 'lockchaos help run' for the flags of run.
`

// commands are the subcommands by name (version, worker and help are
// answered by Main itself).
var commands map[string]func(args []string) int

func init() {
	commands = map[string]func([]string) int{
		"run":        cmdRun,
		"chaos":      cmdChaos,
		"compare":    cmdCompare,
		"margin":     cmdMargin,
		"merge":      cmdMerge,
		"shrink":     cmdShrink,
		"audit":      cmdAudit,
		"check":      cmdCheck,
		"report":     cmdReport,
		"clean":      cmdClean,
		"adapter":    cmdAdapter,
		"list":       cmdList,
		"runs":       cmdRuns,
		"completion": cmdCompletion,
	}
}

// commandNames is every command a user may type, for "did you mean".
func commandNames() []string {
	names := []string{"version", "help"}
	for n := range commands {
		names = append(names, n)
	}
	return names
}

// Main runs the command line and returns the exit code.
func Main(args []string) int {
	if os.Getenv(workload.RoleEnv) == "worker" {
		return workload.Main()
	}
	rundir.SetProgram(os.Args[0])
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usageText)
		return ExitUsage
	}
	if cmd, ok := commands[args[0]]; ok {
		return cmd(args[1:])
	}
	switch args[0] {
	case "version", "--version":
		return cmdVersion(os.Stdout)
	case "worker":
		return workload.Main()
	case "__complete":
		return cmdComplete(args[1:])
	case "-h", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			if args[1] == "help" || args[1] == "worker" {
				fmt.Print(usageText)
				return 0
			}
			return Main([]string{args[1], "-h"})
		}
		fmt.Print(usageText)
		return 0
	}
	fmt.Fprintf(os.Stderr, "lockchaos: unknown command %q%s\n\n%s", args[0], suggest.Hint(args[0], commandNames(), "%s"), usageText)
	return ExitUsage
}

// signalContext is cancelled by the first SIGINT or SIGTERM, which stops the
// run in order; a second one kills the coordinator at once (its children die
// with it through Pdeathsig).
//
// A closed stdout (`lockchaos run … | head -1`) does not end the run: with
// SIGPIPE caught, a write to it fails instead of killing the coordinator,
// and the run finishes and writes its result. (A caught signal's handler is
// reset when a worker is exec'd, unlike an ignored one: workers keep the
// default.)
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(os.Stderr, "lockchaos: %v: healing faults, stopping workers and nodes (again to abort)\n", s)
			signal.Stop(sigs)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}

const runUsage = `Usage: lockchaos run --lock NAME [--nemesis NAME[,NAME...]] [flags]
       lockchaos run --scenario FILE|NAME [flags]    (a file or a built-in scenario's name; flags given override it)
       lockchaos run --replay DIR [--out DIR]   (the stored run again, step by step)

Runs one experiment: clients contend for the lock while the nemeses inject
faults, and the recorded history is checked. Exit status: 0 safe,
1 violation, 2 inconclusive, 3 usage error, 4 setup error.
A run that asks for a nemesis is evidence only if one of its faults landed
(hit a live lease the way its nemesis aims to): when none did, or no fault
was injected at all, the run is inconclusive (exit 2) with the reason, never
safe; a violation it proves still stands. A run without --nemesis is a plain
run. With --scenario, a run that is no evidence either way about what the
scenario expects (a violation that only a stall of the harness made, faults
that never landed: what chaos counts as inconclusive) exits 2 and says
"no evidence: …" after its verdict line. The final line also says what went wrong beside the verdict: the
lock's errors by kind, a problem the coordinator recorded ("degraded"), a
lease in force other than --ttl.
Times are durations (300ms, 2s) or, where a SPAN is taken, multiples of the
TTL (1.5ttl).
`

func cmdRun(args []string) int {
	fs := newFlags("run")
	var (
		cfg     = settings.Defaults()
		spans   settings.Spans
		nemeses string
		lf      lockFlags
		scen    = fs.String("scenario", "", "run the scenario in `FILE` (YAML, see scenarios/), or the built-in one of that name (pause-past-ttl-token-lua); the flags given explicitly override its fields")
		quiet   = fs.Bool("quiet", false, "print no progress while the run goes: only the verdict lines at the end")
		replay  = fs.String("replay", "", "run the run stored in `DIR` again, with the fault schedule it executed (DIR/config.json, DIR/schedule.json); --out gives the new folder")
	)
	settings.BindFlags(fs, &cfg, &spans)
	fs.StringVar(&nemeses, "nemesis", "none", "comma-separated faults to inject, or none")
	force := fs.Bool("force", false, "let --out replace the run it holds, once that run has ended")
	lf.bind(fs)
	junit := fs.String("junit", "", "also write JUnit XML (one test case: the run, expecting its scenario's verdict, else safe) to `FILE`")
	jsonOut := fs.Bool("json", false, "print the run's result (result.json) on stdout (the human-readable lines go to stderr)")
	if code, ok := parse(fs, runUsage, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos run: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	given, split, ok := lf.load("run")
	if !ok {
		return ExitUsage
	}
	var sc *scenarios.Scenario
	if *replay != "" {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for name := range given {
			switch name {
			case "replay", "out", "force", "lock-file", "junit", "json", "quiet":
			default:
				fmt.Fprintf(os.Stderr, "lockchaos run: --replay takes the stored run as it was: drop --%s (only --out, --force, --lock-file, --junit, --json and --quiet may be given)\n", name)
				return ExitUsage
			}
		}
		out := cfg.Out
		var err error
		if cfg, err = settings.LoadReplay(*replay); err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos run:", err)
			return ExitUsage
		}
		cfg.Out = out
	} else if *scen != "" {
		s, err := applyScenario(fs, &cfg, *scen, nemeses, split, cfg.Seed)
		if err == nil {
			err = runLockFile(&cfg, given)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos run:", err)
			return ExitUsage
		}
		sc = &s
	} else {
		if err := runLockFile(&cfg, given); err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos run:", err)
			return ExitUsage
		}
		cfg.Nemeses = strings.Split(nemeses, ",")
		name := cfg.Lock
		if cfg.LockCmd != "" {
			name = "cmd"
		}
		cfg.LockOptions = split[name]
		delete(split, name)
		cfg.NemesisOptions = split
	}
	if *replay == "" {
		if err := spans.Resolve(cfg.TTL); err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos run:", err)
			return ExitUsage
		}
	}
	if *replay != "" && filepath.Clean(cfg.Out) == filepath.Clean(*replay) {
		fmt.Fprintln(os.Stderr, "lockchaos run: --replay: give --out another folder than the run it replays")
		return ExitUsage
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano() % 1_000_000
	}
	outGiven := cfg.Out != ""
	var err error
	if cfg.Out, err = outFolder(cfg.Out, "run"); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos run: results folder:", err)
		return ExitSetup
	}
	cfg.Force = *force
	if !*quiet {
		cfg.Progress = os.Stderr
	}
	ctx, stop := signalContext()
	defer stop()
	if code, ok := checkAdapterFirst(ctx, cfg, *quiet); !ok {
		return code
	}
	res, err := runner.Run(ctx, cfg)
	if held := (*rundir.HeldError)(nil); errors.As(err, &held) && outGiven {
		held.Flag = "--out"
	}
	var human io.Writer = os.Stdout
	if *jsonOut {
		human = os.Stderr
	}
	code := report(human, cfg.Out, res, err)
	code = afterRun(human, cfg.Out, res, err, sc, code)
	if *junit != "" && res.Verdict != "" {
		if err := runMatrix(res, sc, code).JUnit(*junit, cfg.Out); err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos run: --junit:", err)
			code = ExitSetup
		}
	}
	if *jsonOut && res.Verdict != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos run: --json:", err)
			return ExitSetup
		}
		os.Stdout.Write(append(b, '\n'))
	}
	if !outGiven && res.Verdict == "" {
		os.Remove(cfg.Out) // the folder made for it, if the run left it empty
	}
	markLatest(cfg.Out)
	return code
}

// runMatrix is a run as a matrix of one cell, for the one JUnit writer
// (scenarios.Summary.JUnit): a run of a scenario that expects a verdict is
// judged by that expectation (Expectation.Assess, as afterRun judges it:
// its exit status is the verdict's); any other run expects safe, and
// passes as its exit status says.
func runMatrix(res checker.Result, sc *scenarios.Scenario, code int) scenarios.Summary {
	nem := nemesisList(res.Nemesis)
	c := scenarios.CellResult{Name: scenarios.GridName(res.Lock, nem), Kind: scenarios.KindRun, Lock: res.Lock, Nemesis: nem,
		Expect: string(checker.Safe), Got: string(res.Verdict), Verdict: string(res.Verdict), Seed: res.Seed, Detail: res.Summary, Dir: ".", Seconds: res.WorkloadMs / 1000}
	switch {
	case code == ExitSetup:
		c.Status = scenarios.StatusError
	case sc != nil && sc.Expect.Verdict != "":
		c.Name, c.Expect = sc.Name, sc.Expect.String()
		c.Status, _ = sc.Expect.Assess(res, len(res.Nemesis) > 0)
	case code == ExitSafe:
		c.Status = scenarios.StatusMatch
	case code == ExitInconclusive:
		c.Status = scenarios.StatusInconclusive
	default:
		c.Status = scenarios.StatusMismatch
	}
	return scenarios.Summary{Locks: []string{res.Lock}, Nemeses: []string{nem}, Cells: []scenarios.CellResult{c}}
}

// runLockFile picks the lock of run's --lock-file: the one given, or of
// several the one --lock names (the others are registered beside it).
func runLockFile(cfg *settings.Run, given []locks.Spec) error {
	switch {
	case len(given) == 0:
		return nil
	case cfg.Lock == "" && len(given) > 1:
		return fmt.Errorf("%d --lock-file given: name the one to run with --lock", len(given))
	case cfg.Lock == "":
		cfg.Lock = given[0].Name
	}
	for _, s := range given {
		if s.Name == cfg.Lock {
			cfg.LockFile = s.Adapter.File
		}
	}
	return nil
}

// report prints the one-line summary and maps the outcome to an exit code.
func report(w io.Writer, dir string, res checker.Result, err error) int {
	if err != nil {
		var ue settings.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "lockchaos:", err)
			return ExitUsage
		}
		fmt.Fprintln(os.Stderr, "lockchaos:", err)
		if res.Verdict == "" {
			return ExitSetup
		}
	}
	summary := res.Summary
	if !strings.HasPrefix(summary, string(res.Verdict)) {
		summary = string(res.Verdict) + ": " + summary
	}
	// The verdict is told even when its file could not be written, and
	// then no path is named as if it held it.
	saved := "→ " + filepath.Join(dir, rundir.ResultFile)
	if unsaved := (*checker.UnsavedError)(nil); errors.As(err, &unsaved) {
		saved = "— " + unsaved.Error()
	}
	fmt.Fprintf(w, "%s (lock %s, nemesis %s, seed %d) %s\n",
		summary, res.Lock, nemesisList(res.Nemesis), res.Seed, saved)
	if err != nil {
		return ExitSetup
	}
	return verdictCode(res.Verdict)
}

// checkAdapterFirst checks the adapter of --lock-file or --lock-cmd before
// its run (gateAdapter). A configuration the run refuses anyway is left to
// the run to explain.
func checkAdapterFirst(ctx context.Context, cfg settings.Run, quiet bool) (int, bool) {
	if cfg.LockFile == "" && cfg.LockCmd == "" || runner.Validate(cfg) != nil {
		return 0, true
	}
	spec, err := cfg.LockSpec()
	if err != nil || spec.Adapter == nil {
		return 0, true
	}
	var w io.Writer = os.Stderr
	if quiet {
		w = io.Discard
	}
	return gateAdapter(ctx, "run", spec, w)
}

// gateAdapter checks spec's adapter, a lock given by --lock-file or
// --lock-cmd, before cmd runs it, unless this build of it passed before
// (adaptercheck.Gate): a run of an adapter that fails `lockchaos adapter
// check` is no evidence. A failed check is a usage error (3), in the
// check's own words: the adapter needs fixing. The shipped adapters, taken
// by name, are not checked here: CI checks each of them (adaptercheck's
// doc says why).
func gateAdapter(ctx context.Context, cmd string, spec locks.Spec, w io.Writer) (int, bool) {
	err := adaptercheck.Gate(ctx, spec.Adapter, w)
	var failed *adaptercheck.FailedError
	switch {
	case errors.As(err, &failed):
		fmt.Fprintf(os.Stderr, "lockchaos %s: %v\n", cmd, err)
		return ExitUsage, false
	case err != nil:
		fmt.Fprintf(os.Stderr, "lockchaos %s: could not check adapter %s before its run: %v\n", cmd, spec.Name, err)
		return ExitSetup, false
	}
	return 0, true
}

func nemesisList(ns []string) string {
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ",")
}

func verdictCode(v checker.Verdict) int {
	switch v {
	case checker.Safe:
		return ExitSafe
	case checker.Violation:
		return ExitViolation
	}
	return ExitInconclusive
}

const checkUsage = `Usage: lockchaos check [--check-timeout DURATION] DIR

Checks a stored run again from its history (DIR holds history.jsonl) and
rewrites DIR/result.json. Exit status as for run. When result.json cannot
be written (a read-only folder, a full disk) the verdict is printed all the
same, saying where it was not saved and why, and the exit status is 4.
`

func cmdCheck(args []string) int {
	fs := newFlags("check")
	var timeout time.Duration
	var spans settings.Spans
	spans.DurationVar(fs, &timeout, "check-timeout", 0, "porcupine time limit (0: 60s)")
	if code, ok := parse(fs, checkUsage, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: lockchaos check DIR   (DIR holds history.jsonl)")
		return ExitUsage
	}
	dir := fs.Arg(0)
	st, err := os.Stat(filepath.Join(dir, "history.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		// A wrong argument, not a broken run: a usage error.
		fmt.Fprintf(os.Stderr, "lockchaos check: %s holds no history.jsonl: give the folder of a run (results/run-…, or a chaos matrix's cell)\n", dir)
		return ExitUsage
	}
	if err == nil && st.Size() > 64<<20 {
		// Minutes for an hour's history: say what is going on.
		fmt.Fprintf(os.Stderr, "lockchaos check: reading %s/history.jsonl (%.1f GB) twice, as a stream…\n", dir, float64(st.Size())/1e9)
	}
	began := time.Now()
	res, err := checker.CheckDir(dir, timeout)
	if time.Since(began) > 10*time.Second {
		fmt.Fprintf(os.Stderr, "lockchaos check: checked in %s\n", time.Since(began).Round(time.Second))
	}
	if err != nil && res.Verdict == "" {
		fmt.Fprintln(os.Stderr, "lockchaos check:", err)
		return ExitSetup
	}
	code := report(os.Stdout, dir, res, err) // a verdict not saved is told, and exits 4
	return afterRun(os.Stdout, dir, res, err, nil, code)
}

// adapterNote marks an adapter lock in the list: where its manifest is.
func adapterNote(s locks.Spec) string {
	if s.Adapter == nil {
		return ""
	}
	rel := s.Adapter.File
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, rel); err == nil && !strings.HasPrefix(r, "..") {
			rel = r
		}
	}
	if i := strings.Index(rel, "adapters/"); i >= 0 {
		rel = rel[i:]
	}
	if s.Adapter.Carried() {
		// Unpacked into the cache (locks.AdaptersDir): the folder it has
		// in the repository.
		rel = "adapters/" + filepath.Base(filepath.Dir(s.Adapter.Dir)) + "/" + filepath.Base(s.Adapter.Dir) + "/" + filepath.Base(rel)
	}
	note := ", adapter: " + rel
	if why := s.Adapter.Missing(); why != "" {
		note += "; " + why
	}
	return note
}

// listMarkdown writes the catalogue of every lock and nemesis, with their
// options, as Markdown: docs/OPTIONS.md is this output (make docs), so the
// docs say what the code declares — a lock's library and version, how it
// is known to break, its options — and a new lock or store needs no docs
// row written by hand.
func listMarkdown(w io.Writer) int {
	fmt.Fprint(w, "# Locks, nemeses and their options\n\n"+
		"Generated by `lockchaos list --markdown` (`make docs`) from what the code declares; do not edit.\n"+
		"Set an option with `--opt NAME.KEY=VALUE`, or under `options:` in a scenario file. A duration is a Go duration\n"+
		"(`300ms`) or a multiple of the run's TTL (`2ttl`).\n\n## Locks\n\n"+
		"Every lock, the store it keeps its state in, the code it runs (a Go lock's versions are the ones this build links;\n"+
		"an adapter's, the ones its manifest pins) and how it is known to break. An adapter lock is a process of\n"+
		"another language ([adapters](../adapters/README.md)).\n\n"+
		"| name | store | language, library, version | known weakness |\n| --- | --- | --- | --- |\n")
	for _, s := range locks.All() {
		fmt.Fprintf(w, "| [`%s`](#%s) | %s | %s | %s |\n", s.Name, markdownAnchor(s.Name), s.Store, orDash(s.Library), orDash(s.Weakness))
	}
	for _, s := range locks.All() {
		fmt.Fprintf(w, "\n### `%s`\n\n%s (store: %s, nodes: %d%s)\n", s.Name, s.Description, s.Store, s.Nodes, adapterNote(s))
		if s.Library != "" || s.Weakness != "" {
			fmt.Fprintln(w)
		}
		if s.Library != "" {
			fmt.Fprintf(w, "- runs: %s\n", s.Library)
		}
		if s.Weakness != "" {
			fmt.Fprintf(w, "- known weakness: %s\n", s.Weakness)
		}
		markdownOptions(w, s.OptionSpecs())
	}
	fmt.Fprint(w, "\n## Nemeses\n")
	for _, s := range nemesis.All() {
		fmt.Fprintf(w, "\n### `%s`\n\n%s (faults: %s)\n", s.Name, s.Description, s.Action)
		markdownOptions(w, s.OptionSpecs())
	}
	return 0
}

// markdownAnchor is the anchor GitHub gives a heading of text: lower
// case, what is neither a letter, a digit, a space, "-" nor "_" dropped,
// spaces made "-" ("node-redlock-5.0.0-beta.2" → "node-redlock-500-beta2").
func markdownAnchor(text string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == ' ':
			return '-'
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			return unicode.ToLower(r)
		}
		return -1
	}, text)
}

func markdownOptions(w io.Writer, specs []option.Spec) {
	if len(specs) == 0 {
		fmt.Fprint(w, "\nNo options.\n")
		return
	}
	fmt.Fprint(w, "\n| option | default | what it does |\n| --- | --- | --- |\n")
	for _, o := range specs {
		def := "`" + o.Default + "`"
		if o.Default == "" {
			def = "(none)"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s |\n", o.Key, def, strings.ReplaceAll(optionHelp(o), "|", "\\|"))
	}
}

func listOptions(w io.Writer, owner string, specs []option.Spec) {
	sorted := append([]option.Spec(nil), specs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	for _, o := range sorted {
		fmt.Fprintf(w, "  %-16s   --opt %s.%s=%s  %s\n", "", owner, o.Key, o.Default, optionHelp(o))
	}
}

// optionHelp is an option's help, with the range lockchaos margin searches
// when it is a fault's size.
func optionHelp(o option.Spec) string {
	if o.Margin == "" {
		return o.Help
	}
	return o.Help + " (the fault's size: lockchaos margin searches " + o.Margin + ")"
}
