package nemesis_test

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestAckLossAppliesToRedisLocksOnly(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"ack-loss", nil, topoRun, ""},
		{"ack-loss", map[string]string{"links": "client=4"}, topoRun, "links=client=4"},
		{"ack-loss", map[string]string{"links": "peers"}, topoReplicated, "client links only"},
	})
}

// The non-atomic SETNX then EXPIRE under lost answers: the fault waits for
// an acquire of its client whose answer it dropped and that left the key
// set for nobody; that client never sends the EXPIRE, so the key stays for
// good. The server carried the request out (the key is there) while the
// client heard nothing: the effect of the fault, seen from the nodes and
// from the history alike.
func TestAckLossLeavesAGrantNobodyKnowsOf(t *testing.T) {
	t.Parallel()
	c := runtest.FaultConfig(t, "setnx-expire", []string{"ack-loss"})
	c.Clients, c.Think, c.Duration = 2, c.TTL, 20*c.TTL
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Safe)
	runtest.Landed(t, res, "")
	granted := false
	for _, f := range res.Faults {
		granted = granted || f.Landed && strings.Contains(f.Effect, "a grant nobody knows of")
	}
	if !granted {
		t.Errorf("no fault's effect names a grant left for nobody: %+v", res.Faults)
	}
	if len(res.Liveness.DeadlockedKeys) == 0 {
		t.Errorf("no key deadlocked after the lost SETNX answer: %+v", res.Liveness)
	}
}

// A Redlock under lost answers: its acquire times out on every node while
// the nodes set the key, and no node's answer reaches it, so it holds
// nothing; whatever it leaves on the nodes (its clean-up of the failed
// attempt needs answers too) only keeps others out until the key expires.
// Safe, and the fault landed: the nodes carried the acquire out.
func TestAckLossOnARedlockIsSafe(t *testing.T) {
	t.Parallel()
	c := runtest.FaultConfig(t, "redlock", []string{"ack-loss"})
	c.Clients, c.Think, c.Duration = 2, c.TTL, 13*c.TTL
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Safe)
	runtest.Landed(t, res, "")
	for _, f := range res.Faults {
		if f.Landed && !strings.Contains(f.Effect, "its answer was lost") {
			t.Errorf("a fault landed without an acquire whose answer was lost: %q", f.Effect)
		}
	}
}
