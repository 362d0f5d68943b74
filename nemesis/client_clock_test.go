package nemesis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestBadClientClockOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"client-clock", "by", "0s", "must both be more than 0"},
		{"client-clock", "delay", "0s", "must both be more than 0"},
	})
}

// A client's clock is a lock's own process's: an adapter's. A lock written
// in Go runs inside the worker, whose clock the shim cannot reach.
func TestAClientClockIsAnAdaptersOnly(t *testing.T) {
	t.Parallel()
	adapter, inGo := topoRun, topoRun
	adapter.Adapter, inGo.Adapter = "node", "go"
	applies(t, []appliesCase{
		{"client-clock", nil, adapter, ""},
		{"client-clock", nil, topoRun, "runs inside the Go worker"},
		{"client-clock", nil, inGo, "written in Go"},
	})
}

// clientClock runs lock under client-clock and wants the verdict, the
// fault landed; the op timeout outlasts the held replies.
func clientClock(t *testing.T, lock string, want checker.Verdict) {
	t.Helper()
	c := runtest.FaultConfig(t, lock, []string{"client-clock"})
	c.OpTimeout, c.Duration = 3*time.Second, 6*time.Second
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, want)
	runtest.Landed(t, res, "")
	for _, f := range res.Faults {
		if f.Landed && !strings.Contains(f.Effect, "stepped back") {
			t.Errorf("fault %d's effect does not say the clock stepped back: %s", f.ID, f.Effect)
		}
	}
	if want == checker.Violation && len(res.Mutex.Overlaps[0].Faults) == 0 {
		t.Errorf("the first overlap is not the clock step's: %+v", res.Mutex.Overlaps[0])
	}
}

// Redlock's validity is the lease less the time the acquire took: measured
// on the wall clock (node-redlock's Date.now(), both versions shipped), a
// clock stepped back while the acquire was slow says a lease that ran out
// on the servers still lives, and the client acts on it beside the holder
// that took the key after it — by construction (its replies are let go in
// that holder's hold). Measured on a monotonic clock (pottery's
// timeit.default_timer), the same step changes nothing: the acquire is
// refused.
func TestAClientClockStepBreaksAValidityMeasuredOnTheWallClock(t *testing.T) {
	t.Parallel()
	t.Run("node-redlock", func(t *testing.T) { clientClock(t, "node-redlock", checker.Violation) })
	t.Run("pottery-redlock", func(t *testing.T) { clientClock(t, "pottery-redlock", checker.Safe) })
}

// A lease judged on the client's clock (ShedLock's JDBC provider: the
// name's lock_until <= now, now by the client) has run out for a client
// whose clock steps forward past it: it takes the name beside the holder,
// kept inside, by construction. A lease the server keeps (redis-py's
// Lock: SET NX PX) does not care: the stepped client is refused.
func TestAClientClockSteppedForwardBreaksALeaseJudgedOnTheClientsClock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lock, answer string
		want         checker.Verdict
	}{{"shedlock-jdbc", "ended granted", checker.Violation}, {"redis-py-lock", "ended refused", checker.Safe}} {
		t.Run(tc.lock, func(t *testing.T) {
			c := runtest.FaultConfig(t, tc.lock, []string{"client-clock"}, "client-clock.direction=forward")
			c.TTL, c.Hold = time.Second, 200*time.Millisecond
			c.OpTimeout, c.Duration = 3*time.Second, 6*time.Second
			res, _ := runtest.RunFaults(t, &c)
			runtest.Verdict(t, res, tc.want)
			runtest.Landed(t, res, "")
			for _, f := range res.Faults {
				if f.Landed && !strings.Contains(f.Effect, "stepped forward") || f.Landed && !strings.Contains(f.Effect, tc.answer) {
					t.Errorf("fault %d's effect does not say the clock stepped forward and the acquire %s: %s", f.ID, tc.answer, f.Effect)
				}
			}
		})
	}
}
