// Package runtest helps tests drive real lockchaos runs. Workers re-execute
// the test binary, so a test package that starts runs uses Main as its
// TestMain; Run performs a run and checks what every run must satisfy.
package runtest

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/procs"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/workload"
)

// Main is a test package's TestMain: in a process started as a worker it runs
// the worker (which sees every lock the test binary registered), otherwise
// the tests.
func Main(m *testing.M) {
	if os.Getenv(workload.RoleEnv) == "worker" {
		os.Exit(workload.Main())
	}
	os.Exit(m.Run())
}

// Run performs c on real Redis and checks what every run must show: it
// completes, its stored history re-checks to the same result, the history
// is whole, no client touched the resource after it recorded losing its
// lock, and no redis-server it started is left running. A run that is no
// evidence either way (checker.Result.NoEvidence: a stall of the machine
// made its only overlaps, or none of its faults landed) is run again, up to
// three times, as the matrix does.
func Run(t testing.TB, c runner.Config) (checker.Result, []history.Event) {
	t.Helper()
	before := len(procs.Children("redis-"))
	res, err := runner.Run(context.Background(), c)
	for attempt := 2; err == nil && res.NoEvidence() != "" && attempt <= 3; attempt++ {
		t.Logf("no evidence (%s): %s; running it again", res.NoEvidence(), res.Summary)
		c.Out = t.TempDir()
		res, err = runner.Run(context.Background(), c)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	again, err := runner.CheckDir(c.Out, 0)
	if err != nil {
		t.Fatalf("re-check: %v", err)
	}
	again.Mutex.CheckMs, res.Mutex.CheckMs = 0, 0
	if !reflect.DeepEqual(res, again) {
		t.Errorf("re-checking the stored history gave a different result:\n%+v\nvs\n%+v", res, again)
	}
	events, _, err := history.ReadFile(filepath.Join(c.Out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete {
		t.Errorf("incomplete history: %v", res.Reasons)
	}
	NoResourceOpAfterLost(t, events)
	if after := procs.Children("redis-"); len(after) > before {
		t.Errorf("redis processes left running after the run: %v", after)
	}
	t.Logf("%s; resource: %s", res.Summary, res.Resource.Summary)
	return res, events
}

// Verdict fails the test unless res has the wanted verdict.
func Verdict(t testing.TB, res checker.Result, want checker.Verdict) {
	t.Helper()
	if res.Verdict != want {
		t.Fatalf("verdict %s, want %s: %s %v", res.Verdict, want, res.Summary, res.Reasons)
	}
}

// NoResourceOpAfterLost: once a client recorded that it lost a key, it
// invokes no read or write of that key until it acquires it again.
func NoResourceOpAfterLost(t testing.TB, events []history.Event) {
	t.Helper()
	lost := map[int]map[string]bool{}
	for _, e := range SortedByTime(events) {
		if lost[e.Client] == nil {
			lost[e.Client] = map[string]bool{}
		}
		switch {
		case e.Kind == history.Lost:
			lost[e.Client][e.Key] = true
		case e.Kind == history.OK && e.F == history.Acquire:
			lost[e.Client][e.Key] = false
		case e.Kind == history.Invoke && (e.F == history.Read || e.F == history.Write) && lost[e.Client][e.Key]:
			t.Errorf("client %d invoked a %s of %s after it recorded losing the lock", e.Client, e.F, e.Key)
		}
	}
}

// SortedByTime returns events in time order; each worker's events arrive in
// order, and a stable sort keeps them so.
func SortedByTime(events []history.Event) []history.Event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	return out
}
