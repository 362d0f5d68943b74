package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// newFlags makes a subcommand's flag set. It prints nothing by itself:
// parse decides what a bad flag or -h prints, and where.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses a subcommand's arguments. When ok is false the command is
// done and code is its exit status: -h or --help printed usage and the
// flags on stdout (0); a bad flag or value got one line on stderr, with
// where to look for the rest (ExitUsage).
func parse(fs *flag.FlagSet, usage string, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		printUsage(os.Stdout, fs, usage)
		return 0, false
	default:
		fmt.Fprintf(os.Stderr, "lockchaos %s: %v\n(lockchaos %s -h lists its flags)\n", fs.Name(), err, fs.Name())
		return ExitUsage, false
	}
}

// printUsage writes usage, then the flags, if any.
func printUsage(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprint(w, usage)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// outFolder is where a command writes a folder of results: out as given,
// or results/NAME-<time> (name "" for results/<time>).
func outFolder(out, name string) string {
	if out != "" {
		return out
	}
	stamp := time.Now().Format("20060102-150405")
	if name == "" {
		return filepath.Join("results", stamp)
	}
	return filepath.Join("results", name+"-"+stamp)
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
