package nemesis_test

import (
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestBadClockJumpOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"clock-jump", "direction", "up", "want forward or backward"},
	})
}

func TestClockJumpAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"clock-jump", nil, topoRun, ""},
		{"clock-jump", nil, topoRemote, "clock-jump needs the clock shim"},
		{"clock-jump", map[string]string{"node": "5"}, topoRun, "node=5"},
	})
}

// Redis expires keys by its own wall clock: a node whose clock jumps forward
// past the TTL frees a held lock. The shim moves the real clock of the
// redis-server process (clock-jump-ttl emulates the jump on any Redis:
// TestClockJumpTTLExpiresAHeldLock).
func TestClockJumpExpiresAHeldLock(t *testing.T) {
	t.Parallel()
	runtest.NeedClockShim(t)
	clockJumpExpires(t, "clock-jump", "shim")
}

// RedLock under the split partition is safe while n2, the node both sides
// share, keeps its keys (TestRedlockSplitIsSafe); a clock jump on n2 lets
// both sides reach a majority at once.
func TestRedlockSplitBreaksWhenTheSharedNodeClockJumps(t *testing.T) {
	t.Parallel()
	runtest.NeedClockShim(t)
	// Under the split every hold is a bare majority that n2
	// shares: its jump takes the lease away, and the holder
	// stays inside until the other side takes the lock.
	redlockSplit(t, []string{"partition", "clock-jump"}, checker.Violation, "clock-jump.node=2", "clock-jump.duration=1ttl")
}

// Fencing tokens protect the resource from a clock jump: the holds overlap,
// the stale writes are rejected.
func TestFencedResourceSurvivesClockJumps(t *testing.T) {
	t.Parallel()
	runtest.NeedClockShim(t)
	fencedResourceSurvives(t, "clock-jump")
}
