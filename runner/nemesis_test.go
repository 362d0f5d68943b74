package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/procs"
	"github.com/lockchaos/lockchaos/nemesis"
)

// The nemesis catalogue against real redis-server (and redis-sentinel)
// processes: each fault is recorded as a window, heals, and reaches the
// verdict its failure mode predicts. Runs are short (2.5–4 s, TTLs of a few
// hundred ms); the sentinel one is longer because Sentinel takes about 1.5 s
// to decide.

// faultCfg is a run with the given options per nemesis ("name.key=value").
func faultCfg(t *testing.T, lock string, nemeses []string, opts ...string) Config {
	t.Helper()
	c := cfg(t, lock, nemeses...)
	c.Duration = 3 * time.Second
	c.NemesisOptions = map[string]map[string]string{}
	c.LockOptions = map[string]string{}
	for _, o := range opts {
		kv := strings.SplitN(o, "=", 2)
		name, key, _ := strings.Cut(kv[0], ".")
		if name == lock {
			c.LockOptions[key] = kv[1]
			continue
		}
		if c.NemesisOptions[name] == nil {
			c.NemesisOptions[name] = map[string]string{}
		}
		c.NemesisOptions[name][key] = kv[1]
	}
	return c
}

// runFaults runs c and checks what every fault run must show: the stored
// history re-checks to the same verdict, at least one fault window, every
// window closed, no heal that failed, and no redis-server or redis-sentinel
// of ours left running. (It counts only this process's children: other
// runs on the machine start and stop their own.)
func runFaults(t *testing.T, c *Config) (checker.Result, []history.Event) {
	t.Helper()
	res, err := runEvidence(t, c)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("%s: %s", res.Verdict, res.Summary)
	for _, f := range res.Faults {
		t.Logf("fault %d %s: landed %v, lease %q: %s", f.ID, f.Name, f.Landed, f.Lease, f.Effect)
	}
	if again, err := CheckDir(c.Out, 0); err != nil || again.Verdict != res.Verdict {
		t.Errorf("re-checking the stored history: %v, verdict %s vs %s", err, again.Verdict, res.Verdict)
	}
	if left := procs.Children("redis-"); len(left) > 0 {
		t.Errorf("processes of this run left running: %v", left)
	}
	events, _, err := history.ReadFile(filepath.Join(c.Out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Faults) == 0 {
		t.Fatalf("no fault was recorded: %s", res.Summary)
	}
	for _, f := range res.Faults {
		if f.EndMs == nil {
			t.Errorf("fault %d (%s, %s) has no end", f.ID, f.Name, f.Target)
		}
	}
	for _, e := range events {
		if e.Kind == history.FaultEnd && e.Error != "" {
			t.Errorf("fault %d (%s) did not heal cleanly: %s", e.Fault.ID, e.Fault.Target, e.Error)
		}
		if e.Kind == history.RunEnd && e.Error != "" {
			t.Errorf("the run recorded problems: %s", e.Error)
		}
	}
	return res, events
}

// answeredAfterFirstFault checks that every client got a definite answer
// from the lock (ok, or not acquired) after the first fault healed: its
// links, and the node behind them, work again. The run must last long
// enough for the fault to heal before the workers stop.
func answeredAfterFirstFault(t *testing.T, c Config, events []history.Event) {
	t.Helper()
	var end, stopped int64
	for _, e := range events {
		if e.Kind == history.FaultEnd && e.Fault.ID == 1 {
			end = e.Time
		}
		if e.Kind == history.WorkerExit && (stopped == 0 || e.Time < stopped) {
			stopped = e.Time
		}
	}
	if end > stopped {
		t.Fatalf("the first fault healed only after the workers stopped: give the test a longer run")
	}
	answered := map[int]bool{}
	for _, e := range events {
		if e.Time > end && e.F == history.Acquire && (e.Kind == history.OK || e.Kind == history.Fail) {
			answered[e.Client] = true
		}
	}
	if len(answered) < c.Clients {
		t.Errorf("after the first fault healed only clients %v got an answer from the lock; the links did not all heal", answered)
	}
}

// landed checks that some fault landed, and, when lease is set, that one
// of them left its lease in that state: a run's verdict is evidence about
// a fault only when the fault hit a live lease.
func landed(t *testing.T, res checker.Result, lease string) {
	t.Helper()
	for _, f := range res.Faults {
		if f.Landed && (lease == "" || f.Lease == lease) {
			return
		}
	}
	t.Errorf("no fault landed with lease %q: %+v", lease, res.Faults)
}

func verdict(t *testing.T, res checker.Result, want checker.Verdict) {
	t.Helper()
	if res.Verdict != want {
		t.Fatalf("verdict %s, want %s: %s %v", res.Verdict, want, res.Summary, res.Reasons)
	}
}

// Faults on links and on a lock node, with holds far below the TTL: each is
// real (the clients feel it), heals (every client gets answers again), and
// does not break a token lock.
func TestLinkAndNodeFaultsHealAndStaySafe(t *testing.T) {
	unknown := func(r checker.Result) bool { return r.Acquire.Unknown+r.Release.Unknown > 0 }
	for _, tc := range []struct {
		nemesis string
		opts    []string
		felt    func(checker.Result) bool // the clients noticed the fault
	}{
		{"pause-node", nil, unknown},
		{"partition", []string{"partition.shape=node"}, unknown},
		{"partition", []string{"partition.shape=client", "partition.mode=refuse"}, unknown},
		{"reset-peer", nil, unknown},
		{"bandwidth", nil, func(r checker.Result) bool { return r.Acquire.Maxms > 20 }},
		{"jitter", nil, func(r checker.Result) bool { return r.Acquire.Maxms > 30 }},
	} {
		t.Run(strings.Join(append([]string{tc.nemesis}, tc.opts...), ","), func(t *testing.T) {
			opts := append([]string{tc.nemesis + ".schedule=at=300ms", tc.nemesis + ".duration=2ttl"}, tc.opts...)
			c := faultCfg(t, "token-lua", []string{tc.nemesis}, opts...)
			c.Hold, c.Duration = 20*ms, 2500*ms
			res, events := runFaults(t, &c)
			verdict(t, res, checker.Safe)
			if len(res.Faults) != 1 {
				t.Errorf("schedule at=300ms injected %d faults, want 1", len(res.Faults))
			}
			landed(t, res, "")
			if !tc.felt(res) {
				t.Errorf("the clients did not feel the fault: acquires %+v", res.Acquire)
			}
			answeredAfterFirstFault(t, c, events)
		})
	}
}

// A node killed and restarted without persistence forgets the lock while
// its holder still works; a restart delayed past the TTL (antirez's
// mitigation) or AOF with fsync always keeps the lock.
func TestCrashRestartForgetsLocksUnlessPersistedOrDelayed(t *testing.T) {
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
			c := faultCfg(t, "token-lua", []string{"crash-restart"}, tc.opts...)
			// A restart takes up to a few hundred ms on a busy machine:
			// the lease must outlast it for the node to forget a live one.
			c.TTL, c.Hold, c.Persistence, c.Duration, c.FaultInterval = time.Second, 200*ms, tc.persistence, 6*time.Second, 500*ms
			res, events := runFaults(t, &c)
			verdict(t, res, tc.want)
			landed(t, res, tc.lease)
			if p := res.Faults[0].Params["persistence"]; p != tc.persistence {
				t.Errorf("fault params say persistence %q, want %q", p, tc.persistence)
			}
			answeredAfterFirstFault(t, c, events)
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

// The failover race: with replication cut, a key set on the primary is lost
// when a replica is promoted, and a second client takes a held lock. With
// replication healthy the same failover keeps the lock.
func TestFailoverBeforeReplicationLosesTheLock(t *testing.T) {
	for _, tc := range []struct {
		cut   string
		want  checker.Verdict
		lease string
	}{
		{"all", checker.Violation, history.LeaseLost},
		{"none", checker.Safe, history.LeaseKept},
	} {
		t.Run("cut="+tc.cut, func(t *testing.T) {
			c := faultCfg(t, "token-lua", []string{"failover"}, "failover.cut="+tc.cut)
			c.Hold, c.Replicas, c.Duration = 100*ms, 1, 5*time.Second
			res, events := runFaults(t, &c)
			verdict(t, res, tc.want)
			landed(t, res, tc.lease)
			p := res.Faults[0].Params
			if p["killed"] == "" || p["promoted"] == "" || p["killed"] == p["promoted"] {
				t.Errorf("the fault does not say which primary died and which replica took over: %v", p)
			}
			if p["acquired-after-cut"] == "" {
				t.Errorf("nobody acquired while replication was cut: %v", p)
			}
			answeredAfterFirstFault(t, c, events)
		})
	}
}

// Redis expires keys by its own wall clock: a node whose clock jumps forward
// past the TTL frees a held lock. The shim moves the real clock of the
// redis-server process; clock-jump-ttl emulates the jump on any Redis.
func TestClockJumpExpiresAHeldLock(t *testing.T) {
	shimForTest(t)
	for _, tc := range []struct{ nemesis, variant string }{
		{"clock-jump", "shim"},
		{"clock-jump-ttl", "pexpire"},
	} {
		t.Run(tc.nemesis, func(t *testing.T) {
			c := faultCfg(t, "token-lua", []string{tc.nemesis})
			res, _ := runFaults(t, &c)
			verdict(t, res, checker.Violation)
			landed(t, res, history.LeaseLost)
			if v := res.Faults[0].Params["variant"]; v != tc.variant {
				t.Errorf("variant %q, want %q", v, tc.variant)
			}
			if o := res.Mutex.Overlaps[0]; len(o.Faults) == 0 || o.Cause != checker.CauseFault {
				t.Errorf("the first overlap is not the fault's: %+v", o)
			}
		})
	}
}

// A critical section that outlives the TTL with no fault at all breaks a
// plain lease; a watchdog that keeps renewing, in a process that keeps
// running, survives it. A pause freezes the watchdog too, and the lease is
// lost.
func TestSlowHoldBreaksLeasesButNotWatchdogsAndPausesBreakBoth(t *testing.T) {
	for _, tc := range []struct {
		lock, nemesis string
		want          checker.Verdict
		lease         string
	}{
		{"token-lua", "slow-hold", checker.Violation, history.LeaseLost},
		{"reentrant-watchdog", "slow-hold", checker.Safe, history.LeaseKept},
		{"reentrant-watchdog", "pause-client", checker.Violation, history.LeaseLost},
	} {
		t.Run(tc.lock+"+"+tc.nemesis, func(t *testing.T) {
			c := faultCfg(t, tc.lock, []string{tc.nemesis})
			res, _ := runFaults(t, &c)
			verdict(t, res, tc.want)
			landed(t, res, tc.lease)
		})
	}
}

// Kleppmann's pause during the acquire: the server grants the lock, the OK
// waits in the paused client's socket buffer, and the client acts on it
// long after the lease expired. It needs a client whose own deadline
// outlasts the pause (--op-timeout 3s here).
func TestPauseDuringAcquireActsOnAStaleGrant(t *testing.T) {
	c := faultCfg(t, "token-lua", []string{"pause-client"}, "pause-client.phase=acquire")
	c.OpTimeout, c.Think, c.Duration = 3*time.Second, 50*ms, 4*time.Second
	res, _ := runFaults(t, &c)
	verdict(t, res, checker.Violation)
	if res.Acquire.Maxms < float64(c.TTL/ms) {
		t.Errorf("no acquire returned after its lease could have expired (slowest %.0f ms)", res.Acquire.Maxms)
	}
	if len(res.Mutex.Overlaps[0].Faults) == 0 {
		t.Errorf("the overlap is not attributed to the pause: %+v", res.Mutex.Overlaps[0])
	}
	landed(t, res, "")
}

// RedLock under the split partition (even clients see n0,n1,n2, odd ones
// n2,n3,n4): safe while n2 keeps its keys; a clock jump on n2 lets both sides
// reach a majority at once.
func TestRedlockSplitIsSafeUntilTheSharedNodeClockJumps(t *testing.T) {
	shimForTest(t)
	split := []string{"partition.shape=split", "partition.schedule=at=0s", "partition.duration=1h"}
	for _, tc := range []struct {
		nemeses []string
		want    checker.Verdict
	}{
		{[]string{"partition"}, checker.Safe},
		{[]string{"partition", "clock-jump"}, checker.Violation},
	} {
		t.Run(strings.Join(tc.nemeses, "+"), func(t *testing.T) {
			opts := split
			duration := 6 * time.Second
			if len(tc.nemeses) > 1 {
				// Under the split every hold is a bare majority that n2
				// shares: its jump takes the lease away, and the holder
				// stays inside until the other side takes the lock.
				opts = append(opts, "clock-jump.node=2", "clock-jump.duration=1ttl")
			}
			c := faultCfg(t, "redlock", tc.nemeses, append(opts, "partition.mode=refuse")...)
			// The jump's holder stays inside until the client of the other
			// side takes the lock, within its lease. One client a side:
			// with two, the clients of one side (and the other side's
			// second client, which wants n2 too) took n2 from each other in
			// rounds paced alike by the partitioned nodes' timeouts, and on
			// a loaded machine the lease could pass before anyone won.
			c.TTL, c.Hold, c.Duration, c.Clients = time.Second, 150*ms, duration, 2
			res, _ := runFaults(t, &c)
			verdict(t, res, tc.want)
			if len(tc.nemeses) > 1 {
				landed(t, res, history.LeaseLost)
			}
			if res.Mutex.Holds < 5 {
				t.Errorf("only %d holds: the split should leave each side able to acquire", res.Mutex.Holds)
			}
		})
	}
}

// WAIT 1 after the acquire: with the only replica cut, no acquire succeeds
// (WAIT times out, the key is deleted again), so the failover loses no held
// lock. With two replicas and only the promoted one cut, WAIT 1 is
// satisfied by the other one, and the promoted replica still lacks the key.
// That second case needs a long lease: after the promotion, the other
// replica must first resynchronise with the new primary (up to a second,
// see Group.WaitSynced) before any WAIT 1 there succeeds, and only then can
// a second client take the lock while the first, kept inside by the
// nemesis, still holds it.
func TestWaitProtectsOnlyIfThePromotedReplicaAcknowledged(t *testing.T) {
	t.Run("one replica, cut", func(t *testing.T) {
		c := faultCfg(t, "token-lua-wait", []string{"failover"}, "token-lua-wait.numreplicas=1", "failover.cut=all")
		c.Hold, c.Replicas = 100*ms, 1
		res, _ := runFaults(t, &c)
		verdict(t, res, checker.Safe)
		// Nobody could take the lock while the replica was cut: the
		// failover found no hold to fail over, and the cut did not land.
		if f := res.Faults[0]; f.Landed || f.Params["killed"] != "" {
			t.Errorf("an acquire succeeded although WAIT 1 could not: %+v", f)
		}
	})
	t.Run("two replicas, promoted one cut", func(t *testing.T) {
		c := faultCfg(t, "token-lua-wait", []string{"failover"}, "token-lua-wait.numreplicas=1", "failover.cut=promoted")
		c.TTL, c.Hold, c.Think, c.FaultInterval, c.Duration = 3*time.Second, 200*ms, 100*ms, 300*ms, 6*time.Second
		c.Replicas = 2
		res, _ := runFaults(t, &c)
		verdict(t, res, checker.Violation)
		landed(t, res, history.LeaseLost)
	})
}

// Fencing tokens protect the resource from a paused client and from a
// clock jump: the holds overlap, the stale writes are rejected. After a
// failover that lost writes, the promoted replica hands out a fencing token
// again that the old primary had already given: two holders present the
// same token, the resource accepts both, and an update is lost.
func TestFencedResourceSurvivesPausesAndClockJumpsButNotLostCounters(t *testing.T) {
	shimForTest(t)
	for _, nemesis := range []string{"pause-client", "clock-jump"} {
		t.Run(nemesis, func(t *testing.T) {
			res, _ := runFaultsCfg(t, faultCfg(t, "fenced", []string{nemesis}))
			if res.Mutex.OverlapCount == 0 {
				t.Fatalf("no overlap: the fault did not hit a held lock: %s", res.Summary)
			}
			if r := res.Resource; r.LostUpdates != 0 || r.StaleAccepted != 0 || r.StaleRejected == 0 {
				t.Errorf("want stale writes rejected and nothing lost: %+v", r)
			}
		})
	}
	t.Run("failover", func(t *testing.T) {
		c := faultCfg(t, "fenced", []string{"failover"})
		c.Hold, c.Replicas = 100*ms, 1
		res, events := runFaults(t, &c)
		holders := map[int64]map[int]bool{} // fence → clients that acquired with it
		for _, e := range events {
			if e.F == history.Acquire && e.Kind == history.OK {
				if holders[e.Fence] == nil {
					holders[e.Fence] = map[int]bool{}
				}
				holders[e.Fence][e.Client] = true
			}
		}
		var repeated []int64
		for f, cs := range holders {
			if len(cs) > 1 {
				repeated = append(repeated, f)
			}
		}
		if len(repeated) == 0 {
			t.Errorf("no fencing token was handed to two clients")
		}
		t.Logf("tokens handed to two clients: %v; resource %+v", repeated, res.Resource)
		if res.Resource.LostUpdates == 0 || res.Resource.FenceReused == 0 || res.Resource.Safe {
			t.Errorf("want lost updates and reused tokens reported: %+v", res.Resource)
		}
	})
}

// Real redis-sentinel processes decide the promotion; the coordinator points
// the clients' links at the primary they name.
func TestFailoverDecidedBySentinelsLosesTheLock(t *testing.T) {
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Fatal("redis-sentinel is not installed: run make setup as root, or apt-get install -y redis-sentinel")
	}
	c := faultCfg(t, "token-lua", []string{"failover-sentinel"})
	// Sentinel needs two to seven seconds to agree on a busy machine; the
	// lease must outlast that (the nemesis keeps the holder inside until
	// the promotion, within its lease). Thinking 100 ms between attempts leaves the lock free now and
	// then, which is when the nemesis cuts replication.
	c.TTL, c.Hold, c.Think, c.FaultInterval, c.Duration = 10*time.Second, 200*ms, 100*ms, 300*ms, 14*time.Second
	c.Replicas, c.Sentinels = 1, 3
	res, _ := runFaults(t, &c)
	verdict(t, res, checker.Violation)
	landed(t, res, history.LeaseLost)
	p := res.Faults[0].Params
	if p["promoted-by"] != "3 sentinels" || p["sentinel-decision"] == "" {
		t.Errorf("the fault does not show a sentinel promotion: %v", p)
	}
	sentinelsSawTheFailover(t, c)
}

// sentinelsSawTheFailover checks the sentinels' logs kept in the run's
// directory: each one saw the primary switch.
func sentinelsSawTheFailover(t *testing.T, c Config) {
	t.Helper()
	for k := 0; k < c.Sentinels; k++ {
		path := filepath.Join(c.Out, "sentinels", fmt.Sprintf("sentinel%d.log", k))
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), "+switch-master") {
			t.Errorf("%s does not show the failover (+switch-master): %v\n%s", path, err, b)
		}
	}
}

// A nemesis that cannot apply to the run's shape is a usage error from
// Validate, which says what to change; a matrix skips such cells.
// foreignBackend is a backend that is neither local nor docker: it is
// registered (so the run's configuration names a known one) but never opened.
const foreignBackend = "elsewhere"

func init() {
	cluster.RegisterBackend(foreignBackend, func(cluster.BackendOptions) (cluster.Backend, error) {
		return nil, errors.New("the test backend elsewhere is never opened")
	})
}

func TestInapplicableNemesisIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"failover without replicas", func(c *Config) { c.Nemeses = []string{"failover"} }, "--replicas"},
		{"sentinel failover without sentinels", func(c *Config) { c.Nemeses, c.Replicas = []string{"failover-sentinel"}, 1 }, "--sentinels"},
		{"manual failover beside sentinels", func(c *Config) { c.Nemeses, c.Replicas, c.Sentinels = []string{"failover"}, 1, 3 }, "failover-sentinel"},
		{"split on one node", func(c *Config) {
			c.Nemeses, c.NemesisOptions = []string{"partition"}, map[string]map[string]string{"partition": {"shape": "split"}}
		}, "--nodes 5"},
		{"node out of range", func(c *Config) {
			c.Nemeses, c.NemesisOptions = []string{"pause-node"}, map[string]map[string]string{"pause-node": {"node": "3"}}
		}, "lock nodes 0 to 0"},
		{"clock shim on a foreign backend", func(c *Config) { c.Nemeses, c.Backend = []string{"clock-jump"}, foreignBackend }, "clock-jump-ttl"},
		{"unknown backend", func(c *Config) { c.Backend = "nope" }, "known backends: "},
		{"bad schedule", func(c *Config) {
			c.Nemeses, c.NemesisOptions = []string{"jitter"}, map[string]map[string]string{"jitter": {"schedule": "sometimes"}}
		}, "jitter.schedule"},
		{"sentinels without replicas", func(c *Config) { c.Sentinels = 3 }, "--replicas"},
		{"unknown persistence", func(c *Config) { c.Persistence = "fsync" }, "--persistence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg(t, "token-lua")
			tc.edit(&c)
			err := Validate(c)
			var ue UsageError
			if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
	// And a shape that fits is accepted.
	c := cfg(t, "redlock", "partition", "clock-jump")
	c.NemesisOptions = map[string]map[string]string{"partition": {"shape": "split"}, "clock-jump": {"node": "2"}}
	if err := Validate(c); err != nil {
		t.Errorf("redlock with a split and a clock jump on n2: %v", err)
	}
}

// shimForTest makes sure the clock shim is built (make shim) before a run
// that needs it; without make or gcc it fails with the lookup's message.
func shimForTest(t *testing.T) {
	t.Helper()
	if _, err := cluster.ClockShim(); err == nil {
		return
	}
	root, _ := filepath.Abs("..")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "make", "-C", root, "shim").CombinedOutput(); err != nil {
		t.Logf("make shim: %v\n%s", err, out)
	}
	if _, err := cluster.ClockShim(); err != nil {
		t.Fatal(err)
	}
}

// The same seed gives the same fault decisions — which client, which key,
// which node, after which quiet time — whatever the machine's speed, and
// --replay takes the steps a run executed again. (How many steps fit in
// the run does depend on the machine: the decisions of the steps both runs
// took are compared.)
func TestSameSeedSameFaultDecisionsAndReplay(t *testing.T) {
	steps := func(dir string) []nemesis.Executed {
		b, err := os.ReadFile(filepath.Join(dir, ScheduleFile))
		if err != nil {
			t.Fatal(err)
		}
		var s Schedule
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Nemeses) != 1 || s.Nemeses[0].Name != "pause-client" {
			t.Fatalf("schedule %+v", s)
		}
		return s.Nemeses[0].Steps
	}
	decisions := func(es []nemesis.Executed) []nemesis.Step {
		var out []nemesis.Step
		for _, e := range es {
			out = append(out, e.Step)
		}
		return out
	}
	var runs [][]nemesis.Executed
	for range 2 {
		c := faultCfg(t, "token-lua", []string{"pause-client"}, "pause-client.duration=2ttl")
		c.Seed = 42
		runFaults(t, &c)
		runs = append(runs, steps(c.Out))
	}
	n := min(len(runs[0]), len(runs[1]))
	if n < 2 {
		t.Fatalf("only %d steps in common: %+v", n, runs)
	}
	if a, b := decisions(runs[0][:n]), decisions(runs[1][:n]); !reflect.DeepEqual(a, b) {
		t.Errorf("the same seed gave other decisions:\n%+v\n%+v", a, b)
	}
	clients := map[int]bool{}
	for _, s := range runs[0] {
		clients[s.Client] = true
	}
	if len(clients) < 2 && len(runs[0]) > 3 {
		t.Errorf("every step aimed at one client: %+v", runs[0])
	}

	// A replay takes those steps, and no more.
	c := faultCfg(t, "token-lua", []string{"pause-client"}, "pause-client.duration=2ttl")
	c.Seed = 42
	runFaults(t, &c)
	replay, err := LoadReplay(c.Out)
	if err != nil {
		t.Fatal(err)
	}
	replay.Out = t.TempDir()
	replay.Seed = 43 // the recorded steps win over the seed's
	res, _ := runFaults(t, &replay)
	again := steps(replay.Out)
	want := decisions(steps(c.Out))
	if got := decisions(again); len(got) == 0 || !reflect.DeepEqual(got, want[:len(got)]) {
		t.Errorf("the replay took steps %+v, want a prefix of %+v", got, want)
	}
	landed(t, res, history.LeaseLost)
}

// runFaultsCfg is runFaults of a configuration the caller keeps no hold of.
func runFaultsCfg(t *testing.T, c Config) (checker.Result, []history.Event) {
	t.Helper()
	return runFaults(t, &c)
}
