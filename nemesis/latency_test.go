package nemesis_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestLatencyOptionsAreDecodedIntoFields(t *testing.T) {
	if l := nemesis.MustBuild(t, "latency", nil).(*nemesis.Latency); l.Delay != 25*time.Millisecond || l.Jitter != 10*time.Millisecond ||
		l.Duration != 500*time.Millisecond || l.Stream != "both" || l.Links != nemesis.LinkChoice("all", -1) {
		t.Errorf("latency defaults: %+v", l)
	}
}

func TestBadLatencyOptionsAreRefused(t *testing.T) {
	refused(t, []badOption{
		{"latency", "stream", "sideways", `option latency.stream="sideways": want upstream, downstream or both`},
		{"latency", "links", "client=x", "want all, holder, client, node, client=N or node=N"},
		{"latency", "delay", "300", "a number needs a unit"},
	})
}

func TestLatencyAppliesChecksTheTopology(t *testing.T) {
	applies(t, []appliesCase{
		{"latency", map[string]string{"links": "node=3"}, topoRun, "links=node=3"},
	})
}

func TestLatencyIsRecordedAndShortHoldsStaySafe(t *testing.T) {
	c := runtest.Config(t, "token-lua", "latency")
	c.Hold = 10 * ms
	c.NemesisOptions = map[string]map[string]string{"latency": {"delay": "40ms", "jitter": "10ms", "duration": "800ms"}}
	res := runtest.RunChecked(t, c)
	if res.Verdict != checker.Safe {
		t.Fatalf("verdict %s, want safe: %s %v", res.Verdict, res.Summary, res.Reasons)
	}
	if len(res.Faults) == 0 {
		t.Fatal("no latency fault was recorded")
	}
	// The delay is real: acquires slow down while it is on.
	if res.Acquire.Maxms < 80 {
		t.Errorf("slowest acquire took %.1f ms; with 40 ms each way it should exceed 80 ms", res.Acquire.Maxms)
	}
}

// A link fault given one client's links (links=client=N) is aimed at,
// judged on and described by that client, whichever client the step drew:
// its window names client N, its aimed hold is N's, and its effect speaks
// of N's lease.
func TestLinkFaultOnANamedClientIsJudgedOnIt(t *testing.T) {
	for _, nem := range []string{"latency", "slow-reply"} {
		t.Run(nem, func(t *testing.T) {
			c := runtest.Config(t, "token-lua", nem)
			c.Duration = 8 * time.Second
			c.NemesisOptions = map[string]map[string]string{nem: {"links": "client=1", "duration": "2ttl", "schedule": "every=1ttl"}}
			res, err := runner.Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Faults) < 2 {
				t.Fatalf("%d faults, want several steps (each draws its own client): %s", len(res.Faults), res.Summary)
			}
			for _, f := range res.Faults {
				if !slices.Equal(f.Clients, []int{1}) || f.Aim != nil && f.Aim.Client != 1 || !strings.Contains(f.Effect, "client 1") {
					t.Errorf("fault %d %q: clients %v, aimed at %+v, effect %q; want all of them client 1's", f.ID, f.Target, f.Clients, f.Aim, f.Effect)
				}
			}
		})
	}
}
