package explain

import (
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// run is a history written by hand, in milliseconds since its start, that
// the checker checks: the witness is told from the checker's own result.
type run struct{ events []history.Event }

func (r *run) add(at float64, e history.Event) *run {
	e.Time = int64(at * 1e6)
	r.events = append(r.events, e)
	return r
}

func (r *run) op(c int, kind history.Kind, f string, at float64) *run {
	return r.add(at, history.Event{Kind: kind, Client: c, F: f, Key: "lock:0"})
}

// started begins the run of a lock with a ttlMs lease.
func started(ttlMs int64, keepsAlive, leaseless bool) *run {
	return new(run).add(0, history.Event{Kind: history.RunStart, Client: history.NoClient,
		Run: &history.RunInfo{Lock: "redlock", Seed: 7, Clients: 2, TTLms: ttlMs, KeepsAlive: keepsAlive, Leaseless: leaseless}})
}

// hold: an acquire invoked at inv and granted at ok, released at rel.
func (r *run) hold(c int, inv, ok, rel float64) *run {
	return r.op(c, history.Invoke, history.Acquire, inv).op(c, history.OK, history.Acquire, ok).
		op(c, history.Invoke, history.Release, rel).op(c, history.OK, history.Release, rel+1)
}

func (r *run) fault(id int, name string, client int, from, to float64) *run {
	f := &history.Fault{ID: id, Name: name, Target: "worker", Clients: []int{client}}
	return r.add(from, history.Event{Kind: history.FaultStart, Client: history.NoClient, Fault: f}).
		add(to, history.Event{Kind: history.FaultEnd, Client: history.NoClient, Fault: f})
}

func (r *run) check(t *testing.T) checker.Result {
	t.Helper()
	r.add(900, history.Event{Kind: history.WorkerExit, Client: 0, Expected: true}).
		add(900, history.Event{Kind: history.WorkerExit, Client: 1, Expected: true}).
		add(910, history.Event{Kind: history.RunEnd, Client: history.NoClient})
	res := checker.Check(r.events, checker.Options{})
	if res.Verdict != checker.Violation {
		t.Fatalf("verdict %s, want a violation: %s", res.Verdict, res.Summary)
	}
	return res
}

// The witness follows the lease: a grant that came after the later
// holder's own lease had run out (its acquire took longer than the lease)
// is said; for a lock that keeps a session alive, the faults on that
// client during its wait are named.
func TestWitnessSaysAGrantCameAfterItsLease(t *testing.T) {
	w := strings.Join(Witness(started(300, false, false).hold(0, 9, 10, 700).hold(1, 50, 500, 600).check(t)), "\n")
	if !strings.Contains(w, "Client 1's acquire took 450 ms (from t=0.05 s), longer than the 300 ms lease it asked for: the lock granted a lease that had already run out") {
		t.Errorf("witness:\n%s", w)
	}
	w = strings.Join(Witness(started(300, true, false).fault(1, "latency", 1, 60, 450).hold(0, 9, 10, 700).hold(1, 50, 500, 600).check(t)), "\n")
	if !strings.Contains(w, "Client 1's acquire waited 450 ms (from t=0.05 s), longer than its session's 300 ms lease: the grant was good only if its keep-alives reached the store meanwhile, and latency (client 1) acted on client 1 during the wait") {
		t.Errorf("witness:\n%s", w)
	}
}

// A lock without a lease is told in its own terms: no lease ran out, no
// critical section outlived one.
func TestWitnessOfALeaselessLockSpeaksNoLease(t *testing.T) {
	res := started(100, false, true).hold(0, 9, 10, 600).hold(1, 309, 310, 620).check(t)
	if w := strings.Join(Witness(res), "\n"); strings.Contains(w, "lease") || strings.Contains(res.Summary, "lease") {
		t.Errorf("%s\nwitness:\n%s", res.Summary, w)
	}
}
