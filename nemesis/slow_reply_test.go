package nemesis_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestSlowReplyOptionsAreDecodedIntoFields(t *testing.T) {
	if s := nemesis.MustBuild(t, "slow-reply", nil).(*nemesis.SlowReply); s.Links != nemesis.LinkChoice("client", -1) {
		t.Errorf("slow-reply links default: %+v, want a random client's", s.Links)
	}
	if s := nemesis.MustBuild(t, "slow-reply", map[string]string{"links": "node=2"}).(*nemesis.SlowReply); s.Links != nemesis.LinkChoice("node", 2) {
		t.Errorf("slow-reply links=node=2: %+v", s.Links)
	}
}

func TestSlowReplyAppliesChecksTheTopology(t *testing.T) {
	applies(t, []appliesCase{
		{"slow-reply", map[string]string{"links": "client=4"}, topoRun, "links=client=4"},
		{"slow-reply", map[string]string{"links": "client=3"}, topoRun, ""},
	})
}

// Replies 0.85 TTL late on one client's links (its requests are not
// delayed): the server granted the lease at once, the client hears of it
// with less of it left than its hold, and works under it while the other
// client takes the lock. The fault delays only the replies of the client
// it aimed at, the lease it aimed at is lost, and the first overlap is its
// doing. Two clients that think for up to a TTL and wait up to a TTL for
// the lock leave it free often, and try again soon (the grid's cell).
func TestSlowReplyHandsOutAnExpiredLease(t *testing.T) {
	c := runtest.FaultConfig(t, "token-lua", []string{"slow-reply"})
	c.Clients, c.Think, c.Wait, c.Duration = 2, c.TTL, c.TTL, 13*c.TTL
	res, _ := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Violation)
	runtest.Landed(t, res, history.LeaseLost)
	f := res.Faults[0]
	if f.Params["stream"] != "downstream" || !slices.Equal(f.Clients, []int{mustAtoi(t, f.Params["client"])}) {
		t.Errorf("the fault did not slow only the replies to the client it aimed at: clients %v, %v", f.Clients, f.Params)
	}
	if o := res.Mutex.Overlaps[0]; len(o.Faults) == 0 || o.Cause != checker.CauseFault {
		t.Errorf("the first overlap is not the fault's: %+v", o)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
