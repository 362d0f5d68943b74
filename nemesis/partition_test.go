package nemesis_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/workload"
)

// The split gives each side a majority and shares as few nodes as
// possible: RedLock's five nodes share exactly one.
func TestSplitViewsAreOverlappingMajorities(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		nodes     int
		even, odd []int
	}{
		{3, []int{0, 1}, []int{1, 2}},
		{5, []int{0, 1, 2}, []int{2, 3, 4}},
		{4, []int{0, 1, 2}, []int{1, 2, 3}},
		{7, []int{0, 1, 2, 3}, []int{3, 4, 5, 6}},
	} {
		even, odd := nemesis.Views(tc.nodes)
		if !reflect.DeepEqual(even, tc.even) || !reflect.DeepEqual(odd, tc.odd) {
			t.Errorf("Views(%d) = %v, %v; want %v, %v", tc.nodes, even, odd, tc.even, tc.odd)
		}
	}
}

func TestPartitionOptionsAreDecodedIntoFields(t *testing.T) {
	t.Parallel()
	if p := nemesis.MustBuild(t, "partition", map[string]string{"client": "random", "node": "1", "mode": "refuse"}).(*nemesis.Partition); p.Client != nemesis.HolderClient || p.Node != 1 || p.Mode != "refuse" {
		t.Errorf("partition: %+v", p)
	}
	if p := nemesis.MustBuild(t, "partition", map[string]string{"client": "3", "node": "random"}).(*nemesis.Partition); p.Client != 3 || p.Node != nemesis.RandomNode {
		t.Errorf("partition client=3: %+v", p)
	}
}

func TestBadPartitionOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"partition", "shape", "ring", "want node, client or split"},
		{"partition", "client", "-1", "want holder or a client number"},
		{"partition", "mode", "slow", "want drop or refuse"},
	})
}

func TestPartitionAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"partition", map[string]string{"shape": "split"}, nemesis.Topology{Store: "redis", LockNodes: 1, Workload: workload.Workload{Clients: 4}}, "needs at least 3 lock nodes"},
		{"partition", map[string]string{"shape": "split", "node": "7"}, topoRun, ""},
		{"partition", map[string]string{"shape": "client", "client": "4"}, topoRun, "client=4, but the run has clients 0 to 3"},
		{"partition", map[string]string{"shape": "client", "node": "7"}, topoRun, ""},
		{"partition", map[string]string{"node": "7"}, topoRun, "node=7"},
	})
}

// A partition of a lock node from every client, and of a client from
// every lock node (its links refused), with holds far below the TTL: the
// clients feel it (outcomes they cannot know), it heals, and a token lock
// stays safe.
func TestPartitionHealsAndStaysSafe(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]string{
		{"partition.shape=node"},
		{"partition.shape=client", "partition.mode=refuse"},
	} {
		t.Run(strings.Join(opts, ","), func(t *testing.T) {
			healsAndStaysSafe(t, "partition", opts, unknownOutcomes)
		})
	}
}

// RedLock under the split partition (even clients see n0,n1,n2, odd ones
// n2,n3,n4) is safe while n2 keeps its keys (a clock jump on n2 breaks it:
// TestRedlockSplitBreaksWhenTheSharedNodeClockJumps).
func TestRedlockSplitIsSafe(t *testing.T) {
	t.Parallel()
	redlockSplit(t, []string{"partition"}, checker.Safe)
}
