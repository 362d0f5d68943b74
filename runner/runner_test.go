package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/internal/procs"
	"github.com/lockchaos/lockchaos/workload"
)

// The runner starts workers by re-executing this test binary.
func TestMain(m *testing.M) {
	if os.Getenv(workload.RoleEnv) == "worker" {
		os.Exit(workload.Main())
	}
	os.Exit(m.Run())
}

const ms = time.Millisecond

func cfg(t *testing.T, lock string, nemeses ...string) Config {
	return Config{
		Lock: lock, Nemeses: nemeses, Clients: 4, Keys: 1,
		TTL: 300 * ms, Hold: 60 * ms, Duration: 3 * time.Second, Think: 10 * ms, Seed: 7,
		Out: t.TempDir(),
	}
}

// runChecked performs c and checks what every run must satisfy: the stored history
// re-checks to the same result, and nothing it started is left running.
func runChecked(t *testing.T, c Config) checker.Result {
	t.Helper()
	before := len(procs.Children("redis-"))
	res, err := runEvidence(t, &c)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	again, err := CheckDir(c.Out, 0)
	if err != nil {
		t.Fatalf("re-check: %v", err)
	}
	again.Mutex.CheckMs, res.Mutex.CheckMs = 0, 0
	if !reflect.DeepEqual(res, again) {
		t.Errorf("re-checking the stored history gave a different result:\n%+v\nvs\n%+v", res, again)
	}
	if after := len(procs.Children("redis-")); after > before {
		t.Errorf("%d redis-server processes left running after the run", after-before)
	}
	t.Logf("%s: %s", res.Verdict, res.Summary)
	return res
}

func TestSetNxPxPausedClientViolatesAndLosesUpdates(t *testing.T) {
	res := runChecked(t, cfg(t, "set-nx-px", "pause-client"))
	if res.Verdict != checker.Violation {
		t.Fatalf("verdict %s, want violation: %s", res.Verdict, res.Summary)
	}
	if res.Mutex.OverlapCount == 0 || res.Mutex.Linearizable == nil || *res.Mutex.Linearizable {
		t.Errorf("want overlaps and porcupine Illegal, got %d overlaps, porcupine %s", res.Mutex.OverlapCount, res.Mutex.Porcupine)
	}
	if res.Resource.LostUpdates == 0 {
		t.Errorf("want lost updates on the resource, got none: %+v", res.Resource)
	}
	if len(res.Mutex.Overlaps[0].Faults) == 0 {
		t.Errorf("the first overlap names no fault: %+v", res.Mutex.Overlaps[0])
	}
}

func TestTokenLuaPausedClientViolatesAndItsReleaseFindsNothing(t *testing.T) {
	res := runChecked(t, cfg(t, "token-lua", "pause-client"))
	if res.Verdict != checker.Violation {
		t.Fatalf("verdict %s, want violation: %s", res.Verdict, res.Summary)
	}
	if res.Release.NotHeld == 0 {
		t.Errorf("the paused client's release should find its lease gone; release stats %+v", res.Release)
	}
	paused := map[int]bool{}
	for _, f := range res.Faults {
		for _, c := range f.Clients {
			paused[c] = true
		}
	}
	found := false
	for _, o := range res.Mutex.Overlaps {
		if h := o.Holds[0]; paused[h.Client] && h.End == "release-not-held" {
			found = true
		}
	}
	if !found {
		t.Errorf("no overlap whose earlier hold is a paused client ending in a not-held release: %+v", res.Mutex.Overlaps)
	}
	if res.FirstViolationMs == nil {
		t.Error("first_violation_ms is null for a violation")
	}
	// A lease cannot be stolen before it expires: the second client gets in
	// no sooner than a TTL after the first one's acquire was sent.
	o := res.Mutex.Overlaps[0]
	if gap := o.StartMs - o.Holds[0].StartMs; gap < 300-50 {
		t.Errorf("the first overlap began %.0f ms into the earlier hold, before its 300 ms lease could expire", gap)
	}
}

func TestTokenLuaWithoutFaultsIsSafeOverThousandHolds(t *testing.T) {
	c := cfg(t, "token-lua")
	c.Keys, c.Hold, c.Think, c.Duration = 4, 3*ms, 1*ms, 5*time.Second
	res := runChecked(t, c)
	if res.Verdict != checker.Safe {
		t.Fatalf("verdict %s, want safe: %s %v", res.Verdict, res.Summary, res.Reasons)
	}
	if res.Mutex.Holds < 1000 {
		t.Errorf("only %d holds; the claim needs at least 1000", res.Mutex.Holds)
	}
	if res.Resource.Holds != res.Mutex.Holds || res.Resource.LostUpdates != 0 {
		t.Errorf("every hold should write once and nothing be lost: %+v vs %d holds", res.Resource, res.Mutex.Holds)
	}
}

func TestBlockingAcquireWaitsInsteadOfFailing(t *testing.T) {
	c := cfg(t, "token-lua")
	c.Hold, c.Wait, c.Retry, c.Duration = 30*ms, time.Second, 10*ms, 2*time.Second
	res := runChecked(t, c)
	if res.Verdict != checker.Safe {
		t.Fatalf("verdict %s, want safe: %s %v", res.Verdict, res.Summary, res.Reasons)
	}
	// Four clients on one key, each holding 30 ms: a blocking acquire with a
	// 1 s wait almost always gets the lock; try-once mostly would not.
	if res.Acquire.OK == 0 || res.Acquire.Failed*10 > res.Acquire.OK {
		t.Errorf("blocking acquires: %+v, want nearly all ok", res.Acquire)
	}
	if res.Acquire.P99ms < float64(c.Hold/ms)/2 {
		t.Errorf("acquire p99 %.1f ms: blocking acquires should wait for the holder (%v holds)", res.Acquire.P99ms, c.Hold)
	}
}

func TestHoldLongerThanTTLViolatesWithoutFaults(t *testing.T) {
	for _, lock := range []string{"set-nx-px", "token-lua", "setnx-expire"} {
		t.Run(lock, func(t *testing.T) {
			c := cfg(t, lock)
			c.TTL, c.Hold, c.Duration = 200*ms, 400*ms, 2*time.Second
			res := runChecked(t, c)
			if res.Verdict != checker.Violation || len(res.Faults) != 0 {
				t.Fatalf("verdict %s with %d faults, want a violation with none: %s", res.Verdict, len(res.Faults), res.Summary)
			}
		})
	}
}

func TestSetnxExpireCrashBetweenStepsDeadlocksTheKey(t *testing.T) {
	c := cfg(t, "setnx-expire", "kill-client")
	// Two clients that think for up to a TTL leave the lock free often:
	// the killed client's SETNX must find it free to leave a key behind.
	c.Clients, c.Think = 2, c.TTL
	c.LockOptions = map[string]string{"gap": "200ms"}
	c.NemesisOptions = map[string]map[string]string{"kill-client": {"in-flight": "100ms"}}
	res := runChecked(t, c)
	if !reflect.DeepEqual(res.Liveness.DeadlockedKeys, []string{"lock:0"}) {
		t.Fatalf("deadlocked keys %v, want [lock:0]: %s", res.Liveness.DeadlockedKeys, res.Summary)
	}
	// The kill is a liveness failure, not a safety one: the killed client
	// never entered its critical section.
	if res.Verdict != checker.Safe {
		t.Errorf("verdict %s, want safe: %s %v", res.Verdict, res.Summary, res.Reasons)
	}
	if res.Acquire.Unknown == 0 || len(res.Faults) == 0 {
		t.Errorf("want the killed client's acquire unknown and the kill recorded: %+v, %d faults", res.Acquire, len(res.Faults))
	}
}

func TestLatencyIsRecordedAndShortHoldsStaySafe(t *testing.T) {
	c := cfg(t, "token-lua", "latency")
	c.Hold = 10 * ms
	c.NemesisOptions = map[string]map[string]string{"latency": {"delay": "40ms", "jitter": "10ms", "duration": "800ms"}}
	res := runChecked(t, c)
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

func TestInterruptedRunIsNeverSafe(t *testing.T) {
	c := cfg(t, "token-lua")
	c.Hold, c.Duration = 10*ms, time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 1500*ms)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("the run took %v to stop after its context ended", time.Since(start))
	}
	if res.Verdict != checker.Inconclusive {
		t.Errorf("verdict %s, want inconclusive for an interrupted run: %s", res.Verdict, res.Summary)
	}
}

func TestTruncatedHistoryIsNeverSafe(t *testing.T) {
	c := cfg(t, "token-lua")
	c.Hold, c.Duration = 10*ms, time.Second
	res := runChecked(t, c)
	if res.Verdict != checker.Safe {
		t.Fatalf("verdict %s, want safe: %s", res.Verdict, res.Summary)
	}
	// Cut the stored history in half, as a crash of the coordinator would.
	path := filepath.Join(c.Out, "history.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	cut, err := CheckDir(c.Out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cut.Verdict != checker.Inconclusive || cut.Complete {
		t.Errorf("a cut history checked %s (complete=%v), want inconclusive", cut.Verdict, cut.Complete)
	}
}

func TestBadConfigurationNamesWhatToFix(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown lock", func(c *Config) { c.Lock = "nope" }, "known locks: "},
		{"unknown nemesis", func(c *Config) { c.Nemeses = []string{"nope"} }, "unknown nemesis"},
		{"unknown lock option", func(c *Config) { c.LockOptions = map[string]string{"gapp": "1s"} }, "its options are: gap"},
		{"bad option value", func(c *Config) { c.LockOptions = map[string]string{"gap": "soon"} }, "setnx-expire.gap"},
		{"no clients", func(c *Config) { c.Clients = 0 }, "--clients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg(t, "setnx-expire")
			tc.edit(&c)
			_, err := Run(context.Background(), c)
			var ue UsageError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
				t.Fatalf("error %v, want a usage error containing %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(c.Out, "history.jsonl")); err == nil {
				t.Error("a rejected configuration still started a run")
			}
		})
	}
}

// runEvidence runs c, and again (in a new folder, up to three times in all)
// while the run is no evidence either way (checker.Result.NoEvidence), as
// the matrix does: a stall of the machine made its only overlaps, or none
// of its faults landed. c.Out ends as the last run's folder.
func runEvidence(t *testing.T, c *Config) (checker.Result, error) {
	t.Helper()
	res, err := Run(context.Background(), *c)
	for attempt := 2; err == nil && res.NoEvidence() != "" && attempt <= 3; attempt++ {
		t.Logf("no evidence (%s): %s; running it again", res.NoEvidence(), res.Summary)
		c.Out = t.TempDir()
		res, err = Run(context.Background(), *c)
	}
	return res, err
}

// A full disk ends the run at once, with the write error, rather than after
// its whole duration; and leaves no half-written result.json behind.
func TestFullDiskEndsTheRunAtOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	c := cfg(t, "token-lua")
	c.Out, c.Hold, c.Think, c.Duration = filepath.Join(dir, "run"), time.Millisecond, 0, 10*time.Minute
	type outcome struct {
		res checker.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() { res, err := Run(context.Background(), c); done <- outcome{res, err} }()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(2 * time.Minute): // the run is 10 minutes long
		t.Fatal("the run went on after its history could no longer be written")
	}
	t.Logf("error: %v; %s", o.err, o.res.Summary)
	if o.err == nil || !strings.Contains(o.err.Error(), "no space left on device") {
		t.Errorf("error %v, want the history's write error", o.err)
	}
	if o.res.Verdict == checker.Safe {
		t.Errorf("verdict safe on a history with a hole: %s", o.res.Summary)
	}
	if b, err := os.ReadFile(filepath.Join(c.Out, "result.json")); err == nil && !json.Valid(b) {
		t.Errorf("a half-written result.json was left: %q", b)
	}
}
