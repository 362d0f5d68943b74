package nemesis_test

import "testing"

func TestClockJumpTTLAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"clock-jump-ttl", map[string]string{"node": "3"}, topoRemote, "node=3"},
		{"clock-jump-ttl", nil, topoRemote, ""},
	})
}

// clock-jump-ttl emulates a clock jump past the TTL on any Redis (PEXPIRE,
// no clock shim): it frees a held lock as the real jump does
// (TestClockJumpExpiresAHeldLock).
func TestClockJumpTTLExpiresAHeldLock(t *testing.T) {
	t.Parallel()
	clockJumpExpires(t, "clock-jump-ttl", "pexpire")
}
