package nemesis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestResetPeerAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"reset-peer", map[string]string{"links": "client=4"}, topoRun, "links=client=4"},
	})
}

// Connections reset on every link, with holds far below the TTL: the
// clients feel it (outcomes they cannot know), it heals, and a token lock
// stays safe.
func TestResetPeerHealsAndStaysSafe(t *testing.T) {
	t.Parallel()
	healsAndStaysSafe(t, "reset-peer", nil, unknownOutcomes)
}

func TestResetPeerSpanRenewalNeedsTheHolder(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"reset-peer", "span", "renewal", "needs links=holder"},
		{"reset-peer", "span", "lease", "want duration or renewal"},
	})
	if r := nemesis.MustBuild(t, "reset-peer", map[string]string{"links": "holder", "span": "renewal"}).(*nemesis.ResetPeer); r.Hold != 150*ms || r.Span != "renewal" {
		t.Errorf("reset-peer span=renewal: %+v", r)
	}
}

// span=renewal resets the holder's connections across exactly its lease's
// first renewal, and keeps it at work for 1.5 leases: Redisson's watchdog
// before 3.44.0 gives up after that one failure and the lease runs out
// under its holder (redisson#775); one that renews again keeps it.
func TestResetPeerAcrossOneRenewal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keep  string
		want  checker.Verdict
		lease string
	}{
		{"false", checker.Violation, history.LeaseLost},
		{"true", checker.Safe, history.LeaseKept},
	} {
		t.Run("keep-renewing="+tc.keep, func(t *testing.T) {
			c := runtest.FaultConfig(t, "reentrant-watchdog", []string{"reset-peer"},
				"reset-peer.links=holder", "reset-peer.span=renewal", "reset-peer.schedule=at=300ms",
				"reentrant-watchdog.keep-renewing="+tc.keep)
			// A sixth of the 1.5 s lease, 250 ms, between the fault's
			// edges and the renewals on either side.
			c.TTL, c.Hold, c.Clients, c.Duration = 1500*ms, 100*ms, 3, 6*time.Second
			res, _ := runtest.RunFaults(t, &c)
			runtest.Verdict(t, res, tc.want)
			runtest.Landed(t, res, tc.lease)
			if f := res.Faults[0]; f.Params["span"] != "renewal" || !strings.Contains(f.Effect, "exactly the first renewal failed") {
				t.Errorf("the fault does not say it failed exactly one renewal: %v %s", f.Params, f.Effect)
			}
		})
	}
}
