package nemesis_test

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestAckLossAppliesToRedisLocksOnly(t *testing.T) {
	applies(t, []appliesCase{
		{"ack-loss", nil, topoRun, ""},
		{"ack-loss", map[string]string{"links": "client=4"}, topoRun, "links=client=4"},
	})
}

// The non-atomic SETNX then EXPIRE under lost answers: the fault waits for
// an acquire of its client whose answer it dropped and that left the key
// set for nobody; that client never sends the EXPIRE, so the key stays for
// good. The server carried the request out (the key is there) while the
// client heard nothing: the effect of the fault, seen from the nodes and
// from the history alike.
func TestAckLossLeavesAGrantNobodyKnowsOf(t *testing.T) {
	c := runtest.FaultConfig(t, "setnx-expire", []string{"ack-loss"})
	c.Clients, c.Think, c.Duration = 2, c.TTL, 20*c.TTL
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Safe)
	runtest.Landed(t, res, "")
	f := res.Faults[0]
	if !strings.Contains(f.Effect, "a grant nobody knows of") {
		t.Errorf("the fault's effect names no grant left for nobody: %q", f.Effect)
	}
	if len(res.Liveness.DeadlockedKeys) == 0 {
		t.Errorf("no key deadlocked after the lost SETNX answer: %+v", res.Liveness)
	}
}

// A Redlock cleans up a failed attempt on every node: the answers are
// lost, the grant never outlives the attempt, and the fault says so.
func TestAckLossOnARedlockIsUndoneByTheLibrary(t *testing.T) {
	c := runtest.FaultConfig(t, "redlock", []string{"ack-loss"})
	c.Clients, c.Think, c.Duration = 2, c.TTL, 13*c.TTL
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Safe)
	runtest.Landed(t, res, "")
	if f := res.Faults[0]; !strings.Contains(f.Effect, "its answer was lost") || strings.Contains(f.Effect, "a grant nobody knows of") {
		t.Errorf("effect %q: want an acquire whose answer was lost, and no grant left for nobody", f.Effect)
	}
}
