package nemesis_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestBadCrashRestartOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"crash-restart", "when", "never", "want hold or any"},
		{"crash-restart", "votes", "most", "want any, bare or spare"},
	})
}

func TestCrashRestartAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"crash-restart", map[string]string{"node": "3"}, topoRun, "node=3"},
	})
}

// A node killed and restarted without persistence forgets the lock while
// its holder still works; a restart delayed past the TTL (antirez's
// mitigation) or AOF with fsync always keeps the lock.
func TestCrashRestartForgetsLocksUnlessPersistedOrDelayed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		persistence string
		opts        []string
		want        checker.Verdict
		lease       string
	}{
		{"no persistence", "none", nil, checker.Violation, history.LeaseLost},
		{"delayed restart", "none", []string{"crash-restart.delay=1.5ttl"}, checker.Safe, ""},
		{"aof always", "always", nil, checker.Safe, history.LeaseKept},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runtest.FaultConfig(t, "token-lua", []string{"crash-restart"}, tc.opts...)
			// A restart takes up to a few hundred ms on a busy machine:
			// the lease must outlast it for the node to forget a live one.
			c.TTL, c.Hold, c.Persistence, c.Duration, c.FaultInterval = time.Second, 200*ms, tc.persistence, 6*time.Second, 500*ms
			res, events := runtest.RunHealed(t, &c)
			runtest.Verdict(t, res, tc.want)
			runtest.Landed(t, res, tc.lease)
			if p := res.Faults[0].Params["persistence"]; p != tc.persistence {
				t.Errorf("fault params say persistence %q, want %q", p, tc.persistence)
			}
			runtest.AnsweredAfterFirstFault(t, c, events)
			// The node's log, kept in the run's directory, shows the crash
			// and the restart: two starts of the server.
			b, err := os.ReadFile(filepath.Join(c.Out, "nodes", "n0.log"))
			if err != nil {
				t.Fatalf("the run kept no log of lock node n0: %v", err)
			}
			if n := strings.Count(string(b), "Ready to accept connections"); n < 2 {
				t.Errorf("nodes/n0.log shows %d starts of the server, want at least 2 (start and restart)", n)
			}
		})
	}
}
