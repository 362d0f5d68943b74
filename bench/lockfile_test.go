package bench

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/internal/lockargs"
)

// lockchaos-bench takes --lock-file as every command does (lockargs): an
// adapter lock outside the clone with a bench command joins the adapter
// step beside the shipped ones.
func TestALockFileJoinsTheAdapterStep(t *testing.T) {
	dir := t.TempDir()
	manifest := "name: bench-outside\ndescription: an adapter outside the clone\nlanguage: perl\nstore: redis\nnodes: 1\ncommand: [perl, adapter.pl]\nbench: [perl, bench.pl]\n"
	if err := os.WriteFile(filepath.Join(dir, "lock.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var lf lockargs.Flags
	lf.Bind(fs, false)
	if slices.Contains(Adapters(), "bench-outside") {
		t.Fatal("bench-outside is an adapter before its --lock-file")
	}
	if err := fs.Parse([]string{"--lock-file", filepath.Join(dir, "lock.yaml")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lf.Load(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(Adapters(), "bench-outside") {
		t.Errorf("the adapter step's locks %v lack bench-outside", Adapters())
	}
	if err := fs.Parse([]string{"--lock-file", filepath.Join(dir, "missing.yaml")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lf.Load(); err == nil {
		t.Error("a --lock-file that does not exist loaded")
	}
}
