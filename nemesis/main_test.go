package nemesis_test

import (
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

// Each nemesis's file runs it against real redis-server (and
// redis-sentinel) processes: each fault is recorded as a window, heals, and
// reaches the verdict its failure mode predicts. Runs are short (2.5–4 s,
// TTLs of a few hundred ms); the sentinel one is longer because Sentinel
// takes about 1.5 s to decide. The runs' helpers are package runtest's,
// shared with the runner's tests; those below are shared by the nemeses'
// files.

// Runs start their workers by re-executing this test binary.
func TestMain(m *testing.M) { runtest.Main(m) }

const ms = time.Millisecond

// unknownOutcomes says the clients noticed a fault: some acquire or release
// ended with an unknown outcome.
func unknownOutcomes(r checker.Result) bool { return r.Acquire.Unknown+r.Release.Unknown > 0 }

// healsAndStaysSafe runs a fault on links or on a lock node, once, with
// holds far below the TTL: it is real (the clients feel it: felt), heals
// (every client gets answers again), and does not break a token lock.
func healsAndStaysSafe(t *testing.T, name string, opts []string, felt func(checker.Result) bool) {
	t.Helper()
	opts = append([]string{name + ".schedule=at=300ms", name + ".duration=2ttl"}, opts...)
	c := runtest.FaultConfig(t, "token-lua", []string{name}, opts...)
	c.Hold, c.Duration = 20*ms, 2500*ms
	res, events := runtest.RunHealed(t, &c)
	runtest.Verdict(t, res, checker.Safe)
	if len(res.Faults) != 1 {
		t.Errorf("schedule at=300ms injected %d faults, want 1", len(res.Faults))
	}
	runtest.Landed(t, res, "")
	if !felt(res) {
		t.Errorf("the clients did not feel the fault: acquires %+v", res.Acquire)
	}
	runtest.AnsweredAfterFirstFault(t, c, events)
}

// faultGives runs lock under the nemesis name and wants the verdict, and a
// fault that landed leaving its lease so (history.LeaseLost, LeaseKept).
func faultGives(t *testing.T, lock, name string, want checker.Verdict, lease string) {
	t.Helper()
	c := runtest.FaultConfig(t, lock, []string{name})
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, want)
	runtest.Landed(t, res, lease)
}

// clockJumpExpires runs a clock jump (the nemesis name, which records
// variant) on token-lua's node: it frees a held lock, and the first
// overlap is the fault's.
func clockJumpExpires(t *testing.T, name, variant string) {
	t.Helper()
	c := runtest.FaultConfig(t, "token-lua", []string{name})
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Violation)
	runtest.Landed(t, res, history.LeaseLost)
	if v := res.Faults[0].Params["variant"]; v != variant {
		t.Errorf("variant %q, want %q", v, variant)
	}
	if o := res.Mutex.Overlaps[0]; len(o.Faults) == 0 || o.Cause != checker.CauseFault {
		t.Errorf("the first overlap is not the fault's: %+v", o)
	}
}

// fencedResourceSurvives runs the fenced lock under the nemesis name: the
// holds overlap, and the resource rejects the stale writes and loses none.
func fencedResourceSurvives(t *testing.T, name string) {
	t.Helper()
	c := runtest.FaultConfig(t, "fenced", []string{name})
	res, _ := runtest.RunFaults(t, &c)
	if res.Mutex.OverlapCount == 0 {
		t.Fatalf("no overlap: the fault did not hit a held lock: %s", res.Summary)
	}
	if r := res.Resource; r.LostUpdates != 0 || r.StaleAccepted != 0 || r.StaleRejected == 0 {
		t.Errorf("want stale writes rejected and nothing lost: %+v", r)
	}
}

// redlockSplit runs RedLock under the split partition (even clients see
// n0,n1,n2, odd ones n2,n3,n4, their other links refused) for the whole
// run, with the nemeses (partition first) and their options opts, and
// wants the verdict; each side must still acquire. With a second nemesis,
// a fault of it must land and lose its lease.
func redlockSplit(t *testing.T, nemeses []string, want checker.Verdict, opts ...string) {
	t.Helper()
	split := []string{"partition.shape=split", "partition.schedule=at=0s", "partition.duration=1h"}
	c := runtest.FaultConfig(t, "redlock", nemeses, append(append(split, opts...), "partition.mode=refuse")...)
	// The jump's holder stays inside until the client of the other
	// side takes the lock, within its lease. One client a side:
	// with two, the clients of one side (and the other side's
	// second client, which wants n2 too) took n2 from each other in
	// rounds paced alike by the partitioned nodes' timeouts, and on
	// a loaded machine the lease could pass before anyone won.
	c.TTL, c.Hold, c.Duration, c.Clients = time.Second, 150*ms, 6*time.Second, 2
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, want)
	if len(nemeses) > 1 {
		runtest.Landed(t, res, history.LeaseLost)
	}
	if res.Mutex.Holds < 5 {
		t.Errorf("only %d holds: the split should leave each side able to acquire", res.Mutex.Holds)
	}
}
