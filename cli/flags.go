package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/internal/lockargs"
	"github.com/lockchaos/lockchaos/internal/suggest"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/scenarios"
)

// newFlags makes a subcommand's flag set. It prints nothing by itself:
// parse decides what a bad flag or -h prints, and where.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// completing: a completion asks a command for its flag set (flagsOf); parse
// hands it over in completed and ends the command.
var (
	completing bool
	completed  *flag.FlagSet
)

// parse parses a subcommand's arguments. When ok is false the command is
// done and code is its exit status: -h or --help printed usage and the
// flags on stdout (0); a bad flag or value got one line on stderr, with
// where to look for the rest (ExitUsage).
func parse(fs *flag.FlagSet, usage string, args []string) (code int, ok bool) {
	if completing {
		completed = fs // flagsOf asks for the flags, not a parse
		return 0, false
	}
	twice := onlyOnce(fs)
	err := fs.Parse(args)
	if dup := twice(); err == nil {
		err = dup
	}
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		printUsage(os.Stdout, fs, usage)
		return 0, false
	default:
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			name = strings.TrimLeft(name, "-")
			var known []string
			fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
			msg = "no flag --" + name + suggest.Hint(name, known, "--%s")
		}
		msg = strings.Replace(msg, " for flag -", " for --", 1)
		fmt.Fprintf(os.Stderr, "lockchaos %s: %s\n(lockchaos %s -h lists its flags)\n", fs.Name(), msg, fs.Name())
		return ExitUsage, false
	}
}

// repeatable marks a flag that may be given more than once (--opt,
// --lock-file: lockargs.List); every other flag takes one value.
type repeatable interface{ Repeatable() }

// onlyOnce watches the flags of fs that take one value while fs parses:
// given twice (`--lock token-lua --lock fenced`), the last would silently
// win. The returned func puts the flags back as they were and says which
// was given twice, with both values. A flag set by an earlier parse of the
// same flag set (shrink's, whose flags may come on either side of the
// folder) counts as given.
func onlyOnce(fs *flag.FlagSet) (twice func() error) {
	given := map[string]string{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() })
	var dup error
	orig := map[string]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(repeatable); ok {
			return
		}
		orig[f.Name] = f.Value
		o := once{Value: f.Value, name: f.Name, given: given, dup: &dup}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			f.Value = onceBool{o}
		} else {
			f.Value = o
		}
	})
	return func() error {
		for name, v := range orig {
			fs.Lookup(name).Value = v
		}
		return dup
	}
}

// once is a single-value flag that notes a second value.
type once struct {
	flag.Value
	name  string
	given map[string]string
	dup   *error
}

func (o once) Set(s string) error {
	if prev, ok := o.given[o.name]; ok && *o.dup == nil {
		*o.dup = fmt.Errorf("--%s given twice (%s, then %s): it takes one value", o.name, prev, s)
	}
	o.given[o.name] = s
	return o.Value.Set(s)
}

type onceBool struct{ once }

func (onceBool) IsBoolFlag() bool { return true }

// printUsage writes usage, then the flags, if any.
func printUsage(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprint(w, usage)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	printFlags(w, fs)
}

// printFlags writes fs's flags as flag.PrintDefaults does, but spelt with
// two dashes, as the README and every other message spell them (Go's flag
// package takes both).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		fmt.Fprintf(w, "%s\n    \t%s", line, usage)
		switch f.DefValue {
		case "", "0", "false", "0s", "[]":
		default:
			if kind == "string" {
				fmt.Fprintf(w, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(w, " (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(w)
	})
}

// outFolder is where a command writes its folder of results: out as
// given, or a new folder results/NAME-<time> (name "" for
// results/<time>), made here. os.Mkdir claims the name: of commands
// started in the same second each gets a folder of its own (the time, then
// -2, -3 …), never one another's.
func outFolder(out, name string) (string, error) {
	if out != "" {
		return out, nil
	}
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		return "", err
	}
	base := time.Now().Format("20060102-150405")
	if name != "" {
		base = name + "-" + base
	}
	base = filepath.Join(resultsDir, base)
	for i := 1; ; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
}

// resultsDir holds the folders of past runs (lockchaos runs lists them).
const resultsDir = "results"

// markLatest points results/latest at out, as Jepsen's store/latest does,
// once out holds a result (pastResult: a run's result.json, a matrix's
// summary.json, a comparison's or an audit's) and is a folder right under
// results/. results/latest is thus the newest folder with a result: a run
// that failed before writing one leaves it where it was (lockchaos runs
// lists the failed run). The link is replaced atomically; failing to make
// it fails nothing.
func markLatest(out string) {
	if filepath.Dir(filepath.Clean(out)) != resultsDir || filepath.Base(out) == "latest" {
		return
	}
	if r, ok := readPastRun(out); !ok || r.failed {
		return
	}
	tmp := filepath.Join(resultsDir, fmt.Sprintf(".latest-%d", os.Getpid()))
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(out), tmp); err != nil {
		return
	}
	if err := os.Rename(tmp, filepath.Join(resultsDir, "latest")); err != nil {
		os.Remove(tmp)
	}
}

// claimOut refuses out when it already holds what the command writes
// (file, what: "a matrix") unless force, and creates it. When ok is false
// the command is done and code is its exit status.
func claimOut(cmd, out, file, what string, force, create bool) (code int, ok bool) {
	if _, err := os.Stat(filepath.Join(out, file)); err == nil && !force {
		fmt.Fprintf(os.Stderr, "lockchaos %s: --out %s already holds %s (%s): choose another folder, or give --force to replace it\n", cmd, out, what, file)
		return ExitUsage, false
	}
	if !create {
		return 0, true
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "lockchaos %s: create %s: %v\n", cmd, out, err)
		return ExitSetup, false
	}
	return 0, true
}

// lockFlags are --lock-file and --opt (lockargs.Flags).
type lockFlags struct{ lockargs.Flags }

func (l *lockFlags) bind(fs *flag.FlagSet) { l.Bind(fs, true) }

// load registers each --lock-file's lock and reads --opt (lockargs), once
// cmd's flags are parsed. When ok is false it printed what is wrong, and
// cmd exits with ExitUsage.
func (l *lockFlags) load(cmd string) (given []locks.Spec, opts map[string]map[string]string, ok bool) {
	given, opts, err := l.Load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockchaos %s: %v\n", cmd, err)
		return nil, nil, false
	}
	return given, opts, true
}

// shardFlag reads --shard I/N of cmd (nil when not given); when ok is
// false it printed what is wrong.
func shardFlag(cmd, v string) (sh *scenarios.Shard, ok bool) {
	if v == "" {
		return nil, true
	}
	i, n, err := scenarios.ParseShard(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockchaos %s: %v\n", cmd, err)
		return nil, false
	}
	return &scenarios.Shard{Index: i, Count: n}, true
}
