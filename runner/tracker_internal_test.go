package runner

import (
	"context"
	"testing"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/workload"
)

// The stop of a stretch waits in the first stretched hold that reaches
// the end of its work, which need not be the first stretched hold: one
// whose lock reported it lost (or whose work outlasted the stretch's bound)
// never gets there, and the client's next hold of the key waits instead.
// The view says which hold waits, so that a pause is aimed at the hold it
// stops, not at the one before it (issue 42.5).
func TestTheViewSaysWhichHoldWaits(t *testing.T) {
	t.Parallel()
	tr := newTracker()
	ev := func(e history.Event) { tr.observe(e) }
	key := "lock:0"
	ev(history.Event{Time: 10, Kind: history.Stretch, Client: 1, Key: key, Message: "on"})
	// The first stretched hold: its lock reports it lost before its wait.
	ev(history.Event{Time: 20, Kind: history.Invoke, Client: 1, F: history.Acquire, Key: key})
	ev(history.Event{Time: 30, Kind: history.OK, Client: 1, F: history.Acquire, Key: key, Token: "t"})
	ev(history.Event{Time: 40, Kind: history.Lost, Client: 1, Key: key})
	ev(history.Event{Time: 50, Kind: history.Invoke, Client: 1, F: history.Release, Key: key, Token: "t"})
	ev(history.Event{Time: 60, Kind: history.Fail, Client: 1, F: history.Release, Key: key, Error: history.ErrNotHeld})
	// The next one, with the same token (an adapter that reuses it), waits.
	ev(history.Event{Time: 70, Kind: history.Invoke, Client: 1, F: history.Acquire, Key: key})
	ev(history.Event{Time: 80, Kind: history.OK, Client: 1, F: history.Acquire, Key: key, Token: "t"})
	ev(history.Event{Time: 90, Kind: history.Stretch, Client: 1, Key: key, Message: workload.StretchStopping})
	var w nemesis.Wait
	if err := tr.await(context.Background(), func(v nemesis.View) bool { w = v.Waiting[1]; return true }); err != nil {
		t.Fatal(err)
	}
	if w.At != 90 || w.Client != 1 || w.Key != key || w.Invoked != 70 || w.OK != 80 {
		t.Errorf("waiting %+v, want the hold invoked at 70 (ok at 80), waiting since 90", w)
	}
}

// An acquire the harness stopped waiting for (an adapter silent past its
// op timeout) is marked so in the view: slow-reply counts no refusal of
// the lock's on it (issue 42: a fault counted landed on the harness's own
// 2.5 s op timeout, redisson-fair-lock+slow-reply).
func TestTheViewSaysWhichAcquireWentUnanswered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind       history.Kind
		err        string
		unanswered bool
	}{
		{history.Info, locks.NoAnswer + " to acquire within 2.5s", true},
		{history.Info, "read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout", false},
		{history.Fail, "", false},
	} {
		tr := newTracker()
		tr.observe(history.Event{Time: 10, Kind: history.Invoke, Client: 0, F: history.Acquire, Key: "lock:0"})
		tr.observe(history.Event{Time: 20, Kind: tc.kind, Client: 0, F: history.Acquire, Key: "lock:0", Error: tc.err})
		var a nemesis.Acquire
		if err := tr.await(context.Background(), func(v nemesis.View) bool { a = v.Acquires[0]; return true }); err != nil {
			t.Fatal(err)
		}
		if a.Outcome != tc.kind || a.Unanswered != tc.unanswered {
			t.Errorf("%s %q: acquire %+v, want unanswered %v", tc.kind, tc.err, a, tc.unanswered)
		}
	}
}

// A stretch sent to a worker is spoken for from the moment it is sent: a
// worker asked to rest first says "on" only after the rest, and another
// fault aiming meanwhile (nemesis.aimAny, which arms every client not
// already stretched) must not take that client's stretch over. The view
// counts it stretched until its worker takes it, or it is withdrawn.
func TestAStretchSentIsStretchedBeforeItsWorkerTakesIt(t *testing.T) {
	t.Parallel()
	tr := newTracker()
	key := "lock:0"
	stretched := func() map[int]string {
		var m map[int]string
		if err := tr.await(context.Background(), func(v nemesis.View) bool { m = v.Stretched; return true }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	tr.ask(2, key)
	tr.observe(history.Event{Time: 10, Kind: history.Stretch, Client: 2, Key: key, Message: workload.StretchResting})
	if got := stretched(); got[2] != key {
		t.Errorf("resting: stretched %v, want client 2 on %s", got, key)
	}
	tr.observe(history.Event{Time: 20, Kind: history.Stretch, Client: 2, Key: key, Message: "on"})
	if got := stretched(); got[2] != key {
		t.Errorf("taken: stretched %v, want client 2 on %s", got, key)
	}
	tr.ask(2, "")
	tr.observe(history.Event{Time: 30, Kind: history.Stretch, Client: 2, Message: "off"})
	if got := stretched(); len(got) != 0 {
		t.Errorf("withdrawn: stretched %v, want none", got)
	}
	tr.ask(3, key) // sent, then not taken
	tr.ask(3, "")
	if got := stretched(); len(got) != 0 {
		t.Errorf("not taken: stretched %v, want none", got)
	}
}
