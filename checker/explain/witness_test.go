package explain

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// TestWitnessTellsThePauseStory: a pause past the lease, told from the
// result's first overlap, its fault and its lease end.
func TestWitnessTellsThePauseStory(t *testing.T) {
	end := 1530.0
	res := checker.Result{
		Verdict:  checker.Violation,
		Settings: &history.RunInfo{TTLms: 300},
		Faults: []checker.FaultWindow{
			{ID: 1, Name: "pause-client", Action: history.ActionPause, Clients: []int{0}, Stopped: []int{0}, StartMs: 620, EndMs: &end,
				Effect: "client 0 was stopped for 910ms while client 0 held lock:0, past its 300ms lease"},
			{ID: 2, Name: "latency", StartMs: 3000},
		},
		Mutex: checker.MutexResult{OverlapCount: 2, Overlaps: []checker.Overlap{{
			Key: "lock:0", Clients: [2]int{0, 1}, StartMs: 930, EndMs: 1535, Faults: []int{1},
			Holds: [2]checker.HoldSpan{
				{Client: 0, StartMs: 610, EndMs: 1535, End: checker.EndReleaseNotHeld, LeaseFromMs: 905, LeaseEndMs: 910},
				{Client: 1, StartMs: 930, EndMs: 1000, End: checker.EndRelease},
			},
		}}},
		Resource: checker.ResourceResult{LostUpdates: 1},
	}
	got := strings.Join(Witness(res), "\n")
	for _, want := range []string{
		"Client 0 acquired lock:0 at t=0.61 s; its 300 ms lease ran out on the lock's nodes by t=0.91 s at the latest.",
		"Fault 1, pause-client (client 0): client 0 was paused for 910 ms from t=0.62 s, past its 300 ms TTL — client 0 was stopped",
		"Client 1 acquired lock:0 at t=0.93 s, 20 ms after client 0's lease had run out, while client 0 still held it.",
		"Client 0 went on in its critical section until t=1.53 s, 625 ms after its lease had run out; its release found the lease already gone.",
		"Both held lock:0 for 605 ms from t=0.93 s; 1 update of the protected counter was lost (2 overlapping pairs of holds in the run).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the witness lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "latency") {
		t.Errorf("the witness names a fault that does not explain the overlap:\n%s", got)
	}
}

// TestWitnessForgottenLeaseAndNoFault: a node that forgot the lease gives
// it away while it should still live; an overlap without a fault says so.
func TestWitnessForgottenLeaseAndNoFault(t *testing.T) {
	res := checker.Result{Verdict: checker.Violation, Settings: &history.RunInfo{TTLms: 1000},
		Faults: []checker.FaultWindow{{ID: 1, Name: "crash-restart", Target: "lock node 0 restarted", StartMs: 400}},
		Mutex: checker.MutexResult{OverlapCount: 1, Overlaps: []checker.Overlap{{Key: "lock:0", Clients: [2]int{2, 3}, StartMs: 500, EndMs: 600, Faults: []int{1},
			Holds: [2]checker.HoldSpan{{Client: 2, StartMs: 390, EndMs: 600, End: checker.EndRelease, LeaseFromMs: 1385, LeaseEndMs: 1390}, {Client: 3, StartMs: 500, EndMs: 700}}}}}}
	got := strings.Join(Witness(res), "\n")
	if !strings.Contains(got, "while client 2's lease should have lived 885 ms more: the lock had forgotten it") || !strings.Contains(got, "Fault 1, crash-restart (lock node 0 restarted), was active from t=0.40 s") {
		t.Errorf("witness:\n%s", got)
	}
	res.Faults, res.Mutex.Overlaps[0].Faults = nil, nil
	res.Mutex.Overlaps[0].Holds[0].EndMs = 1600
	if got := strings.Join(Witness(res), "\n"); !strings.Contains(got, "No fault was active: client 2's critical section lasted 1.21 s, longer than the 1 s lease.") {
		t.Errorf("witness:\n%s", got)
	}
	res.Mutex.Overlaps[0].Holds[0].EndMs = 600
	res.Mutex.Overlaps[0].Stall = &checker.StallNote{Client: 2, Ms: 150, Text: "client 2 could not run for 150 ms", LeaseLived: true}
	if got := strings.Join(Witness(res), "\n"); !strings.Contains(got, "No fault was active: client 2 could not run for 150 ms (a stall of the harness, which does not explain it: client 2's lease still lived when client 3's acquire returned).") {
		t.Errorf("witness:\n%s", got)
	}
	if Witness(checker.Result{Verdict: checker.Safe}) != nil {
		t.Error("a safe run has a witness")
	}
}
