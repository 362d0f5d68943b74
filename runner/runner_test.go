package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/runner/runtest"
	"github.com/lockchaos/lockchaos/settings"
)

// The runner starts workers by re-executing this test binary.
func TestMain(m *testing.M) { runtest.Main(m) }

const ms = time.Millisecond

func TestSetNxPxPausedClientViolatesAndLosesUpdates(t *testing.T) {
	t.Parallel()
	res := runtest.RunChecked(t, runtest.Config(t, "set-nx-px", "pause-client"))
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
	t.Parallel()
	res := runtest.RunChecked(t, runtest.Config(t, "token-lua", "pause-client"))
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
	t.Parallel()
	c := runtest.Config(t, "token-lua")
	c.Keys, c.Hold, c.Think, c.Duration = 4, 3*ms, 1*ms, 5*time.Second
	// The claim needs a thousand holds; how many 5 s give is the machine's
	// speed (a busy one gave 578), so a short run is run again, longer.
	var res checker.Result
	for attempt := 1; ; attempt++ {
		res = runtest.RunChecked(t, c)
		if res.Verdict != checker.Safe {
			t.Fatalf("verdict %s, want safe: %s %v", res.Verdict, res.Summary, res.Reasons)
		}
		if res.Mutex.Holds >= 1000 {
			break
		}
		if attempt == 3 {
			t.Skipf("only %d holds in a %v run, the third: the claim needs at least 1000 (no evidence on a machine this busy)", res.Mutex.Holds, c.Duration)
		}
		t.Logf("only %d holds in %v; running it again, twice as long", res.Mutex.Holds, c.Duration)
		c.Duration *= 2
		c.Out = runtest.RunDir(t)
	}
	if res.Resource.Holds != res.Mutex.Holds || res.Resource.LostUpdates != 0 {
		t.Errorf("every hold should write once and nothing be lost: %+v vs %d holds", res.Resource, res.Mutex.Holds)
	}
}

func TestBlockingAcquireWaitsInsteadOfFailing(t *testing.T) {
	t.Parallel()
	c := runtest.Config(t, "token-lua")
	c.Hold, c.Wait, c.Retry, c.Duration = 30*ms, time.Second, 10*ms, 2*time.Second
	res := runtest.RunChecked(t, c)
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
	t.Parallel()
	for _, lock := range []string{"set-nx-px", "token-lua", "setnx-expire"} {
		t.Run(lock, func(t *testing.T) {
			c := runtest.Config(t, lock)
			c.TTL, c.Hold, c.Duration = 200*ms, 400*ms, 2*time.Second
			res := runtest.RunChecked(t, c)
			if res.Verdict != checker.Violation || len(res.Faults) != 0 {
				t.Fatalf("verdict %s with %d faults, want a violation with none: %s", res.Verdict, len(res.Faults), res.Summary)
			}
		})
	}
}

func TestInterruptedRunIsNeverSafe(t *testing.T) {
	t.Parallel()
	c := runtest.Config(t, "token-lua")
	c.Hold, c.Duration = 10*ms, time.Minute
	// Interrupted once its workload runs: starting a node took up to 1.15 s
	// beside the CPU hogs, and an interrupt during the start is an error
	// (nothing ran to judge), not the interrupted run this test is about.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	res, err := runner.Run(ctx, c)
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
	t.Parallel()
	c := runtest.Config(t, "token-lua")
	c.Hold, c.Duration = 10*ms, time.Second
	res := runtest.RunChecked(t, c)
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
	cut, err := checker.CheckDir(c.Out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cut.Verdict != checker.Inconclusive || cut.Complete {
		t.Errorf("a cut history checked %s (complete=%v), want inconclusive", cut.Verdict, cut.Complete)
	}
}

func TestBadConfigurationNamesWhatToFix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*settings.Run)
		want string
	}{
		{"unknown lock", func(c *settings.Run) { c.Lock = "nope" }, "known locks: "},
		{"unknown nemesis", func(c *settings.Run) { c.Nemeses = []string{"nope"} }, "unknown nemesis"},
		{"unknown lock option", func(c *settings.Run) { c.LockOptions = map[string]string{"gapp": "1s"} }, "its options are: gap"},
		{"bad option value", func(c *settings.Run) { c.LockOptions = map[string]string{"gap": "soon"} }, "setnx-expire.gap"},
		{"no clients", func(c *settings.Run) { c.Clients = 0 }, "--clients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runtest.Config(t, "setnx-expire")
			tc.edit(&c)
			_, err := runner.Run(context.Background(), c)
			var ue settings.UsageError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
				t.Fatalf("error %v, want a usage error containing %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(c.Out, "history.jsonl")); err == nil {
				t.Error("a rejected configuration still started a run")
			}
		})
	}
}

// A full disk ends the run at once, with the write error, rather than after
// its whole duration; and leaves no half-written result.json behind.
func TestFullDiskEndsTheRunAtOnce(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	c := runtest.Config(t, "token-lua")
	c.Out, c.Hold, c.Think, c.Duration = filepath.Join(dir, "run"), time.Millisecond, 0, 10*time.Minute
	type outcome struct {
		res checker.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() { res, err := runner.Run(context.Background(), c); done <- outcome{res, err} }()
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
