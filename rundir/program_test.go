package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The program printed is what the user typed, except an absolute path to
// the binary the PATH finds under its base name.
func TestProgramNameIsWhatWasTyped(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "lockchaos")
	other := filepath.Join(t.TempDir(), "lockchaos")
	for _, f := range []string{exe, other} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	onPath := func(found string) func(string) (string, error) {
		return func(string) (string, error) { return found, nil }
	}
	notOnPath := func(string) (string, error) { return "", errors.New("not found") }
	for _, tc := range []struct {
		arg0     string
		lookPath func(string) (string, error)
		want     string
	}{
		{"bin/lockchaos", notOnPath, "bin/lockchaos"},
		{"./bin/lockchaos", notOnPath, "./bin/lockchaos"},
		{"lockchaos", onPath(exe), "lockchaos"},
		{exe, onPath(exe), "lockchaos"},
		{exe, notOnPath, exe},
		{exe, onPath(other), exe}, // the PATH's lockchaos is another binary
	} {
		if got := programName(tc.arg0, tc.lookPath); got != tc.want {
			t.Errorf("programName(%q) = %q, want %q", tc.arg0, got, tc.want)
		}
	}
	defer func(p string) { program = p }(program)
	program = exe
	if got := PortableProgram(); got != "lockchaos" {
		t.Errorf("PortableProgram() of %s = %q, want the bare name", exe, got)
	}
}
