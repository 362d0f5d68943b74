package nemesis_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/lockchaos/lockchaos/runner/runtest"
	"github.com/lockchaos/lockchaos/workload"
)

func TestFailoverSentinelOptionsAreDecodedIntoFields(t *testing.T) {
	t.Parallel()
	if f := nemesis.MustBuild(t, "failover-sentinel", map[string]string{"cut": "none"}).(*nemesis.FailoverSentinel); f.Timeout != 20*time.Second || f.Cut != "none" || f.Votes != "any" {
		t.Errorf("failover-sentinel: %+v", f)
	}
}

func TestBadFailoverSentinelOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"failover-sentinel", "cut", "promoted", "want all or none"},
	})
}

func TestFailoverSentinelAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"failover-sentinel", nil, topoReplicated, "needs replicas and sentinels"},
		{"failover-sentinel", nil, topoSentinels, ""},
		{"failover-sentinel", map[string]string{"node": "3"}, topoSentinels, "node=3"},
		{"failover-sentinel", map[string]string{"manual": "true"}, topoSentinels, "single-node lock"},
		{"failover-sentinel", map[string]string{"manual": "true"}, nemesis.Topology{Store: "redis", LockNodes: 1, Quorum: 1, Workload: workload.Workload{Clients: 4}, Topology: cluster.Topology{Backend: "local", Replicas: 1, Sentinels: 3}}, ""},
	})
}

// Real redis-sentinel processes decide the promotion; the coordinator points
// the clients' links at the primary they name.
func TestFailoverDecidedBySentinelsLosesTheLock(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Fatal("redis-sentinel is not installed: run make setup as root, or apt-get install -y redis-sentinel")
	}
	c := runtest.FaultConfig(t, "token-lua", []string{"failover-sentinel"})
	// Sentinel needs two to seven seconds to agree on a busy machine; the
	// lease must outlast that (the nemesis keeps the holder inside until
	// the promotion, within its lease). Thinking 100 ms between attempts leaves the lock free now and
	// then, which is when the nemesis cuts replication.
	c.TTL, c.Hold, c.Think, c.FaultInterval, c.Duration = 10*time.Second, 200*ms, 100*ms, 300*ms, 14*time.Second
	c.Replicas, c.Sentinels = 1, 3
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Violation)
	runtest.Landed(t, res, history.LeaseLost)
	if p := runtest.FirstLanded(t, res).Params; p["promoted-by"] != "3 sentinels" || p["sentinel-decision"] == "" {
		t.Errorf("the fault that landed does not show a sentinel promotion: %v", p)
	}
	runtest.SentinelsSawTheFailover(t, c)
}

// A manual failover (SENTINEL FAILOVER) of a healthy primary: nothing is
// killed, replication is never cut, and the lock acquired on the old
// primary after the sentinels promoted its replica is lost when the
// clients follow them (redis/redis#6062).
func TestManualSentinelFailoverLosesALockTakenOnTheOldPrimary(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Fatal("redis-sentinel is not installed: run make setup as root, or apt-get install -y redis-sentinel")
	}
	c := runtest.FaultConfig(t, "token-lua", []string{"failover-sentinel"}, "failover-sentinel.manual=true", "failover-sentinel.schedule=at=300ms")
	c.TTL, c.Hold, c.Duration = time.Second, 100*ms, 8*time.Second
	c.Replicas, c.Sentinels = 1, 3
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Violation)
	runtest.Landed(t, res, history.LeaseLost)
	p := res.Faults[0].Params
	if p["manual"] != "true" || p["cut"] != "none" || p["killed"] != "" || p["old-primary-role"] != "master" || p["old-primary-had-key"] != "true" || p["acquired-on-old-primary"] == "" {
		t.Errorf("the fault does not show a manual failover with the lock taken on the old, live primary: %v", p)
	}
	runtest.SentinelsSawTheFailover(t, c)
}

// A client that follows Sentinel itself reaches each member through a link
// of its own: a failover re-points the links that lead to the lock node's
// primary and leaves these where they lead, while a fault on the client's
// links to the lock node finds them too.
func TestAFailoverLeavesTheLinksToOneMemberAlone(t *testing.T) {
	t.Parallel()
	ps := proxy.New()
	defer ps.Close()
	node, err := ps.Add(0, 0, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	member, err := ps.AddMember(0, 0, "n0", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := nemesis.Redirect(ps, 0, "127.0.0.1:2"); err != nil {
		t.Fatal(err)
	}
	if node.Upstream() != "127.0.0.1:2" || member.Upstream() != "127.0.0.1:1" {
		t.Errorf("after the failover: the lock node's link leads to %s (want the new primary), the member's to %s (want its member)", node.Upstream(), member.Upstream())
	}
	if got := ps.Links(func(c int) bool { return c == 0 }, func(n int) bool { return n == 0 }); len(got) != 2 {
		t.Errorf("client 0's links to lock node 0: %d, want both", len(got))
	}
}
