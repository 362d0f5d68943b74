package checker

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// simulateLeaseLock runs clients against a simulated lease lock: an acquire
// blocks until the lease is free or expired, a hold usually fits in the
// lease but a paused client (when there are pauses) overstays it, and the next client then gets the
// lock while the paused one still works. It returns the events in arrival
// order and the ground-truth holds.
func simulateLeaseLock(seed uint64, clients, rounds int, pauses bool) ([]history.Event, []truthHold) {
	rng := rand.New(rand.NewPCG(seed, 1))
	const ttl = 100
	var events []history.Event
	var truth []truthHold
	emit := func(t int64, k history.Kind, c int, f, err string) {
		events = append(events, history.Event{Time: t * 1e5, Kind: k, Client: c, F: f, Key: k0, Error: err})
	}
	events = append(events, history.Event{Time: 0, Kind: history.RunStart, Client: history.NoClient, Run: &history.RunInfo{Lock: "sim"}})
	next := make([]int64, clients) // when each client invokes its next acquire
	for c := range next {
		next[c] = rng.Int64N(20)
	}
	var leaseEnd, lastRelease int64
	owner := -1
	for range rounds * clients {
		c := 0
		for i := range next {
			if next[i] < next[c] {
				c = i
			}
		}
		inv := next[c]
		granted := max(inv, lastRelease, leaseEnd*boolInt(owner >= 0)) + rng.Int64N(3)
		if owner >= 0 && leaseEnd <= granted {
			owner = -1 // the lease expired under its owner
		}
		ok := granted + rng.Int64N(3)
		emit(inv, history.Invoke, c, history.Acquire, "")
		if rng.IntN(10) == 0 {
			emit(ok, history.Info, c, history.Acquire, "") // timed out: never entered
			next[c] = ok + rng.Int64N(10)
			continue
		}
		emit(ok, history.OK, c, history.Acquire, "")
		owner, leaseEnd = c, granted+ttl
		hold := 20 + rng.Int64N(60)
		if pauses && rng.IntN(8) == 0 {
			hold += ttl + rng.Int64N(2*ttl) // paused past the lease
		}
		rel := ok + hold
		done := rel + rng.Int64N(3)
		emit(rel, history.Invoke, c, history.Release, "")
		if owner == c && leaseEnd > rel {
			emit(done, history.OK, c, history.Release, "")
			owner, lastRelease = -1, rel
			truth = append(truth, truthHold{key: k0, client: c, start: ok * 1e5, end: rel * 1e5, how: EndRelease})
		} else {
			emit(done, history.Fail, c, history.Release, history.ErrNotHeld)
			truth = append(truth, truthHold{key: k0, client: c, start: ok * 1e5, end: rel * 1e5, how: EndReleaseNotHeld})
		}
		next[c] = done + rng.Int64N(10)
	}
	var end int64
	for _, e := range events {
		end = max(end, e.Time)
	}
	for c := range clients {
		events = append(events, history.Event{Time: end + 1, Kind: history.WorkerExit, Client: c, Expected: true})
	}
	events = append(events, history.Event{Time: end + 2, Kind: history.RunEnd, Client: history.NoClient})
	return shuffle(events, rand.New(rand.NewPCG(seed, 2)).IntN), truth
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Longer, realistic histories: porcupine must agree with the sweep, and both
// with the ground truth, in well under the default timeout.
func TestSimulatedLeaseLock(t *testing.T) {
	began := time.Now()
	var violations int
	for seed := range uint64(30) {
		events, truth := simulateLeaseLock(seed, 2+int(seed%7), 150, seed%2 == 0)
		r := Check(events, Options{Timeout: 20 * time.Second})
		want := naiveOverlaps(truth)
		if !r.Mutex.Agree || r.Mutex.OverlapCount != len(want) || r.Mutex.Holds != len(truth) {
			t.Fatalf("seed %d: porcupine %s, sweep %d overlaps, truth %d overlaps, %d holds (truth %d)",
				seed, r.Mutex.Porcupine, r.Mutex.OverlapCount, len(want), r.Mutex.Holds, len(truth))
		}
		if (r.Verdict == Violation) != (len(want) > 0) || (r.Verdict != Violation && r.Verdict != Safe) {
			t.Fatalf("seed %d: %s with %d overlaps: %q", seed, r.Verdict, len(want), r.Reasons)
		}
		if len(want) > 0 {
			violations++
		}
	}
	if violations == 0 || violations == 30 {
		t.Errorf("%d of 30 simulated runs had a violation: the simulation does not exercise both verdicts", violations)
	}
	t.Logf("30 simulated runs, %d with violations, in %v", violations, time.Since(began))
}
