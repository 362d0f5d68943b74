package nemesis_test

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestClockDriftOptionsAreDecodedIntoFields(t *testing.T) {
	t.Parallel()
	if c := nemesis.MustBuild(t, "clock-drift", map[string]string{"rate": "0.5", "votes": "bare", "when": "any"}).(*nemesis.ClockDrift); c.Rate != 0.5 || c.RateText() != "0.5" ||
		c.Node != nemesis.HolderNode || c.When != "any" || c.Votes != "bare" || c.Duration != 500*time.Millisecond {
		t.Errorf("clock-drift: %+v", c)
	}
}

func TestBadClockDriftOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"clock-drift", "rate", "1001", "clock-drift: rate=1001: want a number from 0 to 1000 (1 is real speed)"},
		{"clock-drift", "rate", "NaN", "option clock-drift.rate"},
	})
}

func TestClockDriftAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"clock-drift", nil, topoRemote, "clock-drift needs the clock shim"},
		{"clock-drift", map[string]string{"node": "5"}, topoRun, "node=5"},
	})
}

// Redis expires keys by its own wall clock: on a node whose clock runs
// fast (8× by default, under the clock shim) a held lease runs out early,
// and another client takes the lock while its holder still works. The
// fault says how it moved the clock, the lease it aimed at is lost, the
// first overlap is its doing, and once healed the node answers every
// client again. (The drift lasts 2 TTLs, far longer than the 300 ms lease
// lasts at 8×, and heals well before the run ends.)
func TestClockDriftExpiresAHeldLock(t *testing.T) {
	t.Parallel()
	runtest.NeedClockShim(t)
	c := runtest.FaultConfig(t, "token-lua", []string{"clock-drift"}, "clock-drift.duration=2ttl")
	// Room for the heal before the workers stop, when the machine is busy
	// with other tests' servers too (etcd, ZooKeeper, PostgreSQL).
	c.Duration = 6 * time.Second
	res, events := runtest.RunHealed(t, &c)
	runtest.Verdict(t, res, checker.Violation)
	runtest.Landed(t, res, history.LeaseLost)
	if p := res.Faults[0].Params; p["variant"] != "shim" || p["rate"] != "8" {
		t.Errorf("the fault does not say it ran the node's clock at 8× under the shim: %v", p)
	}
	if o := res.Mutex.Overlaps[0]; len(o.Faults) == 0 || o.Cause != checker.CauseFault {
		t.Errorf("the first overlap is not the fault's: %+v", o)
	}
	runtest.AnsweredAfterFirstFault(t, c, events)
}
