package nemesis

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// A fault that takes a lease away from a holder that has already let go
// lands only when the holder's lock told it the lease was lost (a library
// that takes a lost connection for a lost lock, as Curator and kazoo
// advise). The lease is then what the nodes say: kept when they still hold
// it (a ZooKeeper session outlives a failover; the lock gave it up only
// to be safe), lost when they forgot it — a race that the holder's leaving
// settled before anyone ran it (checker.Result.RaceNotRun). A holder that
// let go for no such reason (its stretch ran out) leaves the fault without
// effect, whatever the nodes forgot.
func TestAFaultOnAHolderThatLetGoLandsOnlyOnALostEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		lost   bool
		after  []int // the nodes that held the key after the fault
		landed bool
		lease  string
		says   string
	}{
		{"its lock reported the lease lost and the nodes forgot it", true, nil, true, history.LeaseLost, "reported its lease of lock:0 lost"},
		{"its lock reported the lease lost and the nodes kept it", true, []int{0, 1}, true, history.LeaseKept, "yet the nodes kept the lease"},
		{"its stretch ran out", false, nil, false, "", "had let go of lock:0 by then"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newFakeEnv()
			invoked := history.Now()
			a := &aimed{env: env, proc: env, Holding: Holding{Client: 1, Key: "lock:0", Invoked: invoked, OK: invoked}}
			if tc.lost {
				env.lost = map[int]map[string]int64{1: {"lock:0": invoked + 1}}
			}
			// No hold of client 1 in the env: it has let go.
			e, err := a.lostEffect(context.Background(), invoked, votes{nodes: 3, before: []int{0, 1, 2}, after: tc.after, quorum: 1}, "lock node 2 was back")
			if err != nil {
				t.Fatal(err)
			}
			if e.Landed != tc.landed || !strings.Contains(e.Note, tc.says) {
				t.Errorf("landed %v (want %v), note %q (want it to say %q)", e.Landed, tc.landed, e.Note, tc.says)
			}
			if e.Lease != tc.lease {
				t.Errorf("lease %q, want %q", e.Lease, tc.lease)
			}
		})
	}
}

// A fault that stops a holder lands when the lease surely ran out before it
// ended: it lasted a whole lease, or — for a lease nobody extends — it ended
// past the acquire's return plus the lease, however short it was (a pause
// late in a hold, cut short by the end of the run). A lease that may have
// been renewed is sure to end only after a whole lease of silence, and so
// is one behind a slow link, which lets a release through.
func TestAFaultLandsWhenItOutlastsWhatWasLeftOfTheLease(t *testing.T) {
	t.Parallel()
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		name              string
		renews            bool
		startMs, lastedMs int64 // since the acquire's return; lease 20 ms
		landed            bool
		says              string
		frozen            bool
	}{
		{"a whole lease", false, 1, 25, true, "past its 20ms lease", true},
		{"short, past what was left", false, 8, 15, true, "past the end of its 20ms lease (granted 8ms before the fault began)", true},
		{"short, ending before the lease", false, 2, 15, false, "ending before its 20ms lease did", true},
		{"short, past what was left of a renewed lease", true, 8, 15, false, "less than its 20ms lease, which is renewed", true},
		{"a whole renewed lease", true, 1, 25, true, "past its 20ms lease", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newFakeEnv()
			env.renews = tc.renews
			ok := history.Now()
			a := &aimed{env: env, Holding: Holding{Client: 1, Key: "lock:0", Invoked: ok - ms, OK: ok}}
			start := ok + tc.startMs*ms
			e := a.lastedEffect(start, start+tc.lastedMs*ms, "client 1 was stopped", tc.frozen)
			if e.Landed != tc.landed || !strings.Contains(e.Note, tc.says) {
				t.Errorf("landed %v (want %v), note %q (want it to say %q)", e.Landed, tc.landed, e.Note, tc.says)
			}
		})
	}
}

// A slow link lets the holder's release through: only a whole lease of it
// is sure to have outlasted the lease.
func TestASlowLinkLandsOnlyByLastingAWholeLease(t *testing.T) {
	t.Parallel()
	ms := int64(time.Millisecond)
	env := newFakeEnv()
	ok := history.Now()
	a := &aimed{env: env, Holding: Holding{Client: 1, Key: "lock:0", Invoked: ok - ms, OK: ok}}
	if e := a.lastedEffect(ok+8*ms, ok+23*ms, "the links were slowed", false); e.Landed {
		t.Errorf("a 15 ms slow link past what was left of a 20 ms lease landed: %q", e.Note)
	}
	if e := a.lastedEffect(ok+8*ms, ok+30*ms, "the links were slowed", false); !e.Landed {
		t.Errorf("a 22 ms slow link on a 20 ms lease did not land: %q", e.Note)
	}
}

// A fault that took the aimed lease keeps its holder inside until another
// client holds the key, and says so only while the holder still holds it:
// a holder that let go first (the run's end cut its work short) leaves the
// fault without evidence, and it did not land; one whose lock reported the
// lease lost stopped by the lock's own check, and the fault stands.
func TestATakerCountsOnlyWhileTheHolderStillHolds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		letGoLost bool // the holder lets go after its lock reported the lease lost
		takeFirst bool // client 2 takes the key while client 1 still holds it
		landed    bool
		says      string
	}{
		{"taken while held", false, true, true, "client 2 then acquired lock:0 while client 1 still held it"},
		{"let go, then taken", false, false, false, "client 1 let go of lock:0 (the run's end or its stretch's bound) before another client took it"},
		{"reported lost, then taken", true, false, true, "no other client acquired lock:0 before client 1 let go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newFakeEnv()
			env.hold(1, "lock:0")
			a := &aimed{env: env, proc: env, Holding: env.Holders()[0], bound: time.Minute}
			go func() {
				time.Sleep(10 * time.Millisecond)
				if tc.takeFirst {
					env.hold(2, "lock:0")
					return
				}
				env.mu.Lock()
				if tc.letGoLost {
					env.lost = map[int]map[string]int64{1: {"lock:0": history.Now()}}
				}
				env.holders = nil
				env.mu.Unlock()
				env.hold(2, "lock:0") // wakes the waiter, and takes the key only now
			}()
			taker, letGo, err := a.untilTaken(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			e := &history.Effect{Landed: true}
			a.takenNote(e, taker, letGo)
			if e.Landed != tc.landed || !strings.Contains(e.Note, tc.says) {
				t.Errorf("taker %d, let go %v: landed %v (want %v), note %q (want it to say %q)", taker, letGo, e.Landed, tc.landed, e.Note, tc.says)
			}
		})
	}
}

// Kept through its bound, a holder that lets go first ends the wait, and a
// client that takes the key after it is no taker.
func TestThroughBoundCountsATakerOnlyWhileTheHolderHolds(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	env.hold(1, "lock:0")
	a := &aimed{env: env, proc: env, Holding: env.Holders()[0], bound: time.Minute}
	go func() {
		time.Sleep(10 * time.Millisecond)
		env.mu.Lock()
		env.holders = nil
		env.mu.Unlock()
		env.hold(2, "lock:0")
	}()
	if taker, err := a.throughBound(context.Background()); err != nil || taker != -1 {
		t.Errorf("taker %d (%v), want -1: client 2 took the key only after client 1 let go", taker, err)
	}
}

// A lock whose nodes mark one lease differently (RedissonRedLock: a
// Redisson client per node, each with its own id) names it by one mark per
// node, comma-separated in the nodes' order; the nodes are asked each for
// its own. Any other token is every node's, commas and all.
func TestATokenNamesTheLeaseOnEachNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		token string
		i, n  int
		want  string
	}{
		{"a:1,b:1,c:1,d:1,e:1", 0, 5, "a:1"},
		{"a:1,b:1,c:1,d:1,e:1", 4, 5, "e:1"},
		{"t-17", 3, 5, "t-17"},
		{"x,y", 0, 5, "x,y"},             // not one mark per node: the whole token
		{"a,b,c,d,e", 0, 1, "a,b,c,d,e"}, // one node: the token as the lock sent it
	} {
		if got := (Holding{Key: "lock:0", Token: tc.token}).On(tc.i, tc.n).Token; got != tc.want {
			t.Errorf("token %q on node %d of %d: got %q, want %q", tc.token, tc.i, tc.n, got, tc.want)
		}
	}
}

// A fault that needs a holder, not a client (a failover, a node's crash),
// aims at the first hold of its key by any client: the step's client may
// lose every race for the key until the run ends (a lock whose tries wait
// a second for its replicas, four clients trying in step). Every client is
// asked to stay inside, the first to hold is the aim, the others are let
// go at once, and a client another fault keeps inside is left to it.
func TestAHolderFaultAimsAtTheFirstHoldByAnyClient(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	env.stretched[3] = "lock:0" // another nemesis keeps client 3 inside
	step := Step{Client: 1, Key: "lock:0"}
	go func() {
		// Client 2, not the step's client 1, holds once every free client
		// was asked to stay inside.
		for {
			env.mu.Lock()
			n := len(env.stretched)
			env.mu.Unlock()
			if n == 4 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		env.hold(2, "lock:0")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // the step's own wait is 5 s
	defer cancel()
	a, _, err := aimHolder(ctx, env, step, time.Second, "any")
	if err != nil {
		t.Fatalf("aimHolder: %v (it waited for the step's client, not for any holder)", err)
	}
	if a.Client != 2 || a.Key != "lock:0" || a.released {
		t.Errorf("aimed at client %d's hold of %s (released %v), want client 2's, kept inside", a.Client, a.Key, a.released)
	}
	env.mu.Lock()
	left := maps.Clone(env.stretched)
	env.mu.Unlock()
	if want := map[int]string{2: "lock:0", 3: "lock:0"}; !maps.Equal(left, want) {
		t.Errorf("stretches in force after the aim: %v, want %v (the aim's, and the other fault's)", left, want)
	}
	if err := a.release(); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.stretched[2]; ok {
		t.Errorf("client 2 still stretched after the aim let it go")
	}
}
