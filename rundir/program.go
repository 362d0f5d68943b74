package rundir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lockchaos/lockchaos/internal/shellwords"
)

// program is lockchaos as the user invoked it, for every command printed
// for them to run next (SetProgram).
var program = "lockchaos"

// SetProgram records how lockchaos was invoked (os.Args[0]), once, before
// anything is printed: cli.Main does. Until then (a test, a library
// caller) Program is "lockchaos".
func SetProgram(arg0 string) { program = programName(arg0, exec.LookPath) }

// Program is the command that runs lockchaos, as the user typed it: the
// commands printed for them to run next (a report's next steps, shrink's
// reproduce line, result.json's replay) start with it, so that they run as
// printed — `bin/lockchaos shrink …` after `make build`, not a
// `lockchaos` that is not on the PATH.
func Program() string { return program }

// PortableProgram is Program for text meant to be read on other machines
// (audit.md, pasted into a README): never an absolute path, which would
// name this machine's folders; the bare name instead.
func PortableProgram() string {
	if filepath.IsAbs(program) {
		return filepath.Base(program)
	}
	return program
}

// programName is the command that runs the binary invoked as arg0: arg0
// as typed (a bare name was found on the PATH; a relative path runs from
// here), except an absolute path to the binary that the PATH finds under
// its base name, which is that name.
func programName(arg0 string, lookPath func(string) (string, error)) string {
	if arg0 == "" {
		return "lockchaos"
	}
	if !filepath.IsAbs(arg0) || !strings.Contains(arg0, "/") {
		return arg0
	}
	base := filepath.Base(arg0)
	found, err := lookPath(base)
	if err != nil {
		return arg0
	}
	a, errA := os.Stat(arg0)
	b, errB := os.Stat(found)
	if errA == nil && errB == nil && os.SameFile(a, b) {
		return base
	}
	return arg0
}

// ReplayCommand is the command, starting with prog, that runs the run in
// dir again, fault for fault, into dir-replay.
func ReplayCommand(prog, dir string) string {
	clean := filepath.Clean(dir)
	return prog + " run --replay " + shellwords.Quote(clean) + " --out " + shellwords.Quote(clean+"-replay")
}

// RelTo is path relative to dir ("" : the working directory) when both
// resolve, else path as it is.
func RelTo(dir, path string) string {
	if dir == "" {
		dir = "."
	}
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	r, err := filepath.Rel(ad, ap)
	if err != nil {
		return path
	}
	return r
}
