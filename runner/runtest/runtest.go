// Package runtest helps tests drive real lockchaos runs. Workers re-execute
// the test binary, so a test package that starts runs uses Main as its
// TestMain; Run performs a run and checks what every run must satisfy.
//
// The runner's tests and the nemeses' (package nemesis_test) share the rest:
// Config and FaultConfig make their runs, RunChecked and RunFaults perform
// them, and Landed, Verdict and AnsweredAfterFirstFault read the outcome.
package runtest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/procs"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// Main is a test package's TestMain: in a process started as a worker it runs
// the worker (which sees every lock the test binary registered), otherwise
// the tests, and then fails the package if a server any of them started
// is still running (the tests' runs go on side by side, t.Parallel: a
// check after each run would count the servers of the others).
func Main(m *testing.M) {
	if os.Getenv(workload.RoleEnv) == "worker" {
		os.Exit(workload.Main())
	}
	code := m.Run()
	if left := Servers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: server processes the tests started are still running: %v\n", left)
		code = 1
	}
	os.Exit(code)
}

// serverNames are the command names of the servers runs start (a
// ZooKeeper server is a JVM).
var serverNames = []string{"redis-", "etcd", "java", "postgres", "mariadbd", "nats-server"}

// Servers names the servers (Servers: "comm pid") that are children of this
// process: what a run left behind, once no run goes on.
func Servers() []string {
	var out []string
	for _, p := range serverNames {
		out = append(out, procs.Children(p)...)
	}
	return out
}

const ms = time.Millisecond

// Config is a short run of lock under nemeses: four clients on one key,
// 300 ms leases, 60 ms holds, 10 ms think time, 3 s, seed 7, written to a
// folder of the test's own.
func Config(t testing.TB, lock string, nemeses ...string) settings.Run {
	return settings.Run{
		Lock:     lock,
		Nemeses:  nemeses,
		Duration: 3 * time.Second,
		Seed:     7,
		Out:      RunDir(t),
		Workload: workload.Workload{Clients: 4, Keys: 1, TTL: 300 * ms, Hold: 60 * ms, Think: 10 * ms},
	}
}

// RunDir is a folder for one run of the test t: removed when t passes, and
// kept, its path logged, when t fails, for the run is the evidence of why
// (a failure under load is rarely seen twice).
func RunDir(t testing.TB) string {
	t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	dir, err := os.MkdirTemp("", "lockchaos-test-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the run is kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// FaultConfig is Config with options given as "name.key=value": name is the
// lock (a lock option) or a nemesis (one of its options).
func FaultConfig(t testing.TB, lock string, nemeses []string, opts ...string) settings.Run {
	t.Helper()
	c := Config(t, lock, nemeses...)
	c.Duration = 3 * time.Second
	c.LockOptions = map[string]string{}
	byName, err := option.Split(opts)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := byName[lock]; ok {
		c.LockOptions = o
		delete(byName, lock)
	}
	c.NemesisOptions = byName
	return c
}

// RunEvidence runs c, and again (in a new folder, up to three times in all)
// while the run is no evidence either way (checker.Result.NoEvidence), as
// the matrix does: a stall of the machine made its only overlaps, none of
// its faults landed, or a fault took a lease away and no race was run; or
// while no client held a lock at all (beside 8 CPU hogs every one of
// redsync's 212 acquires over five nodes timed out, and the run tested
// nothing). Three runs that are all no evidence skip the test: it proved
// nothing, and a pass would claim it did. c.Out ends as the last run's
// folder.
func RunEvidence(t testing.TB, c *settings.Run) (checker.Result, error) {
	t.Helper()
	why := func(res checker.Result) string {
		if res.Mutex.Holds == 0 {
			return "no client held a lock"
		}
		return res.NoEvidence()
	}
	res, err := runner.Run(context.Background(), *c)
	for attempt := 2; err == nil && why(res) != "" && attempt <= 3; attempt++ {
		t.Logf("no evidence (%s): %s; running it again", why(res), res.Summary)
		c.Out = RunDir(t)
		res, err = runner.Run(context.Background(), *c)
	}
	if err == nil && why(res) != "" {
		t.Skipf("no evidence in three runs (%s): %s", why(res), res.Summary)
	}
	return res, err
}

// RunChecked performs c (RunEvidence) and checks what every run must
// satisfy: it completes without error, its stored history re-checks to the
// same result. (That nothing it started is left running, Main checks once
// every test of the package ended.)
func RunChecked(t testing.TB, c settings.Run) checker.Result {
	t.Helper()
	return runChecked(t, &c)
}

// runChecked is RunChecked; c.Out ends as the last run's folder.
func runChecked(t testing.TB, c *settings.Run) checker.Result {
	t.Helper()
	res, err := RunEvidence(t, c)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	again, err := checker.CheckDir(c.Out, 0)
	if err != nil {
		t.Fatalf("re-check: %v", err)
	}
	again.Mutex.CheckMs, res.Mutex.CheckMs = 0, 0
	if !reflect.DeepEqual(res, again) {
		t.Errorf("re-checking the stored history gave a different result:\n%+v\nvs\n%+v", res, again)
	}
	t.Logf("%s: %s", res.Verdict, res.Summary)
	return res
}

// Run performs c on real Redis and checks what every run must show
// (RunChecked: a run that is no evidence either way is run again, up to
// three times; it completes; its stored history re-checks to the same
// result), and besides that
// the history is whole and no client touched the resource after it
// recorded losing its lock.
func Run(t testing.TB, c settings.Run) (checker.Result, []history.Event) {
	t.Helper()
	res := runChecked(t, &c)
	events := events(t, c.Out)
	if !res.Complete {
		t.Errorf("incomplete history: %v", res.Reasons)
	}
	NoResourceOpAfterLost(t, events)
	t.Logf("resource: %s", res.Resource.Summary)
	return res, events
}

// RunFaults performs c (RunEvidence) and checks what every fault run must
// show: the stored history re-checks to the same verdict, at least one
// fault window, every window closed and no heal that failed (that no
// server is left running, Main checks). c.Out ends as the last run's
// folder.
func RunFaults(t testing.TB, c *settings.Run) (checker.Result, []history.Event) {
	t.Helper()
	res, err := RunEvidence(t, c)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("%s: %s", res.Verdict, res.Summary)
	for _, f := range res.Faults {
		t.Logf("fault %d %s: landed %v, lease %q: %s", f.ID, f.Name, f.Landed, f.Lease, f.Effect)
	}
	if again, err := checker.CheckDir(c.Out, 0); err != nil || again.Verdict != res.Verdict {
		t.Errorf("re-checking the stored history: %v, verdict %s vs %s", err, again.Verdict, res.Verdict)
	}
	events := events(t, c.Out)
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

// events reads the history the run in dir stored.
func events(t testing.TB, dir string) []history.Event {
	t.Helper()
	events, _, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// RunHealed is RunFaults for a test that reads what happened after its
// first fault healed (AnsweredAfterFirstFault): a run whose first fault
// healed only after the workers stopped is not the run the test means, and
// it runs again, in a new folder, up to three times in all. A fault aimed at
// a hold waits for its step's client to take the key, and with four
// clients contending one of them can lose every race for seconds (CI,
// 2026-11-27: the aimed client of a 6 s crash-restart run held the key
// first at 5.9 s, after 27 holds by the other three).
func RunHealed(t testing.TB, c *settings.Run) (checker.Result, []history.Event) {
	t.Helper()
	res, events := RunFaults(t, c)
	for attempt := 2; attempt <= 3; attempt++ {
		start, end, stopped := firstFault(events)
		if end <= stopped {
			break
		}
		t.Logf("the first fault began at %s and healed only after the workers stopped at %s: running it again",
			since(events, start), since(events, stopped))
		c.Out = RunDir(t)
		res, events = RunFaults(t, c)
	}
	return res, events
}

// firstFault is when the first fault began and healed, and when the first
// worker stopped.
func firstFault(events []history.Event) (start, end, stopped int64) {
	for _, e := range events {
		switch {
		case e.Kind == history.FaultStart && e.Fault.ID == 1:
			start = e.Time
		case e.Kind == history.FaultEnd && e.Fault.ID == 1:
			end = e.Time
		case e.Kind == history.WorkerExit && (stopped == 0 || e.Time < stopped):
			stopped = e.Time
		}
	}
	return start, end, stopped
}

// since is t as the time since the run began, for a log line.
func since(events []history.Event, t int64) string {
	if len(events) == 0 {
		return "?"
	}
	return "t=" + checker.Seconds(float64(t-events[0].Time)/1e6)
}

// AnsweredAfterFirstFault checks that every client got a definite answer
// from the lock (ok, or not acquired) after the first fault healed: its
// links, and the node behind them, work again. The run must last long
// enough for the fault to heal before the workers stop (RunHealed).
func AnsweredAfterFirstFault(t testing.TB, c settings.Run, events []history.Event) {
	t.Helper()
	start, end, stopped := firstFault(events)
	if end > stopped {
		t.Fatalf("the first fault (begun at %s) healed only after the workers stopped at %s in three runs: give the test a longer run",
			since(events, start), since(events, stopped))
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

// Landed checks that some fault landed, and, when lease is set, that one
// of them left its lease in that state: a run's verdict is evidence about
// a fault only when the fault hit a live lease.
func Landed(t testing.TB, res checker.Result, lease string) {
	t.Helper()
	for _, f := range res.Faults {
		if f.Landed && (lease == "" || f.Lease == lease) {
			return
		}
	}
	t.Errorf("no fault landed with lease %q: %+v", lease, res.Faults)
}

// FirstLanded is the first fault of res that landed (a failover whose
// hold ended before its kill did nothing, said so, and the next one
// landed), or fails the test when none did.
func FirstLanded(t testing.TB, res checker.Result) checker.FaultWindow {
	t.Helper()
	i := slices.IndexFunc(res.Faults, func(f checker.FaultWindow) bool { return f.Landed })
	if i < 0 {
		t.Fatalf("no fault landed: %+v", res.Faults)
	}
	return res.Faults[i]
}

// Verdict fails the test unless res has the wanted verdict.
func Verdict(t testing.TB, res checker.Result, want checker.Verdict) {
	t.Helper()
	if res.Verdict != want {
		t.Fatalf("verdict %s, want %s: %s %v", res.Verdict, want, res.Summary, res.Reasons)
	}
}

// NeedClockShim makes sure the clock shim is there before a run that needs
// it: cluster.ClockShim finds the one make shim built, or compiles it on
// first use; without a C compiler it fails with the lookup's message.
func NeedClockShim(t testing.TB) {
	t.Helper()
	if _, err := cluster.ClockShim(); err != nil {
		t.Fatal(err)
	}
}

// SentinelsSawTheFailover checks the sentinels' logs kept in the run's
// directory: every sentinel's log was kept, and a sentinel chose the
// replica to promote (+selected-slave: the decision, made by the leader the
// sentinels elected). That every sentinel logs +switch-master is not
// asked: the others learn the new primary from the leader's hello
// messages, which on a busy machine can come after the run has ended
// (2026-11-30: the leader's log reached +failover-state-wait-promotion,
// the nemesis had the new primary from it, and the run was over).
func SentinelsSawTheFailover(t testing.TB, c settings.Run) {
	t.Helper()
	var logs []string
	decided := false
	for k := 0; k < c.Sentinels; k++ {
		path := filepath.Join(c.Out, "sentinels", fmt.Sprintf("sentinel%d.log", k))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("the run kept no log of sentinel %d: %v", k, err)
			continue
		}
		logs = append(logs, path+":\n"+string(b))
		decided = decided || strings.Contains(string(b), "+selected-slave") || strings.Contains(string(b), "+switch-master")
	}
	if !decided {
		t.Errorf("no sentinel's log shows a replica chosen for promotion (+selected-slave):\n%s", strings.Join(logs, "\n"))
	}
}

// NoResourceOpAfterLost: once a client recorded that it lost a key, it
// invokes no read or write of that key until it acquires it again.
func NoResourceOpAfterLost(t testing.TB, events []history.Event) {
	t.Helper()
	lost := map[int]map[string]bool{}
	for _, e := range SortedByTime(events) {
		if lost[e.Client] == nil {
			lost[e.Client] = map[string]bool{}
		}
		switch {
		case e.Kind == history.Lost:
			lost[e.Client][e.Key] = true
		case e.Kind == history.OK && e.F == history.Acquire:
			lost[e.Client][e.Key] = false
		case e.Kind == history.Invoke && (e.F == history.Read || e.F == history.Write) && lost[e.Client][e.Key]:
			t.Errorf("client %d invoked a %s of %s after it recorded losing the lock", e.Client, e.F, e.Key)
		}
	}
}

// SortedByTime returns events in time order; each worker's events arrive in
// order, and a stable sort keeps them so.
func SortedByTime(events []history.Event) []history.Event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	return out
}
