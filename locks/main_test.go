package locks_test

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/workload"
)

// Runs start their workers by re-executing this test binary.
func TestMain(m *testing.M) {
	if os.Getenv(workload.RoleEnv) == "worker" {
		os.Exit(workload.Main())
	}
	os.Exit(m.Run())
}

const ms = time.Millisecond

// runCfg is a short run of lock: three clients on one key, 300 ms leases,
// 60 ms holds, 3 s.
func runCfg(t *testing.T, lock string, nemeses ...string) runner.Config {
	return runner.Config{
		Lock: lock, Nemeses: nemeses, Clients: 3, Keys: 1,
		TTL: 300 * ms, Hold: 60 * ms, Duration: 3 * time.Second, Think: 10 * ms, Seed: 11,
		Out: t.TempDir(),
	}
}

// run performs c on real redis-server processes and checks what every run
// of these locks must show: the history is whole, and no client touched the
// resource after it learned it had lost its lock.
func run(t *testing.T, c runner.Config) (checker.Result, []history.Event) {
	t.Helper()
	res, err := runner.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	events, _, err := history.ReadFile(filepath.Join(c.Out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete {
		t.Errorf("incomplete history: %v", res.Reasons)
	}
	noResourceOpAfterLost(t, events)
	t.Logf("%s; resource: %s", res.Summary, res.Resource.Summary)
	return res, events
}

// noResourceOpAfterLost: once a client recorded that it lost key, it invokes
// no read or write of key until it acquires key again.
func noResourceOpAfterLost(t *testing.T, events []history.Event) {
	t.Helper()
	lost := map[int]map[string]bool{}
	for _, e := range sortedByTime(events) {
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

func sortedByTime(events []history.Event) []history.Event {
	// Each worker's events arrive in order; a stable sort keeps them so.
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	return out
}

// count counts the events that match.
func count(events []history.Event, match func(history.Event) bool) int {
	n := 0
	for _, e := range events {
		if match(e) {
			n++
		}
	}
	return n
}

func wantVerdict(t *testing.T, res checker.Result, want checker.Verdict) {
	t.Helper()
	if res.Verdict != want {
		t.Fatalf("verdict %s, want %s: %s %v", res.Verdict, want, res.Summary, res.Reasons)
	}
}
