package customlock_test

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos-example/customlock"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/runner/runtest"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// The runner's workers re-execute this test binary, which imports
// customlock: they find the lock registered just as the coordinator does.
func TestMain(m *testing.M) { runtest.Main(m) }

func TestALockRegisteredOutsideRunsThroughTheRunner(t *testing.T) {
	if _, err := locks.Lookup(customlock.Name); err != nil {
		t.Fatal(err)
	}
	const ms = time.Millisecond
	for _, tc := range []struct {
		nemesis string
		want    checker.Verdict
	}{{"none", checker.Safe}, {"pause-client", checker.Violation}} {
		t.Run(tc.nemesis, func(t *testing.T) {
			res, _ := runtest.Run(t, settings.Run{
				Lock:     customlock.Name,
				Nemeses:  []string{tc.nemesis},
				Duration: 2500 * ms,
				Seed:     3,
				Out:      t.TempDir(),
				Workload: workload.Workload{Clients: 3, Keys: 1, TTL: 300 * ms, Hold: 40 * ms, Think: 10 * ms},
			})
			if res.Verdict != tc.want || res.Lock != customlock.Name || !res.Complete {
				t.Fatalf("%s (lock %q, complete %v), want %s: %s %v", res.Verdict, res.Lock, res.Complete, tc.want, res.Summary, res.Reasons)
			}
			if tc.want == checker.Violation && res.Release.NotHeld == 0 {
				t.Errorf("the paused client's WATCHed release should find the key gone: %+v", res.Release)
			}
		})
	}
}
