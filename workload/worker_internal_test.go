package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/redis/go-redis/v9"
)

const ms = time.Millisecond

// startNode starts a real redis-server and a client to it.
func startNode(t *testing.T) (cluster.Node, *redis.Client) {
	t.Helper()
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	n, err := local.StartNode(context.Background(), cluster.NodeSpec{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	return n, rdb
}

// events collects what an in-process worker emits.
type events struct {
	mu  sync.Mutex
	all []history.Event
}

// get returns the worker's operations so far, without the stall events:
// those are the harness's notes on itself (the process could not run), not
// what the worker did.
func (e *events) get() []history.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []history.Event
	for _, ev := range e.all {
		if ev.Kind != history.Stall {
			out = append(out, ev)
		}
	}
	return out
}

// stalled says whether the worker recorded that it could not run for a
// while: on a loaded machine a lease can run out then, and a test whose
// point is a lease that is kept is no evidence either way.
func (e *events) stalled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.all {
		if ev.Kind == history.Stall {
			return true
		}
	}
	return false
}

// untilUnstalled runs attempt up to three times while it fails in a run
// whose worker stalled (a stall is the machine's, not the code's); a
// failure without a stall, or in the last attempt, is the test's.
func untilUnstalled(t *testing.T, attempt func() (ev *events, failure string)) {
	t.Helper()
	for i := 1; ; i++ {
		ev, failure := attempt()
		switch {
		case failure == "":
			return
		case ev.stalled() && i < 3:
			t.Logf("attempt %d: %s — the worker stalled, so it is no evidence; again", i, failure)
		default:
			t.Fatal(failure)
		}
	}
}

// testWorker runs a worker in this process against a lock node and a
// resource node, both real; lockRdb reaches the lock node directly.
func testWorker(t *testing.T, cfg Config) (w *worker, ev *events, lockRdb *redis.Client) {
	t.Helper()
	lockNode, lockRdb := startNode(t)
	resNode, _ := startNode(t)
	cfg.LockAddrs, cfg.ResourceAddr = []string{lockNode.Addr()}, resNode.Addr()
	cfg.Keys, cfg.Owner, cfg.Seed = 1, "client-0", 1
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = cfg.TTL
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ev = &events{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var e history.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("unreadable event %q: %v", sc.Text(), err)
				continue
			}
			ev.mu.Lock()
			ev.all = append(ev.all, e)
			ev.mu.Unlock()
		}
	}()
	w, err = newWorker(cfg, pw)
	if err != nil {
		t.Fatal(err)
	}
	// As in a worker process, the times this process could not run are
	// recorded (events.stalled).
	watching, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		WatchStalls(StallThreshold(cfg.TTL), watching, func(e history.Event) { w.emit(e) })
	}()
	t.Cleanup(func() {
		// The watcher has returned before the pipe closes: a stall it
		// emitted after would find the pipe closed, and the worker exits
		// the process (beside 8 CPU hogs it took the test binary with it:
		// "worker 0: coordinator gone (write |1: file already closed)").
		close(watching)
		<-watched
		w.close()
		pw.Close()
		<-done
		pr.Close()
	})
	return w, ev, lockRdb
}

// holdOnce runs one acquire and, if it succeeds, one hold.
func holdOnce(t *testing.T, w *worker) {
	t.Helper()
	lease, invoked, ok := w.acquire(context.Background(), KeyName(0))
	if !ok {
		t.Fatal("the first acquire failed")
	}
	w.hold(context.Background(), lease, invoked)
}

// holdGranted is holdOnce on a fresh worker whose first acquire is
// granted. A lock whose validity is short (redlock with a 100 ms TTL)
// refuses its own grant when the acquire took too long, as on a loaded
// machine: that is the lock working, and no evidence for the hold that
// follows, so such a worker is set aside and another tries.
func holdGranted(t *testing.T, cfg Config) *events {
	t.Helper()
	for i := 1; ; i++ {
		w, ev, _ := testWorker(t, cfg)
		lease, invoked, ok := w.acquire(context.Background(), KeyName(0))
		if ok {
			w.hold(context.Background(), lease, invoked)
			return ev
		}
		if i == 5 {
			t.Fatalf("%s refused five first acquires in a row: %q", cfg.Lock, kinds(ev.get()))
		}
		t.Logf("attempt %d: %s refused its first acquire (%q); another worker tries", i, cfg.Lock, kinds(ev.get()))
	}
}

// kinds renders the worker's events as "kind f" strings, in order.
func kinds(ev []history.Event) []string {
	var out []string
	for _, e := range ev {
		s := string(e.Kind)
		if e.F != "" {
			s += " " + e.F
		}
		out = append(out, s)
	}
	return out
}

// stretchSaid splits a hold's events into its operations and whether a
// stretch event said message.
func stretchSaid(events []history.Event, message string) (ops []history.Event, said bool) {
	for _, e := range events {
		if e.Kind != history.Stretch {
			ops = append(ops, e)
		} else if e.Message == message {
			said = true
		}
	}
	return ops, said
}

func waitEvents(ev *events, n int) []history.Event {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * ms) {
		if all := ev.get(); len(all) >= n {
			return all
		}
	}
	return ev.get()
}

// When the lease is lost in the middle of a hold (the key taken by someone
// else, as after an expiry), the client learns it from its renewal or from
// the lock's own watchdog, records it once, cuts the hold short and never
// writes.
func TestLosingTheLeaseEndsTheHoldWithoutAWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		steal func(ctx context.Context, rdb *redis.Client)
	}{
		{
			name:  "token-lua renewal finds the key taken",
			cfg:   Config{Lock: "token-lua", Workload: Workload{Renew: true}},
			steal: func(ctx context.Context, rdb *redis.Client) { rdb.Set(ctx, KeyName(0), "someone-else", time.Second) },
		},
		{
			name:  "reentrant-watchdog's watchdog finds the field gone",
			cfg:   Config{Lock: "reentrant-watchdog", Options: map[string]string{"watchdog-timeout": "1ttl"}},
			steal: func(ctx context.Context, rdb *redis.Client) { rdb.Del(ctx, KeyName(0)) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.TTL, cfg.Hold = 150*ms, 800*ms
			w, ev, lockRdb := testWorker(t, cfg)
			go func() {
				time.Sleep(200 * ms) // after a few renewals
				tc.steal(context.Background(), lockRdb)
			}()
			holdOnce(t, w)
			got := kinds(waitEvents(ev, 7))
			want := []string{"invoke acquire", "ok acquire", "invoke read", "ok read", "lost", "invoke release", "fail release"}
			if len(got) != len(want) {
				t.Fatalf("events %q, want %q", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("events %q, want %q", got, want)
				}
			}
		})
	}
}

// With renewals the lease outlives its TTL many times over: the hold ends
// with a write and a release that still held.
func TestRenewalKeepsALongHoldAlive(t *testing.T) {
	untilUnstalled(t, func() (*events, string) {
		w, ev, _ := testWorker(t, Config{Lock: "token-lua", Workload: Workload{Renew: true, TTL: 400 * ms, Hold: 1600 * ms}})
		holdOnce(t, w)
		got := kinds(waitEvents(ev, 8))
		want := []string{"invoke acquire", "ok acquire", "invoke read", "ok read", "invoke write", "ok write", "invoke release", "ok release"}
		if len(got) != len(want) || got[4] != want[4] || got[7] != want[7] {
			return ev, fmt.Sprintf("events %q, want %q", got, want)
		}
		return ev, ""
	})
}

// A lease whose deadline (Redlock's validity) passes during the hold ends
// the hold at that instant: the client knows its validity, and stops
// believing it holds the lock then, not at its next step. It never writes.
// Each node has half the lease to answer: at Redlock's default 5% (15 ms
// here) a machine busy with other work refused every first acquire
// (2026-11-30, beside a CPU hog per core), which tests nothing.
func TestDeadlinePassedEndsTheHoldThere(t *testing.T) {
	untilUnstalled(t, func() (*events, string) {
		ev := holdGranted(t, Config{Lock: "redlock", Options: map[string]string{"node-timeout": "0.5ttl"}, Workload: Workload{TTL: 300 * ms, Hold: 900 * ms}})
		all := waitEvents(ev, 7)
		got := kinds(all)
		if len(got) != 7 || got[4] != "lost" || got[5] != "invoke release" {
			return ev, fmt.Sprintf("events %q, want the hold to end with lost and no write", got)
		}
		if all[4].Message != "lease validity ran out" {
			return ev, fmt.Sprintf("lost message %q", all[4].Message)
		}
		// The validity is the TTL less the acquire's time and the drift:
		// the loss comes before the TTL has passed since the acquire
		// returned, long before the 900 ms hold would have ended (a timer
		// that fires late records a stall, and untilUnstalled runs it
		// again).
		if held := time.Duration(all[4].Time - all[1].Time); held >= 300*ms {
			return ev, fmt.Sprintf("lost %v after the acquire returned, at or past the 300ms TTL", held)
		}
		return ev, ""
	})
}

// A stretched hold stays in its critical section after its hold time until
// the stretch is withdrawn, but never past its bound since the acquire's
// invoke, which the worker enforces itself; a stretch of another key does
// not touch it.
func TestStretchKeepsTheHoldInsideWithinItsBound(t *testing.T) {
	for _, tc := range []struct {
		name      string
		key       string
		max       time.Duration
		withdraw  time.Duration // 0: never
		min, most time.Duration // how long the hold may last (most 0: it ends by itself)
		held      bool          // it was kept: it said it waits
	}{
		{"bound", KeyName(0), 300 * ms, 0, 300 * ms, 0, true},
		// Withdrawn long before its 5 s bound: it ends then, not at the bound.
		{"withdrawn", KeyName(0), 5 * time.Second, 250 * ms, 250 * ms, 4 * time.Second, true},
		{"other key", KeyName(1), 5 * time.Second, 0, 20 * ms, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, ev, _ := testWorker(t, Config{Lock: "token-lua", Workload: Workload{TTL: 10 * time.Second, Hold: 20 * ms}})
			w.stretch.set(tc.key, tc.max, 0, false)
			if tc.withdraw > 0 {
				go func() { time.Sleep(tc.withdraw); w.stretch.set("", 0, 0, false) }()
			}
			holdOnce(t, w)
			all, held := stretchSaid(waitEvents(ev, 9), StretchHolding)
			if held != tc.held {
				t.Errorf("the hold said it waits: %v, want %v", held, tc.held)
			}
			got := kinds(all)
			if len(got) != 8 || got[4] != "invoke write" {
				t.Fatalf("events %q, want a whole hold", got)
			}
			lasted := time.Duration(all[6].Time - all[0].Time) // acquire invoke to release invoke
			if lasted < tc.min || tc.most > 0 && lasted > tc.most {
				t.Errorf("held %v, want at least %v (and, if set, at most %v)", lasted, tc.min, tc.most)
			}
		})
	}
}

// A stop line ends a stretched hold at once, even one that waits, without
// a bound, for a pause that never comes (the run ended before the nemesis
// paused it): the worker finishes the hold and can exit.
func TestStopEndsAStretchThatWaitsForAPause(t *testing.T) {
	w, ev, _ := testWorker(t, Config{Lock: "token-lua", Workload: Workload{TTL: 10 * time.Second, Hold: 20 * ms}})
	w.stretch.set(KeyName(0), time.Hour, 0, true)
	go func() { time.Sleep(250 * ms); w.stop.Store(true); close(w.stopped) }()
	holdOnce(t, w)
	all, stopping := stretchSaid(waitEvents(ev, 9), StretchStopping)
	if !stopping {
		t.Fatal("the hold never said it waits for a pause")
	}
	if got := kinds(all); len(got) != 8 {
		t.Fatalf("events %q, want a whole hold", got)
	}
	if lasted := time.Duration(all[6].Time - all[0].Time); lasted > 5*time.Second {
		t.Errorf("held %v after the stop line, want it to end at the stop", lasted)
	}
}

// A stretch with a rest keeps no hold inside until the worker has rested:
// a hold begun before the rest is over is not stretched; the rest says
// when it begins ("resting") and the stretch when it takes effect ("on"),
// at least the rest later; the next hold is the one kept inside. A
// stretch withdrawn during its rest never begins.
func TestStretchWithARestBeginsAfterTheRest(t *testing.T) {
	const rest = 300 * ms
	t.Run("rested", func(t *testing.T) {
		w, ev, _ := testWorker(t, Config{Lock: "token-lua", Workload: Workload{TTL: 10 * time.Second, Hold: 20 * ms}})
		w.stretch.set(KeyName(0), 5*time.Second, rest, false)
		if max, _ := w.stretch.current(KeyName(0), history.Now()); max != 0 {
			t.Fatalf("a hold begun before the rest is stretched for %v", max)
		}
		w.rest()
		go func() { time.Sleep(200 * ms); w.stretch.set("", 0, 0, false) }()
		holdOnce(t, w)
		var resting, on int64
		held := false
		for _, e := range waitEvents(ev, 11) {
			switch {
			case e.Kind == history.Stretch && e.Message == StretchResting:
				resting = e.Time
			case e.Kind == history.Stretch && e.Message == "on":
				on = e.Time
			case e.Kind == history.Stretch && e.Message == StretchHolding:
				held = true
			case e.F == history.Acquire && e.Kind == history.Invoke && (on == 0 || e.Time < on):
				t.Errorf("an acquire invoked before the stretch began at %d: %+v", on, e)
			}
		}
		if resting == 0 || on == 0 || time.Duration(on-resting) < rest {
			t.Errorf("resting at %d, on at %d: want both, at least %v apart", resting, on, rest)
		}
		if !held {
			t.Error("the hold after the rest was not kept inside")
		}
	})
	t.Run("withdrawn", func(t *testing.T) {
		w, ev, _ := testWorker(t, Config{Lock: "token-lua", Workload: Workload{TTL: 10 * time.Second, Hold: 20 * ms}})
		w.stretch.set(KeyName(0), 5*time.Second, 5*time.Second, false)
		go func() { time.Sleep(100 * ms); w.stretch.set("", 0, 0, false) }()
		start := time.Now()
		w.rest()
		if d := time.Since(start); d >= 5*time.Second {
			t.Errorf("a withdrawn rest went on for %v", d)
		}
		for _, e := range ev.get() {
			if e.Kind == history.Stretch && e.Message == "on" {
				t.Errorf("a stretch withdrawn during its rest began: %+v", e)
			}
		}
		if max, _ := w.stretch.current(KeyName(0), history.Now()); max != 0 {
			t.Errorf("a hold after the withdrawn rest is stretched for %v", max)
		}
	})
}

// Once the release of a hold is invoked, a late report of loss (a renewal
// racing the release) is not recorded: the hold already ended.
func TestNoLostAfterTheRelease(t *testing.T) {
	w, ev, _ := testWorker(t, Config{Lock: "token-lua", Workload: Workload{TTL: 100 * ms}})
	ctx := context.Background()
	lease, invoked, ok := w.acquire(ctx, KeyName(0))
	if !ok {
		t.Fatal("acquire failed")
	}
	h := w.watch(lease, invoked)
	h.cancel()
	w.release(ctx, lease, h)
	w.markLost(h, "too late")
	for _, e := range waitEvents(ev, 4) {
		if e.Kind == history.Lost {
			t.Errorf("a lost event after the release: %+v", e)
		}
	}
}

// Fenced reads close the lost update that fenced writes alone let through.
func TestFencedReadRejectsAnOlderToken(t *testing.T) {
	ctx := context.Background()
	_, rdb := startNode(t)
	r := Resource{rdb: rdb}
	const key = "lock:0"
	if v, err := r.Read(ctx, key, 5); err != nil || v != 0 {
		t.Fatalf("A (5) reads: %d, %v", v, err)
	}
	if v, err := r.Read(ctx, key, 6); err != nil || v != 0 {
		t.Fatalf("B (6) reads: %d, %v", v, err)
	}
	if err := r.Write(ctx, key, 1, 5); !errors.Is(err, errStale) {
		t.Errorf("A's write with 5 after B read with 6: %v, want stale", err)
	}
	if err := r.Write(ctx, key, 1, 6); err != nil {
		t.Errorf("B's write: %v", err)
	}
	if _, err := r.Read(ctx, key, 5); !errors.Is(err, errStale) {
		t.Errorf("A's read with 5 after 6: %v, want stale", err)
	}
	if v, err := r.Read(ctx, key, 7); err != nil || v != 1 {
		t.Errorf("C (7) reads %d, %v: want 1, nothing lost", v, err)
	}
	if v, err := r.Read(ctx, key, 0); err != nil || v != 1 {
		t.Errorf("unfenced read: %d, %v", v, err)
	}
}

// A hold already under way when the stretch was taken is not the one a
// nemesis aimed at: it ends on its own time.
func TestStretchSparesTheHoldUnderWay(t *testing.T) {
	w, ev, _ := testWorker(t, Config{Lock: "token-lua", Workload: Workload{TTL: 10 * time.Second, Hold: 20 * ms}})
	ctx := context.Background()
	lease, invoked, ok := w.acquire(ctx, KeyName(0))
	if !ok {
		t.Fatal("acquire failed")
	}
	w.stretch.set(KeyName(0), 5*time.Second, 0, false)
	w.hold(ctx, lease, invoked)
	all := waitEvents(ev, 9)
	for _, e := range all {
		if e.Kind == history.Stretch {
			t.Errorf("a hold begun before the stretch was kept: %+v", e)
		}
	}
	if len(all) != 8 {
		t.Errorf("events %q: want one whole hold", kinds(all))
	}
}

// pendingHook fails the test if a request leaves while events wait in the
// worker's memory (emitThen): a worker killed during that request would
// lose them, and an acquire's lost ok would hide a hold.
type pendingHook struct {
	t *testing.T
	w *worker
}

func (h pendingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h pendingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.w.mu.Lock()
		pending := string(h.w.pending)
		h.w.mu.Unlock()
		if pending != "" {
			h.t.Errorf("%v sent with events still in memory: %s", cmd.Args(), pending)
		}
		return next(ctx, cmd)
	}
}

func (h pendingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.w.mu.Lock()
		pending := len(h.w.pending)
		h.w.mu.Unlock()
		if pending != 0 {
			h.t.Errorf("a pipeline sent with events still in memory")
		}
		return next(ctx, cmds)
	}
}

// Events may be gathered into one write (emitThen), but never while the
// client acts on the world: every request to the lock or the resource,
// whoever sends it (the main loop, a renewal), leaves only once every
// event before it is in the pipe, and the worker's last events are there
// when run returns. The whole history arrives, in order, each client's
// operations paired.
func TestNoEventWaitsInMemoryWhileARequestIsOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no hold, no think", Config{Lock: "token-lua", Workload: Workload{TTL: 500 * ms}}},
		{"hold, think and renewals", Config{Lock: "token-lua", Workload: Workload{TTL: 60 * ms, Hold: 30 * ms, Think: ms, Renew: true}}},
		{"re-entry and a watchdog", Config{Lock: "reentrant-watchdog", Workload: Workload{TTL: 500 * ms, Reentry: 0.5}}},
		{"fenced", Config{Lock: "fenced", Workload: Workload{TTL: 500 * ms}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, ev, _ := testWorker(t, tc.cfg)
			for _, n := range w.nodes {
				n.AddHook(pendingHook{t, w})
			}
			w.res.rdb.AddHook(pendingHook{t, w})
			go func() {
				time.Sleep(300 * ms)
				w.stop.Store(true)
				close(w.stopped)
			}()
			w.run()
			w.mu.Lock()
			left := len(w.pending)
			w.mu.Unlock()
			if left != 0 {
				t.Fatalf("run returned with %d bytes of events unwritten", left)
			}
			all := waitEvents(ev, 1<<30)
			if len(all) > 0 && all[len(all)-1].Kind == history.Invoke {
				t.Fatalf("the last event is an invoke without its completion: %+v", all[len(all)-1])
			}
			var open *history.Event
			cycles := 0
			for i, e := range all {
				switch e.Kind {
				case history.Invoke:
					if open != nil {
						t.Fatalf("event %d: invoke %s while %s is open: %v", i, e.F, open.F, kinds(all))
					}
					open = &all[i]
				case history.OK, history.Fail, history.Info:
					if open == nil || open.F != e.F {
						t.Fatalf("event %d: %s %s completes nothing open: %v", i, e.Kind, e.F, kinds(all))
					}
					if e.F == history.Release && e.Kind == history.OK {
						cycles++
					}
					open = nil
				}
				if i > 0 && e.Time < all[i-1].Time {
					t.Fatalf("event %d is older than the one before it", i)
				}
			}
			if cycles == 0 {
				t.Fatalf("no cycle completed: %v", kinds(all))
			}
		})
	}
}
