package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

// perlAdapter copies the example adapter to a file called name in a folder
// of the test's own, so that its processes can be told from those of other
// tests, and returns the --lock-cmd that runs it.
func perlAdapter(t *testing.T, name string) (cmd, path string) {
	t.Helper()
	src, err := os.ReadFile("../adapters/perl/token/adapter.pl")
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return "perl " + shellwords.Quote(path), path
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
	t.Parallel()
	for _, tc := range []struct {
		nemesis string
		want    checker.Verdict
	}{{"kill-client", checker.Safe}, {"pause-client", checker.Violation}} {
		t.Run(tc.nemesis, func(t *testing.T) {
			cmd, path := perlAdapter(t, "adapter.pl")
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

// script writes a shell script into a folder of the test's own and returns
// the --lock-cmd that runs it.
func script(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return "sh " + shellwords.Quote(path)
}

// An adapter that cannot start — it answers init with garbage, or crashes
// — stops the run before it begins, and the error's first line says why in
// the adapter's terms, followed by the end of its standard error: the user
// need not open a log to learn that a module is missing.
func TestAnAdapterThatCannotStartIsQuotedInTheError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name, body string
		why        string   // on the error's first line
		quoted     []string // in the lines after it
		not        []string // left out: lockchaos's own lines, the start of a long log
	}{
		{"garbage", "echo 'starting my adapter v1' >&2\nread -r line\necho 'hello, I am not JSON'\necho 'oops: cannot connect' >&2\nsleep 1\n",
			`adapter cmd did not answer init: adapter protocol: it wrote a line that is not a JSON message with a type: "hello, I am not JSON"`,
			[]string{"| starting my adapter v1", "| oops: cannot connect"}, []string{"lockchaos "}},
		{"crash", "echo 'Traceback (most recent call last):' >&2\necho \"ModuleNotFoundError: No module named 'redis'\" >&2\nexit 1\n",
			"adapter cmd exited (exit status 1) before it answered init",
			[]string{"| Traceback (most recent call last):", "| ModuleNotFoundError: No module named 'redis'"}, nil},
		{"a long log", "for i in $(seq 1 300); do echo \"line $i " + long + "\" >&2; done\necho 'the last line' >&2\nexit 7\n",
			"adapter cmd exited (exit status 7) before it answered init",
			[]string{"| line 300 xxx", "| the last line"}, []string{"line 1 ", "line 292 "}},
		{"silent", "exit 5\n", "adapter cmd exited (exit status 5) before it answered init (it wrote nothing on its standard error", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runtest.Config(t, "")
			c.LockCmd = script(t, "adapter.sh", tc.body)
			_, err := runner.Run(context.Background(), c)
			if err == nil {
				t.Fatal("the run started")
			}
			msg := err.Error()
			first, rest, _ := strings.Cut(msg, "\n")
			if !strings.Contains(first, "exited before it was ready (exit status 2): lock cmd: "+tc.why) {
				t.Errorf("the error's first line\n  %s\ndoes not say %q", first, tc.why)
			}
			for _, q := range tc.quoted {
				if !strings.Contains(rest, q) {
					t.Errorf("the error does not quote %q:\n%s", q, msg)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(msg, n) {
					t.Errorf("the error quotes %q:\n%s", n, msg)
				}
			}
			if len(msg) > 8000 {
				t.Errorf("the error is %d characters long: a quote must be bounded", len(msg))
			}
		})
	}
}

// --lock-cmd is split into words as a shell would: a quoted path with a
// space and a quote in it is one word, and the adapter runs.
func TestALockCmdIsSplitAsAShellWould(t *testing.T) {
	t.Parallel()
	cmd, _ := perlAdapter(t, "my adapter's.pl")
	if !strings.Contains(cmd, `'\''`) {
		t.Fatalf("--lock-cmd %s quotes no quote", cmd)
	}
	c := runtest.Config(t, "")
	c.LockCmd = cmd
	res, _ := runtest.Run(t, c)
	if res.Verdict != checker.Safe || res.Mutex.Holds == 0 {
		t.Errorf("verdict %s, %d holds: %s", res.Verdict, res.Mutex.Holds, res.Summary)
	}
}

// A lease whose value is random bytes (the adapter gives it as token_b64,
// as rslock's would be) is looked for on the node as those bytes: a node
// restarted from its append-only file keeps the lease, one without
// persistence forgets it, and crash-restart's effect says which. Asked for
// the base64 text instead, every node would seem to have lost it.
func TestABytesTokenIsLookedForAsBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		persistence, want string
	}{{"always", history.LeaseKept}, {"none", history.LeaseLost}} {
		t.Run(tc.persistence, func(t *testing.T) {
			c := runtest.Config(t, "", "crash-restart")
			c.LockFile = "../adaptercheck/testdata/bytes.yaml"
			c.Persistence = tc.persistence
			res, _ := runtest.RunFaults(t, &c)
			judged := 0
			for _, f := range res.Faults {
				if !f.Landed {
					continue
				}
				judged++
				if f.Lease != tc.want {
					t.Errorf("fault %d: lease %q, want %q: %s", f.ID, f.Lease, tc.want, f.Effect)
				}
			}
			if judged == 0 {
				t.Errorf("no crash landed on a live lease: %s", res.Summary)
			}
		})
	}
}
