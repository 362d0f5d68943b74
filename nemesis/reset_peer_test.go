package nemesis_test

import "testing"

func TestResetPeerAppliesChecksTheTopology(t *testing.T) {
	applies(t, []appliesCase{
		{"reset-peer", map[string]string{"links": "client=4"}, topoRun, "links=client=4"},
	})
}

// Connections reset on every link, with holds far below the TTL: the
// clients feel it (outcomes they cannot know), it heals, and a token lock
// stays safe.
func TestResetPeerHealsAndStaysSafe(t *testing.T) {
	healsAndStaysSafe(t, "reset-peer", nil, unknownOutcomes)
}
