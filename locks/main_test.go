package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner/runtest"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// Runs start their workers by re-executing this test binary.
func TestMain(m *testing.M) { runtest.Main(m) }

const ms = time.Millisecond

// runCfg is a short run of lock: three clients on one key, 300 ms leases,
// 60 ms holds, 3 s.
func runCfg(t *testing.T, lock string, nemeses ...string) settings.Run {
	return settings.Run{
		Lock:     lock,
		Nemeses:  nemeses,
		Duration: 3 * time.Second,
		Seed:     11,
		Out:      t.TempDir(),
		Workload: workload.Workload{Clients: 3, Keys: 1, TTL: 300 * ms, Hold: 60 * ms, Think: 10 * ms},
	}
}

// run performs c on real redis-server processes and checks what every run
// must show (runtest.Run).
func run(t *testing.T, c settings.Run) (checker.Result, []history.Event) {
	t.Helper()
	return runtest.Run(t, c)
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
	runtest.Verdict(t, res, want)
}

// startStore starts an ensemble of store for one test, stopped at its end;
// the test's clients dial its members directly (a run puts a proxy in
// between). A store whose servers are not installed fails the test with
// the install hint: these tests talk to real servers or do not pass.
func startStore(t *testing.T, store string, members int) cluster.Elected {
	t.Helper()
	s, err := cluster.LookupStore(store)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Start(context.Background(), &cluster.Local{}, cluster.EnsembleSpec{Members: members})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range e.Members() {
			m.Stop()
		}
		e.Close()
	})
	return e.(cluster.Elected)
}

// servingAddrs are the addresses of the members that serve clients.
func servingAddrs(e cluster.Ensemble) []string {
	var addrs []string
	for _, m := range e.Serving() {
		addrs = append(addrs, m.Addr())
	}
	return addrs
}
