package runner_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

// syncBuffer is a progress writer the run's goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A paused holder's lease runs out and another client takes the key: the
// live check reports the overlap while the run goes on, and
// --stop-on-violation ends the run soon after instead of running out its
// 30 s — with the whole history kept and checked to the same violation.
func TestStopOnViolationEndsTheRunAtTheFirstOverlap(t *testing.T) {
	t.Parallel()
	c := runtest.Config(t, "set-nx-px", "pause-client")
	c.Duration = 30 * time.Second
	c.StopOnViolation = true
	progress := &syncBuffer{}
	c.Progress = progress
	res := runtest.RunChecked(t, c)
	if res.Verdict != checker.Violation {
		t.Fatalf("verdict %s, want violation: %s", res.Verdict, res.Summary)
	}
	out := progress.String()
	if !strings.Contains(out, "violation seen live") || !strings.Contains(out, "--stop-on-violation") {
		t.Errorf("the progress never reported the violation live and the stop:\n%s", out)
	}
	if res.WorkloadMs >= float64(c.Duration/time.Millisecond)/2 {
		t.Errorf("the workload ran %.0f ms of its %s: it did not stop at the violation", res.WorkloadMs, c.Duration)
	}
	if !res.Complete {
		t.Errorf("a run stopped at a violation keeps a whole history: %v", res.Reasons)
	}
	if res.Resource.LostUpdates == 0 {
		t.Errorf("the overlapping holds' writes were cut off: no lost update (%+v)", res.Resource)
	}
}

// Without the flag the live check only reports: the run goes on.
func TestLiveCheckReportsWithoutStopping(t *testing.T) {
	t.Parallel()
	c := runtest.Config(t, "set-nx-px", "pause-client")
	progress := &syncBuffer{}
	c.Progress = progress
	res := runtest.RunChecked(t, c)
	if res.Verdict != checker.Violation {
		t.Fatalf("verdict %s, want violation: %s", res.Verdict, res.Summary)
	}
	if out := progress.String(); !strings.Contains(out, "violation seen live") || strings.Contains(out, "stop-on-violation") {
		t.Errorf("want the live report and no stop:\n%s", out)
	}
	if res.WorkloadMs < float64(c.Duration/time.Millisecond) {
		t.Errorf("the workload ran %.0f ms, less than its %s", res.WorkloadMs, c.Duration)
	}
}
