package runner

import (
	"context"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/workload"
)

// tracker follows the event stream live so nemeses can aim: who holds what,
// who is in the middle of an acquire, which stretch each worker has taken.
// It is only for aiming; the checker never reads it.
type tracker struct {
	mu           sync.Mutex
	holding      map[int]map[string]*heldKey
	acquiring    map[int]inFlight
	acquires     map[int]nemesis.Acquire // each client's latest
	releases     map[int]nemesis.Release // each client's latest
	cancelled    map[int]nemesis.Release // each client's latest that a nemesis asked to cancel
	cancelledAcq map[int]nemesis.Acquire // the same of its acquires
	granted      map[int]int64           // the invoke of each client's latest granted acquire
	exitedSet    map[int]bool
	stretched    map[int]stretchAck
	// asked are the stretches sent to a worker that it has not yet taken
	// (one asked to rest first takes it only after the rest): already
	// spoken for, as far as another fault's aim is concerned.
	asked   map[int]string
	waiting map[int]nemesis.Wait // the stretched hold that last reached its wait
	resting map[int]int64        // when each client last began a rest a stretch asked for
	lost    map[int]map[string]int64
	stats   struct{ acquires, holds, faults, stalls int }
	// stopped are, per client, the times a fault stopped its process on
	// purpose (end 0 while it lasts): a stall then is the fault's, not
	// counted among the harness's stalls (the checker's rule).
	stopped map[int][][2]int64
	// changed is closed and replaced at every event: waiters look again.
	changed chan struct{}
}

type heldKey struct {
	depth   int
	since   time.Time
	ok      int64 // the outermost acquire's ok (history time)
	invoked int64 // its invoke
	token   string
	fence   int64
}

type inFlight struct {
	since   time.Time
	invoked int64
}

// stretchAck is the last stretch event of a worker: the key it holds on to
// ("" after an unstretch) and when it said so.
type stretchAck struct {
	key string
	at  int64
}

func newTracker() *tracker {
	return &tracker{holding: map[int]map[string]*heldKey{}, acquiring: map[int]inFlight{},
		acquires: map[int]nemesis.Acquire{}, releases: map[int]nemesis.Release{}, cancelled: map[int]nemesis.Release{}, cancelledAcq: map[int]nemesis.Acquire{}, granted: map[int]int64{}, exitedSet: map[int]bool{},
		stretched: map[int]stretchAck{}, asked: map[int]string{}, waiting: map[int]nemesis.Wait{}, resting: map[int]int64{}, lost: map[int]map[string]int64{}, stopped: map[int][][2]int64{}, changed: make(chan struct{})}
}

func (t *tracker) observe(e history.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer t.broadcast()
	now := time.Now()
	switch {
	case e.Kind == history.FaultStart:
		t.stats.faults++
		for _, c := range e.Fault.Stopped {
			t.stopped[c] = append(t.stopped[c], [2]int64{e.Time, 0})
		}
	case e.Kind == history.FaultEnd:
		for _, c := range e.Fault.Stopped {
			if iv := t.stopped[c]; len(iv) > 0 {
				iv[len(iv)-1][1] = e.Time
			}
		}
	case e.Kind == history.Stall:
		if e.Queued || !t.wasStopped(e.Client, e.Time-e.StallNs, e.Time) {
			t.stats.stalls++
		}
	case e.Kind == history.Stretch && (e.Message == workload.StretchHolding || e.Message == workload.StretchStopping):
		// The hold that waits is the one in progress: its events come in
		// order, and it holds until it writes.
		w := nemesis.Wait{At: e.Time}
		if h := t.holding[e.Client][e.Key]; h != nil {
			w.Holding = holding(e.Client, e.Key, h)
		}
		t.waiting[e.Client] = w
	case e.Kind == history.Stretch && e.Message == workload.StretchResting:
		// the stretch's "on" comes when the rest is over
		t.resting[e.Client] = e.Time
	case e.Kind == history.Stretch:
		t.stretched[e.Client] = stretchAck{key: e.Key, at: e.Time}
		delete(t.asked, e.Client)
	case e.F == history.Acquire && e.Kind == history.Invoke:
		t.stats.acquires++
		t.acquiring[e.Client] = inFlight{since: now, invoked: e.Time}
		a := nemesis.Acquire{Key: e.Key, Invoked: e.Time, Cancelled: strings.HasPrefix(e.Message, workload.CancelAsked)}
		t.acquires[e.Client] = a
		if a.Cancelled {
			t.cancelledAcq[e.Client] = a
		}
	case e.F == history.Acquire:
		inv := t.acquiring[e.Client]
		delete(t.acquiring, e.Client)
		if a, ok := t.acquires[e.Client]; ok && a.Outcome == "" {
			a.Done, a.Outcome, a.Error = e.Time, e.Kind, e.Error
			a.Unanswered = e.Kind == history.Info && strings.Contains(e.Error, locks.NoAnswer)
			a.NoValidity = e.Kind == history.Fail && strings.Contains(e.Message, locks.NoValidityLeft)
			t.acquires[e.Client] = a
			if a.Cancelled {
				t.cancelledAcq[e.Client] = a
			}
		}
		if e.Kind == history.OK {
			t.granted[e.Client] = inv.invoked
			keys := t.holding[e.Client]
			if keys == nil {
				keys = map[string]*heldKey{}
				t.holding[e.Client] = keys
			}
			if keys[e.Key] == nil {
				keys[e.Key] = &heldKey{since: now, ok: e.Time, invoked: inv.invoked, token: e.Token, fence: e.Fence}
				t.stats.holds++
			}
			keys[e.Key].depth++
		}
	case e.F == history.Release && e.Kind == history.Invoke:
		r := nemesis.Release{Key: e.Key, Invoked: e.Time, Cancelled: strings.HasPrefix(e.Message, workload.CancelAsked)}
		if h := t.holding[e.Client][e.Key]; h != nil {
			r.Token = h.token
			if h.depth--; h.depth <= 0 {
				delete(t.holding[e.Client], e.Key)
			}
		}
		t.releases[e.Client] = r
		if r.Cancelled {
			t.cancelled[e.Client] = r
		}
	case e.F == history.Release:
		if r, ok := t.releases[e.Client]; ok && r.Outcome == "" {
			r.Done, r.Outcome, r.Error = e.Time, e.Kind, e.Error
			t.releases[e.Client] = r
			if r.Cancelled {
				t.cancelled[e.Client] = r
			}
		}
	case e.Kind == history.Lost:
		delete(t.holding[e.Client], e.Key)
		if t.lost[e.Client] == nil {
			t.lost[e.Client] = map[string]int64{}
		}
		t.lost[e.Client][e.Key] = e.Time
	}
}

// wasStopped says whether a fault stopped client c's process for most of
// [from, to] (a stall it measured then, plus the instants before it ran
// again after SIGCONT).
func (t *tracker) wasStopped(c int, from, to int64) bool {
	for _, iv := range t.stopped[c] {
		end := iv[1]
		if end == 0 {
			end = to
		}
		if lo, hi := max(from, iv[0]), min(to, end); hi-lo > (to-from)/2 {
			return true
		}
	}
	return false
}

// lostLocked copies the times of the clients' latest lost events.
func (t *tracker) lostLocked() map[int]map[string]int64 {
	out := make(map[int]map[string]int64, len(t.lost))
	for c, keys := range t.lost {
		out[c] = maps.Clone(keys)
	}
	return out
}

func (t *tracker) broadcast() {
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *tracker) exited(client int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.holding, client)
	delete(t.acquiring, client)
	delete(t.stretched, client)
	t.exitedSet[client] = true
	t.broadcast()
}

func (t *tracker) holders() []nemesis.Holding {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.holdersLocked()
}

func (t *tracker) holdersLocked() []nemesis.Holding {
	var out []nemesis.Holding
	for c, keys := range t.holding {
		for k, h := range keys {
			out = append(out, holding(c, k, h))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Client != out[j].Client {
			return out[i].Client < out[j].Client
		}
		return out[i].Key < out[j].Key
	})
	return out
}

func holding(c int, k string, h *heldKey) nemesis.Holding {
	return nemesis.Holding{Client: c, Key: k, Since: h.since, OK: h.ok, Invoked: h.invoked, Token: h.token, Fence: h.fence}
}

func (t *tracker) acquiringFor(d time.Duration) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int
	for c, f := range t.acquiring {
		if time.Since(f.since) >= d {
			out = append(out, c)
		}
	}
	sort.Ints(out)
	return out
}

// until waits until cond, evaluated under the tracker's lock at every
// event, holds, or ctx ends.
func (t *tracker) until(ctx context.Context, cond func() bool) error {
	for {
		t.mu.Lock()
		ok, changed := cond(), t.changed
		t.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// await waits until cond holds of the view at some event.
func (t *tracker) await(ctx context.Context, cond func(nemesis.View) bool) error {
	return t.until(ctx, func() bool {
		return cond(nemesis.View{Holders: t.holdersLocked(), Acquires: maps.Clone(t.acquires), Releases: maps.Clone(t.releases), Cancelled: maps.Clone(t.cancelled), CancelledAcquires: maps.Clone(t.cancelledAcq), Granted: maps.Clone(t.granted), Exited: maps.Clone(t.exitedSet), Waiting: maps.Clone(t.waiting), Resting: maps.Clone(t.resting), Lost: t.lostLocked(), Stretched: t.stretchedLocked()})
	})
}

// stretchedLocked is View.Stretched: the clients with a stretch in force,
// or sent and not yet taken.
func (t *tracker) stretchedLocked() map[int]string {
	m := map[int]string{}
	for c, a := range t.stretched {
		if a.key != "" {
			m[c] = a.key
		}
	}
	for c, key := range t.asked {
		if key != "" {
			m[c] = key
		}
	}
	return m
}

// ask notes that client was sent a stretch of key ("" when it was sent an
// unstretch, or the stretch was not taken), until its worker says it took
// one.
func (t *tracker) ask(client int, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if key == "" {
		delete(t.asked, client)
		return
	}
	t.asked[client] = key
}

// awaitStretch waits until client has said it took the stretch of key (""
// for none) at or after the history time after, and returns when it said so.
func (t *tracker) awaitStretch(ctx context.Context, client int, key string, after int64) (int64, error) {
	var at int64
	err := t.until(ctx, func() bool {
		a, ok := t.stretched[client]
		at = a.at
		return ok && a.key == key && a.at >= after
	})
	return at, err
}
