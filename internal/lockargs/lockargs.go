// Package lockargs parses --lock-file and --opt, the same on every command
// that takes a lock (lockchaos run, compare, audit, chaos, shrink, and
// lockchaos-bench): one parser for both; and writes them back into the
// commands printed for the user (FileArgs, OptArgs).
package lockargs

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/rundir"
)

// List is a flag that may be given more than once, each value kept in
// order.
type List []string

func (l *List) String() string     { return strings.Join(*l, ",") }
func (l *List) Set(s string) error { *l = append(*l, s); return nil }

// Repeatable marks the flag as one that may be given more than once.
func (*List) Repeatable() {}

// Flags are --lock-file and --opt. Each --lock-file registers the adapter
// lock of a manifest anywhere by its name, beside the shipped locks; --opt
// sets an option of a lock or a nemesis.
type Flags struct {
	Files List
	Opts  List
}

// Bind defines the flags in fs; opt is false for a command that takes no
// --opt (lockchaos-bench, whose adapter step runs each lock with its
// defaults).
func (l *Flags) Bind(fs *flag.FlagSet, opt bool) {
	fs.Var(&l.Files, "lock-file", "make the adapter lock that the manifest `FILE` (a lock.yaml anywhere) describes available by its name, beside the shipped locks: a lock in any language (docs/protocol.md); repeatable")
	if opt {
		fs.Var(&l.Opts, "opt", "an option `NAME.KEY=VALUE` of the lock or a nemesis, repeatable (lockchaos list shows them)")
	}
}

// Load registers each --lock-file's lock and reads --opt, once the flags
// are parsed: the locks given, in order, and the options by owner (nil for
// none).
func (l *Flags) Load() (given []locks.Spec, opts map[string]map[string]string, err error) {
	for _, f := range l.Files {
		s, err := locks.RegisterFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("--lock-file %s: %w", f, err)
		}
		given = append(given, s)
	}
	if opts, err = option.Split(l.Opts); err != nil {
		return nil, nil, err
	}
	if len(opts) == 0 {
		opts = nil
	}
	return given, opts, nil
}

// FileArgs are the --lock-file flags that make the locks of names known
// to a command printed for the user (" --lock-file F", or ""): each given
// lock's manifest, relative to dir when dir is not "" (a command run from
// that folder: audit.md's), else as this process sees it.
func FileArgs(dir string, names ...string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, n := range names {
		f := locks.GivenFile(n)
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		b.WriteString(" --lock-file " + shellwords.Quote(rundir.RelTo(dir, f)))
	}
	return b.String()
}

// OptArgs are opts as --opt flags (" --opt a.b=c …"), in order: what
// Load reads back.
func OptArgs(opts map[string]map[string]string) string {
	var b strings.Builder
	for _, owner := range slices.Sorted(maps.Keys(opts)) {
		for _, k := range slices.Sorted(maps.Keys(opts[owner])) {
			b.WriteString(" --opt " + shellwords.Quote(owner+"."+k+"="+opts[owner][k]))
		}
	}
	return b.String()
}
