package runner

import (
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// The live check sees events in order of arrival. An overlap is reported
// only once every worker that could still send an older event has sent a
// newer one — except a worker a fault stopped, which cannot send.
func TestLiveCheckWaitsForEveryWorker(t *testing.T) {
	t.Parallel()
	var seen []checker.Overlap
	l := newLiveCheck(3, 0, func(o checker.Overlap) { seen = append(seen, o) })
	clock := int64(0)
	l.now = func() int64 { return clock }
	ev := func(t int64, kind history.Kind, c int, f string) history.Event {
		return history.Event{Time: t, Kind: kind, Client: c, F: f, Key: "k"}
	}
	l.add(history.Event{Time: 1, Kind: history.RunStart, Client: history.NoClient, Run: &history.RunInfo{Lock: "x"}})
	l.add(ev(10, history.Invoke, 0, history.Acquire))
	l.add(ev(11, history.OK, 0, history.Acquire))
	// Client 0 released at 20, but its events are slow to arrive: client
	// 1's acquire at 30 arrives first.
	l.add(ev(25, history.Invoke, 1, history.Acquire))
	l.add(ev(30, history.OK, 1, history.Acquire))
	l.add(ev(40, history.Invoke, 2, history.Acquire))
	if len(seen) != 0 {
		t.Fatalf("reported %v before client 0 had sent what it did before t=30", seen)
	}
	l.add(ev(20, history.Invoke, 0, history.Release))
	l.add(ev(21, history.OK, 0, history.Release))
	l.add(ev(50, history.Fail, 2, history.Acquire))
	l.add(ev(51, history.Invoke, 0, history.Acquire))
	if len(seen) != 0 {
		t.Fatalf("a hand-over reported as an overlap: %v", seen)
	}

	// Client 1 holds; a fault stops it, and client 0 acquires at 80: the
	// stopped client is not waited for.
	l.add(history.Event{Time: 60, Kind: history.FaultStart, Client: history.NoClient, Fault: &history.Fault{ID: 1, Stopped: []int{1}}})
	l.add(ev(80, history.OK, 0, history.Acquire))
	l.add(ev(90, history.Invoke, 2, history.Acquire))
	l.add(ev(91, history.Fail, 2, history.Acquire))
	l.add(ev(92, history.Invoke, 0, history.Read))
	if len(seen) != 1 || seen[0].Clients != [2]int{1, 0} {
		t.Fatalf("want the overlap of clients 1 and 0 while 1 is stopped, got %v", seen)
	}
}

// A worker that runs but sends nothing (a hold a nemesis stretched) holds
// the others back for liveSlack at most: the window stays small.
func TestLiveCheckDoesNotWaitForASilentWorkerForever(t *testing.T) {
	t.Parallel()
	l := newLiveCheck(2, 0, nil)
	clock := int64(0)
	l.now = func() int64 { return clock }
	l.add(history.Event{Time: 1, Kind: history.Invoke, Client: 1, F: history.Acquire, Key: "k"})
	for i := int64(2); i < 100_000; i++ {
		clock = i * 1000
		l.add(history.Event{Time: clock, Kind: history.Invoke, Client: 0, F: history.Acquire, Key: "k"})
		l.add(history.Event{Time: clock + 1, Kind: history.Fail, Client: 0, F: history.Acquire, Key: "k"})
	}
	// Client 1 has been silent for the whole 100 ms of client 0's events,
	// less than liveSlack: everything since is held back. Once the clock
	// is liveSlack past them, they go.
	held := l.window.Held()
	clock += liveSlack.Nanoseconds() + 1_000_000
	l.add(history.Event{Time: clock, Kind: history.Invoke, Client: 0, F: history.Acquire, Key: "k"})
	if after := l.window.Held(); after >= held/10 {
		t.Errorf("a silent worker held %d events back, and %d after liveSlack", held, after)
	}
}
