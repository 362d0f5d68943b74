package nemesis_test

import "testing"

func TestBadPauseNodeOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"pause-node", "node", "first", "want holder, random or a lock node number"},
	})
}

func TestPauseNodeAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"pause-node", nil, topoRun, ""},
		{"pause-node", map[string]string{"node": "2"}, topoRun, ""},
		{"pause-node", map[string]string{"node": "3"}, topoRun, "node=3, but the run has lock nodes 0 to 2"},
	})
}

// A paused lock node, with holds far below the TTL: the clients feel it
// (outcomes they cannot know), it heals, and a token lock stays safe.
func TestPauseNodeHealsAndStaysSafe(t *testing.T) {
	t.Parallel()
	healsAndStaysSafe(t, "pause-node", nil, unknownOutcomes)
}
