package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

// perlAdapter copies the example adapter to a folder of the test's own, so
// that its processes can be told from those of other tests.
func perlAdapter(t *testing.T) (cmd, path string) {
	t.Helper()
	src, err := os.ReadFile("../adapters/perl/token/adapter.pl")
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "adapter.pl")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return "perl " + path, path
}

// adapterProcs lists the running processes whose command line names path.
func adapterProcs(path string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), path) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// An adapter lock's process is part of its client: a client killed by
// kill-client takes its adapter with it (the worker's process group), and
// a paused one freezes it, so that the adapter's lock breaks under a pause
// exactly as the Go lock it ports (token-lua). Nothing outlives the run.
func TestAnAdapterLivesAndDiesWithItsClient(t *testing.T) {
	for _, tc := range []struct {
		nemesis string
		want    checker.Verdict
	}{{"kill-client", checker.Safe}, {"pause-client", checker.Violation}} {
		t.Run(tc.nemesis, func(t *testing.T) {
			cmd, path := perlAdapter(t)
			c := runtest.Config(t, "", tc.nemesis)
			c.LockCmd = cmd
			res, _ := runtest.RunFaults(t, &c)
			if res.Verdict != tc.want {
				t.Errorf("verdict %s, want %s: %s", res.Verdict, tc.want, res.Summary)
			}
			if res.Evidence.Landed == 0 {
				t.Errorf("no fault landed: %s", res.Summary)
			}
			if left := adapterProcs(path); len(left) > 0 {
				t.Errorf("adapter processes outlived the run: %v", left)
			}
			logs, _ := filepath.Glob(filepath.Join(c.Out, "workers", "client-*.adapter.log"))
			if len(logs) != c.Clients {
				t.Errorf("adapter logs %v, want one per client (%d)", logs, c.Clients)
			}
		})
	}
}
