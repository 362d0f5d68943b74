package adaptercheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockchaos/lockchaos/locks"
)

// A --lock-cmd adapter's pass is kept for its build, and the build takes
// in the files its script imports from the folder it runs in, not only
// those its command names: a change to one is checked again. What a run
// writes in that folder's results/ is no change to the adapter.
func TestALockCmdAdapterWhoseImportChangesIsCheckedAgain(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.js", "const lib = require('./lib.js')\nlib.serve()\n")
	write("lib.js", "exports.serve = () => {}\n")
	m, err := locks.QuickManifest("node a.js", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Record(m); err != nil {
		t.Fatal(err)
	}
	isPassed := func() bool {
		t.Helper()
		key, err := Key(m)
		if err != nil {
			t.Fatal(err)
		}
		return passed(key)
	}
	if !isPassed() {
		t.Fatal("the pass just recorded is not found")
	}
	write("results/20260101-000000-cmd/history.jsonl", "{}\n")
	if !isPassed() {
		t.Error("a run's results/ in the adapter's folder made the adapter be checked again")
	}
	write("lib.js", "exports.serve = () => { grantEveryone() }\n")
	if isPassed() {
		t.Error("lib.js, which a.js requires, changed, and the adapter's old pass still stands")
	}
}
