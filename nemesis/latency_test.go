package nemesis_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestLatencyOptionsAreDecodedIntoFields(t *testing.T) {
	t.Parallel()
	if l := nemesis.MustBuild(t, "latency", nil).(*nemesis.Latency); l.Delay != 25*time.Millisecond || l.Jitter != 10*time.Millisecond ||
		l.Duration != 500*time.Millisecond || l.Stream != "both" || l.Links != nemesis.LinkChoice("all", -1) {
		t.Errorf("latency defaults: %+v", l)
	}
}

func TestBadLatencyOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"latency", "stream", "sideways", `option latency.stream="sideways": want upstream, downstream or both`},
		{"latency", "links", "client=x", "want all, holder, client, node, client=N, node=N or peers"},
		{"latency", "delay", "300", "a number needs a unit"},
	})
}

func TestLatencyAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"latency", map[string]string{"links": "node=3"}, topoRun, "links=node=3"},
		{"latency", map[string]string{"links": "peers"}, topoRun, "without replicas (--replicas)"},
		{"latency", map[string]string{"links": "peers"}, topoReplicated, ""},
		{"latency", map[string]string{"links": "peers"}, nemesis.Topology{Store: "etcd", LockNodes: 3, Quorum: 1}, "etcd's servers do not talk to each other through the run's proxies"},
		{"latency", map[string]string{"links": "peers"}, nemesis.Topology{Store: "no-such-store", LockNodes: 3, Quorum: 1}, "no-such-store's servers do not talk"},
	})
}

func TestLatencyIsRecordedAndShortHoldsStaySafe(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	for _, nem := range []string{"latency", "slow-reply"} {
		t.Run(nem, func(t *testing.T) {
			c := runtest.Config(t, "token-lua", nem)
			c.Duration = 8 * time.Second
			// Client 1's slowed acquires must find the lock free now and
			// then: against one other client that thinks longer than it
			// holds, most of them do, and a step lands within a few tries.
			c.Clients, c.Think = 2, 100*ms
			c.NemesisOptions = map[string]map[string]string{nem: {"links": "client=1", "duration": "2ttl", "schedule": "every=1ttl"}}
			res, err := runner.Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Faults) < 2 {
				t.Fatalf("%d faults, want several steps (each draws its own client): %s", len(res.Faults), res.Summary)
			}
			// The test tells only if some step drew another client.
			if drawn := stepClients(t, c.Out, nem); !slices.ContainsFunc(drawn, func(c int) bool { return c != 1 }) {
				t.Fatalf("every step drew client 1 (%v): another seed is needed to tell", drawn)
			}
			landed := 0
			for _, f := range res.Faults {
				// slow-reply aims at no hold when the late acquire got no lease.
				aimOK := f.Aim != nil && f.Aim.Client == 1 || f.Aim == nil && nem == "slow-reply"
				if !slices.Equal(f.Clients, []int{1}) || !aimOK || !strings.Contains(f.Target, "client 1") || !strings.Contains(f.Effect, "client 1") {
					t.Errorf("fault %d %q: clients %v, aimed at %+v, effect %q; want all of them client 1's", f.ID, f.Target, f.Clients, f.Aim, f.Effect)
				}
				if f.Landed {
					landed++
				}
			}
			if landed == 0 {
				var effects []string
				for _, f := range res.Faults {
					effects = append(effects, f.Effect)
				}
				t.Errorf("no fault landed on client 1's holds: %q", effects)
			}
		})
	}
}

// stepClients are the clients the steps of nemesis name drew, as the run
// in dir recorded them (schedule.json).
func stepClients(t *testing.T, dir, name string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rundir.ScheduleFile))
	if err != nil {
		t.Fatal(err)
	}
	var s nemesis.Timetable
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	steps, _ := s.Steps(name)
	var out []int
	for _, st := range steps {
		out = append(out, st.Client)
	}
	return out
}

// A link fault with when=wait slows a waiter's keep-alives: replies and
// requests a lease late on client 1's links, while its blocking acquire
// waits behind another client's hold, outlast its session. The fault is
// aimed at, judged on and described by client 1 (links=client=1), and it
// separates a blocking acquire that re-checks its session after waiting
// (etcd's Mutex.Lock since the fix of etcd#11456: safe) from one that does
// not (violation), as a pause of the waiter does.
//
// The violation comes by construction: the waiter hears of the grant a
// delay (1 TTL) after the holder before it released, and by then the next
// client in the queue, which got the lock at that release, still holds it
// (holds last 1.5 TTL, and four clients keep the queue full). With shorter
// holds the next client could be done before the late waiter entered, and
// whether anyone held then was luck. The fault lasts 6 TTL: the waiter can
// queue behind three holds (4.5 TTL), and its turn must come while its
// links are slow — with 3 TTL, on a loaded machine, both faults of a run
// ended a few milliseconds before the waiter's turn, which it then heard
// of at once, and its watchdog's lost came before the next holder's grant
// (make test beside the CPU hogs, 2026-11-26).
func TestLatencyOnAWaitersLinksSeparatesALockThatRechecksItsSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lock string
		want checker.Verdict
	}{
		{"etcd-mutex", checker.Safe},
		{"etcd-mutex-unchecked", checker.Violation},
	} {
		t.Run(tc.lock, func(t *testing.T) {
			var res checker.Result
			for attempt := 1; ; attempt++ {
				c := runtest.FaultConfig(t, tc.lock, []string{"latency"}, "latency.when=wait", "latency.links=client=1",
					"latency.delay=1ttl", "latency.jitter=0s", "latency.duration=6ttl")
				c.TTL, c.Hold, c.Wait, c.Duration = time.Second, 1500*ms, 8*time.Second, 10*time.Second
				var events []history.Event
				res, events = runtest.RunFaults(t, &c)
				// The late grant and the lost that the session's slowed
				// keep-alive brings can come in the same instant (seen
				// beside eight CPU hogs, 2026-11-28): the client lets go
				// before it touches anything, and the run shows nothing
				// of what the unchecked grant allows. Run it again.
				if tc.want == checker.Violation && res.Verdict == checker.Safe && attempt < 3 && lostWithGrant(events, 1) {
					t.Logf("client 1 learned its session was gone as its grant came: no evidence, running it again")
					continue
				}
				break
			}
			runtest.Verdict(t, res, tc.want)
			if res.Evidence.Landed == 0 {
				t.Errorf("no fault on a waiter's links landed")
			}
			for _, f := range res.Faults {
				if !slices.Equal(f.Clients, []int{1}) || !strings.Contains(f.Target, "client 1 waiting") || f.Params["when"] != "wait" ||
					!strings.Contains(f.Effect, "client 1's blocking acquire") {
					t.Errorf("fault %d %q (%v): clients %v, effect %q; want client 1 waiting", f.ID, f.Target, f.Params, f.Clients, f.Effect)
				}
			}
		})
	}
}

// lostWithGrant says whether client c's lock reported a lease lost within
// 100 ms of a grant of the same key: a hold that ended as it began.
func lostWithGrant(events []history.Event, c int) bool {
	granted := map[string]int64{}
	for _, e := range events {
		switch {
		case e.Client != c:
		case e.Kind == history.OK && e.F == history.Acquire:
			granted[e.Key] = e.Time
		case e.Kind == history.Lost:
			if at, ok := granted[e.Key]; ok && e.Time-at <= (100*time.Millisecond).Nanoseconds() {
				return true
			}
		}
	}
	return false
}
