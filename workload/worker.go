package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/redis/go-redis/v9"
)

// EventsFD is the file descriptor on which a worker writes its events.
const EventsFD = 3

// RoleEnv is set to "worker" in a worker's environment: the binary re-executes
// itself, and this tells its main (or a test binary's TestMain) to run Main.
const RoleEnv = "LOCKCHAOS_ROLE"

// ProfileEnv, when set in a worker's environment, makes it write a CPU
// profile of its whole life to <value>-client<N>.pprof (make bench's
// --cpuprofile).
const ProfileEnv = "LOCKCHAOS_WORKER_CPUPROFILE"

// Main runs one worker process: its Config arrives as the first line of
// standard input and control lines follow (control.go); events go to file
// descriptor 3. It returns the process exit code.
func Main() int {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker: read config: %v\n", err)
		return 2
	}
	var cfg Config
	if err := json.Unmarshal(line, &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "worker: parse config: %v\n", err)
		return 2
	}
	w, err := newWorker(cfg, os.NewFile(EventsFD, "events"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker %d: %v\n", cfg.Client, err)
		return 2
	}
	defer w.close()
	if prefix := os.Getenv(ProfileEnv); prefix != "" {
		if f, err := os.Create(fmt.Sprintf("%s-client%d.pprof", prefix, cfg.Client)); err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	w.emit(history.Event{Kind: Ready})
	if !w.control(in) {
		return 0 // stopped before the workload began
	}
	done := make(chan struct{})
	defer close(done)
	go WatchStalls(StallThreshold(cfg.TTL), done, func(e history.Event) { w.emit(e) })
	w.run()
	return 0
}

type worker struct {
	cfg    Config
	locker locks.Locker
	// renewer is the locker's Renewer when the run asked for renewals.
	renewer locks.Renewer
	// waiter is the locker's own way to wait in a blocking acquire, if any.
	waiter locks.Waiter
	nodes  []*redis.Client
	res    Resource
	rng    *rand.Rand
	stop   atomic.Bool
	// stopped is closed with stop set: it cuts a hold short (a run ends
	// when asked, whatever --hold says).
	stopped chan struct{}
	// stretch is what a nemesis asked for: holds of one key stay in their
	// critical section (control.go).
	stretch *stretch
	// cancelNext, when set, is a nemesis's request to cancel the next
	// release in flight, so long after its invoke (control.go).
	cancelNext atomic.Pointer[time.Duration]
	// cancelAcquire is the same for the next acquire.
	cancelAcquire atomic.Pointer[time.Duration]
	log           io.Writer

	// mu serialises every event: the main loop and the watchdog goroutines
	// of a hold emit through it, and the state of the hold in progress
	// (current lease, lost, ended) changes only under it, so that whether an
	// event may still be emitted and emitting it are one step.
	mu  sync.Mutex
	out *os.File
	// pending holds encoded events not yet written to out (see emitThen),
	// in the order they were emitted; its buffer is reused.
	pending []byte
}

func newWorker(cfg Config, out *os.File) (*worker, error) {
	var spec locks.Spec
	var err error
	if cfg.Adapter != nil {
		spec = cfg.Adapter.Spec()
		locks.AdapterDied = func(name string, err error) {
			fmt.Fprintf(os.Stderr, "worker %d: its adapter %s exited (%v): the client cannot go on\n", cfg.Client, name, err)
			os.Exit(4)
		}
	} else if spec, err = locks.Lookup(cfg.Lock); err != nil {
		return nil, err
	}
	opts, _, err := spec.Decode(cfg.Options, cfg.TTL)
	if err != nil {
		return nil, err
	}
	w := &worker{cfg: cfg, out: out, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Client))), stretch: newStretch(), log: os.Stderr, stopped: make(chan struct{})}
	if spec.Store == "redis" {
		for _, addr := range cfg.LockAddrs {
			w.nodes = append(w.nodes, redis.NewClient(clientOptions(addr, cfg.OpTimeout)))
		}
	}
	w.res = Resource{rdb: redis.NewClient(clientOptions(cfg.ResourceAddr, cfg.OpTimeout))}
	w.locker, err = spec.New(locks.Config{
		Nodes:     w.nodes,
		Addrs:     cfg.LockAddrs,
		Sentinels: cfg.Sentinels,
		StoreInit: cfg.StoreInit,
		OpTimeout: cfg.OpTimeout,
		TTL:       cfg.TTL,
		Owner:     cfg.Owner,
		Options:   opts,
		Rand:      rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Client)+1<<32)),
		Client:    cfg.Client,
		Seed:      cfg.Seed,
		LogPath:   cfg.AdapterLog,
		Env:       cfg.AdapterEnv,
	})
	if err != nil {
		w.close()
		return nil, fmt.Errorf("lock %s: %w", cfg.Lock, err)
	}
	// Before the worker says it is ready: a JVM's start is not the run's.
	if s, ok := w.locker.(locks.Starter); ok {
		if err := s.Start(context.Background()); err != nil {
			w.close()
			return nil, fmt.Errorf("lock %s: %w", cfg.Lock, err)
		}
	}
	if cfg.Renew {
		r, ok := w.locker.(locks.Renewer)
		if !ok {
			w.close()
			return nil, fmt.Errorf("lock %s cannot renew a lease (no locks.Renewer)", cfg.Lock)
		}
		w.renewer = r
	}
	w.waiter, _ = w.locker.(locks.Waiter)
	return w, nil
}

// clientOptions keeps every operation honest: no hidden retries (a retried
// SET NX can report "not acquired" for a key it set itself), and a deadline
// so a cut link gives an indeterminate result instead of hanging.
func clientOptions(addr string, timeout time.Duration) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		MaxRetries:            -1,
		DialerRetries:         1, // go-redis dials 5 times by default: 5 timeouts and 4 pauses behind one op
		PoolSize:              4,
		Protocol:              2,
		DisableIdentity:       true,
		ContextTimeoutEnabled: true,
	}
}

func (w *worker) close() {
	if c, ok := w.locker.(io.Closer); ok {
		c.Close()
	}
	for _, n := range w.nodes {
		n.Close()
	}
	if w.res.rdb != nil {
		w.res.rdb.Close()
	}
}

// emit records an event with the current CLOCK_MONOTONIC time. It is called
// before the step it describes takes effect (an invoke before the request, a
// completion before the client acts on it), so a worker killed at any point
// never did something its history does not show. If the coordinator is gone
// nothing can be recorded any more, and the worker stops at once.
//
// emit writes the event, after any that emitThen left pending, to the
// pipe before it returns: a byte in the pipe is the coordinator's even if
// this process is killed (SIGKILL) the next instant.
func (w *worker) emit(e history.Event) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.emitLocked(e)
}

// emitLocked is emit with w.mu held.
func (w *worker) emitLocked(e history.Event) int64 {
	t := w.emitThenLocked(e)
	w.flushLocked()
	return t
}

// emitThen records e like emit, but leaves it in memory, to go to the
// pipe in one write with the events that follow it: it saves a system call
// (and a wake-up of the coordinator) per event, most of the harness's own
// cost per cycle. An event in memory dies with the process, so emitThen is
// only for an event after which this goroutine emits another (with emit)
// before it does anything else that depends on it: before any request to
// a node, any wait (a sleep, a timer, a stretch, a watchdog) and any exit.
// No event is therefore ever pending while the client acts on the world or
// idles, and a kill loses only what it would have lost a few microseconds
// earlier. Every event of another goroutine (a watchdog's lost, a stall, a
// stretch) is written through, after what is pending, keeping the order.
// The call sites say why each one qualifies.
func (w *worker) emitThen(e history.Event) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.emitThenLocked(e)
}

// emitThenLocked stamps e with the current time, appends it to pending and
// returns the time.
func (w *worker) emitThenLocked(e history.Event) int64 {
	e.Client = w.cfg.Client
	e.Time = history.Now()
	w.pending = append(e.AppendJSON(w.pending), '\n')
	return e.Time
}

// flush writes whatever emitThen left pending.
func (w *worker) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

func (w *worker) flushLocked() {
	if len(w.pending) == 0 {
		return
	}
	// One write of at most two events (emitThen never leaves more than
	// one pending): well under PIPE_BUF, so the pipe takes it whole and a
	// kill never leaves half a line.
	if _, err := w.out.Write(w.pending); err != nil {
		fmt.Fprintf(os.Stderr, "worker %d: coordinator gone (%v): exiting\n", w.cfg.Client, err)
		os.Exit(3)
	}
	w.pending = w.pending[:0]
}

func (w *worker) run() {
	ctx := context.Background()
	// The release's completion that holdThen leaves pending goes out with
	// the next acquire's invoke, or before the think time, or at the end.
	defer w.flush()
	for !w.stop.Load() {
		w.rest()
		key := KeyName(w.rng.IntN(w.cfg.Keys))
		if lease, invoked, ok := w.acquire(ctx, key); ok {
			w.holdThen(ctx, lease, invoked)
		}
		if w.cfg.Think > 0 {
			w.flush()
			time.Sleep(time.Duration(w.rng.Int64N(int64(w.cfg.Think) + 1)))
		}
	}
}

// acquire is one acquire operation in the history; in blocking mode it
// spans every retry until the lock is taken or the wait runs out. A
// nemesis's cancel (cancelAcquire) cuts the whole of it.
func (w *worker) acquire(ctx context.Context, key string) (locks.Lease, int64, bool) {
	invoke := history.Event{Kind: history.Invoke, F: history.Acquire, Key: key}
	after := w.cancelAcquire.Swap(nil)
	if after != nil {
		invoke.Message = fmt.Sprintf("%s%v", CancelAsked, *after)
	}
	invoked := w.emit(invoke)
	cctx, stop := cancellable(ctx, after)
	defer stop()
	if w.cfg.Wait > 0 && w.waiter != nil {
		opCtx, cancel := context.WithTimeout(cctx, w.cfg.Wait+w.cfg.OpTimeout)
		lease, err := w.waiter.AcquireWait(opCtx, key, w.cfg.Wait)
		cancel()
		lease, ok := w.acquired(ctx, cctx, key, lease, err)
		return lease, invoked, ok
	}
	start := time.Now()
	for {
		opCtx, cancel := context.WithTimeout(cctx, w.cfg.OpTimeout)
		lease, err := w.locker.Acquire(opCtx, key)
		cancel()
		left := w.cfg.Wait - time.Since(start)
		if !errors.Is(err, locks.ErrNotAcquired) || left <= 0 || w.stop.Load() {
			lease, ok := w.acquired(ctx, cctx, key, lease, err)
			return lease, invoked, ok
		}
		select {
		case <-time.After(min(left, w.jitter(w.cfg.Retry))):
		case <-cctx.Done():
			// Cancelled between two tries: the caller's own loop stops.
			lease, ok := w.acquired(ctx, cctx, key, locks.Lease{}, context.Cause(cctx))
			return lease, invoked, ok
		}
	}
}

// acquired records the answer to an acquire whose call ran under cctx.
func (w *worker) acquired(ctx, cctx context.Context, key string, lease locks.Lease, err error) (locks.Lease, bool) {
	switch {
	case err == nil:
		// The ok may wait for the next event: a granted acquire is always
		// followed by a hold, whose first step emits (a re-entry's invoke,
		// the read's invoke, or, if the client already learned the lease
		// is gone, its lost — written at once by markLost — and the
		// release's invoke) before any request or wait. So the ok is in
		// the pipe before the client touches the resource or the lock
		// again: a worker killed with it still in memory did nothing with
		// the lock, as it would have if killed just before the ok.
		w.emitThen(history.Event{Kind: history.OK, F: history.Acquire, Key: key, Owner: lease.Owner, Token: lease.Token, Fence: lease.Fence})
		return lease, true
	case cancelledByNemesis(cctx) && !errors.Is(err, locks.ErrNotAcquired):
		// (A refusal is the lock's answer: it finished first.) Its
		// outcome is unknown. A careful caller gives back what it may
		// have taken, when the lock says what that is (an adapter's
		// cancelled answer with a token); else the lease is the lock's to
		// end (it expires, or its session does).
		w.emit(history.Event{Kind: history.Info, F: history.Acquire, Key: key, Error: history.ErrCancelled + ": " + err.Error()})
		if lease.Token != "" {
			w.release(ctx, lease, nil)
		}
	case errors.Is(err, locks.ErrNotAcquired):
		e := history.Event{Kind: history.Fail, F: history.Acquire, Key: key, Error: "not-acquired"}
		if err != locks.ErrNotAcquired {
			e.Message = err.Error()
		}
		w.emit(e)
	default:
		w.emit(history.Event{Kind: history.Info, F: history.Acquire, Key: key, Error: err.Error()})
	}
	return locks.Lease{}, false
}

// cancellable is ctx for a lock's call that a nemesis asked to cancel
// (after not nil): cut at once (after 0, before the call begins) or after
// so long. stop ends its timer; ask cancelledByNemesis before it.
func cancellable(ctx context.Context, after *time.Duration) (context.Context, func()) {
	cctx, cancelCall := context.WithCancelCause(ctx)
	var t *time.Timer
	switch {
	case after == nil:
	case *after <= 0:
		cancelCall(errCancelledByNemesis)
	default:
		t = time.AfterFunc(*after, func() { cancelCall(errCancelledByNemesis) })
	}
	return cctx, func() {
		if t != nil {
			t.Stop()
		}
		cancelCall(nil)
	}
}

// cancelledByNemesis says whether a nemesis cut ctx (cancellable).
func cancelledByNemesis(ctx context.Context) bool {
	return context.Cause(ctx) == errCancelledByNemesis
}

// jitter spreads retries over [d/2, d] so waiting clients do not march in step.
func (w *worker) jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(w.rng.Int64N(int64(d/2)+1))
}

// heldLock is the hold in progress, shared by the main loop and the hold's
// watchdogs. Its fields change only under worker.mu.
type heldLock struct {
	key     string
	invoked int64       // when the acquire that began the hold was invoked
	lease   locks.Lease // the latest: a renewal may move its deadline
	// lost: the client learned it lost the lock; it touches the resource no
	// more. ended: the outermost release was invoked; no lost may follow.
	lost, ended bool
	lostCh      chan struct{} // closed with lost
	cancel      context.CancelFunc
	watchers    sync.WaitGroup
	// watched: watchers were started; the end of the hold waits for them.
	watched bool
}

// hold is the critical section: read the counter, work, write it back plus
// one, then release. With probability Reentry it acquires the lock once more
// first, and releases that inner level before the outer one.
func (w *worker) hold(ctx context.Context, lease locks.Lease, invoked int64) {
	w.holdThen(ctx, lease, invoked)
	w.flush()
}

// holdThen is hold, leaving the release's completion pending (emitThen):
// the caller emits or flushes before it does anything else.
func (w *worker) holdThen(ctx context.Context, lease locks.Lease, invoked int64) {
	h := w.watch(lease, invoked)
	var inner *locks.Lease
	if w.cfg.Reentry > 0 && w.rng.Float64() < w.cfg.Reentry && !w.isLost(h) {
		if l, _, ok := w.acquire(ctx, lease.Key); ok {
			inner = &l
		}
	}
	w.critical(ctx, h)
	if inner != nil {
		w.release(ctx, *inner, nil)
	}
	h.cancel()
	if h.watched {
		// The write's completion must not sit in memory while this
		// goroutine waits (a renewal may take up to the op timeout).
		w.flush()
	}
	h.watchers.Wait() // no renewal may race the release
	w.releaseThen(ctx, w.current(h), h)
}

// watch starts the hold's watchdogs: a renewal every TTL/3 when the run asked
// for it, a listener for the lock's own news that the lease is gone, and,
// for a lease with a validity deadline, a timer that says so when it runs out.
func (w *worker) watch(lease locks.Lease, invoked int64) *heldLock {
	ctx, cancel := context.WithCancel(context.Background())
	h := &heldLock{key: lease.Key, invoked: invoked, lease: lease, lostCh: make(chan struct{}), cancel: cancel,
		watched: lease.Deadline != 0 || w.renewer != nil || lease.Lost != nil}
	if lease.Deadline != 0 {
		h.watchers.Add(1)
		go func() {
			defer h.watchers.Done()
			w.deadlineLoop(ctx, h)
		}()
	}
	if w.renewer != nil {
		h.watchers.Add(1)
		go func() {
			defer h.watchers.Done()
			w.renewLoop(ctx, h)
		}()
	}
	if lease.Lost != nil {
		h.watchers.Add(1)
		go func() {
			defer h.watchers.Done()
			select {
			case <-ctx.Done():
			case <-lease.Lost:
				w.markLost(h, "the lock's watchdog found the lease gone")
			}
		}()
	}
	return h
}

// renewLoop renews h's lease every TTL/3 until the hold ends or a renewal
// says the lease is gone. A renewal that gets no answer is tried again at
// the next tick: the lease may still be there.
func (w *worker) renewLoop(ctx context.Context, h *heldLock) {
	t := time.NewTicker(max(w.cfg.TTL/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.flush() // nothing pending while a request is out, whoever sends it
		opCtx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
		next, err := w.renewer.Renew(opCtx, w.current(h))
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			w.mu.Lock()
			h.lease = next
			w.mu.Unlock()
		case errors.Is(err, locks.ErrNotHeld):
			w.markLost(h, "renewal found the lease gone: "+err.Error())
			return
		default:
			fmt.Fprintf(os.Stderr, "worker %d: renewal of %s got no answer, trying again: %v\n", w.cfg.Client, h.key, err)
		}
	}
}

// deadlineLoop marks h lost when its lease's validity deadline passes, as a
// Redlock client that checks its validity would learn it: the client stops
// believing it holds the lock at that instant, not at its next step. A
// renewal moves the deadline; the loop follows it.
func (w *worker) deadlineLoop(ctx context.Context, h *heldLock) {
	for {
		d := w.current(h).Deadline
		t := time.NewTimer(time.Duration(d - history.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		w.mu.Lock()
		if h.lease.Deadline == d {
			// The deadline is a hard limit: any lateness is a stall that
			// kept the client believing it held the lock past it.
			if late := history.Now() - d; late >= time.Millisecond.Nanoseconds() {
				w.emitLocked(history.Event{Kind: history.Stall, Key: h.key, StallNs: late, Message: "the validity timer fired late"})
			}
			w.markLostLocked(h, "lease validity ran out")
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

func (w *worker) current(h *heldLock) locks.Lease {
	w.mu.Lock()
	defer w.mu.Unlock()
	return h.lease
}

func (w *worker) isLost(h *heldLock) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return h.lost
}

// markLost records, once, the instant the client learned it lost h's lock;
// never after the hold's release was invoked.
func (w *worker) markLost(h *heldLock, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.markLostLocked(h, why)
}

func (w *worker) markLostLocked(h *heldLock, why string) {
	if h.lost || h.ended {
		return
	}
	h.lost = true
	close(h.lostCh)
	w.emitLocked(history.Event{Kind: history.Lost, Key: h.key, Message: why})
}

// emitHeld emits the invoke of a resource operation only while the client
// still believes it holds h: not after it learned the lease was lost, and
// not past the lease's deadline (which it records as the moment it learned
// that). It reports whether the operation may go ahead.
func (w *worker) emitHeld(h *heldLock, e history.Event) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h.lost {
		return false
	}
	if d := h.lease.Deadline; d != 0 && history.Now() > d {
		w.markLostLocked(h, "lease validity ran out before the "+e.F)
		return false
	}
	w.emitLocked(e)
	return true
}

// critical is the read-modify-write on the resource. A fenced lease presents
// its token on the read as well as on the write; a rejected read ends the
// critical section without a write.
func (w *worker) critical(ctx context.Context, h *heldLock) {
	key, fence := h.key, w.current(h).Fence
	if !w.emitHeld(h, history.Event{Kind: history.Invoke, F: history.Read, Key: key, Fence: fence}) {
		return
	}
	v, err := w.res.Read(ctx, key, fence)
	switch {
	case errors.Is(err, errStale):
		w.emit(history.Event{Kind: history.Fail, F: history.Read, Key: key, Fence: fence, Error: "stale-fence"})
		return
	case err != nil:
		w.emit(history.Event{Kind: history.Info, F: history.Read, Key: key, Fence: fence, Error: err.Error()})
		return
	}
	// With no hold time the read's ok may wait for the next event: what
	// follows is the write's invoke, or a stall, a stretch or (having
	// learned the lease is gone) a lost, all written at once, before any
	// request or wait; the zero timer below is no wait on anything outside.
	ok := history.Event{Kind: history.OK, F: history.Read, Key: key, Value: history.Int64(v), Fence: fence}
	var read int64
	if w.cfg.Hold <= 0 {
		read = w.emitThen(ok)
	} else {
		read = w.emit(ok)
	}
	t := time.NewTimer(w.cfg.Hold)
	select {
	case <-t.C:
	case <-h.lostCh:
		t.Stop()
		return
	case <-w.stopped: // the run is ending: the work is cut short, the write still made
		t.Stop()
	}
	// A hold that overran its planned time tells of a stall of this
	// process, the coordinator's ticker of its own.
	if late := history.Now() - read - w.cfg.Hold.Nanoseconds(); late >= StallThreshold(w.cfg.TTL).Nanoseconds() {
		w.emit(history.Event{Kind: history.Stall, Key: key, StallNs: late, Message: "the hold's timer fired late"})
	}
	if !w.stretchHold(h) { // a nemesis keeps the client inside (control.go)
		return
	}
	w.write(ctx, h, key, v+1, fence)
}

func (w *worker) write(ctx context.Context, h *heldLock, key string, v, fence int64) {
	if !w.emitHeld(h, history.Event{Kind: history.Invoke, F: history.Write, Key: key, Value: history.Int64(v), Fence: fence}) {
		return
	}
	err := w.res.Write(ctx, key, v, fence)
	// The write's completion may wait for the next event: critical returns
	// to holdThen, which emits an inner release's invoke or flushes before
	// it waits for the watchdogs, then emits the release's invoke, before
	// the release's request. The counter's new value is on the node, but
	// the client does nothing more before its completion is in the pipe.
	switch {
	case err == nil:
		w.emitThen(history.Event{Kind: history.OK, F: history.Write, Key: key, Value: history.Int64(v), Fence: fence})
	case errors.Is(err, errStale):
		w.emitThen(history.Event{Kind: history.Fail, F: history.Write, Key: key, Value: history.Int64(v), Fence: fence, Error: "stale-fence"})
	default:
		w.emitThen(history.Event{Kind: history.Info, F: history.Write, Key: key, Value: history.Int64(v), Fence: fence, Error: err.Error()})
	}
}

// release gives lease back. With h (the outermost release of a hold), its
// invoke also ends the hold: from then on no lost can be recorded for it.
func (w *worker) release(ctx context.Context, lease locks.Lease, h *heldLock) {
	w.releaseThen(ctx, lease, h)
	w.flush()
}

// releaseThen is release, leaving its completion pending (emitThen): the
// caller emits or flushes before it does anything else. holdThen uses it
// for the outermost release, whose completion goes out with the next
// acquire's invoke (run), or before the think time or the end.
func (w *worker) releaseThen(ctx context.Context, lease locks.Lease, h *heldLock) {
	invoke := history.Event{Kind: history.Invoke, F: history.Release, Key: lease.Key}
	after := w.cancelNext.Swap(nil)
	if after != nil {
		invoke.Message = fmt.Sprintf("%s%v", CancelAsked, *after)
	}
	if h != nil {
		w.mu.Lock()
		h.ended = true
		w.emitLocked(invoke)
		w.mu.Unlock()
	} else {
		w.emit(invoke)
	}
	// A nemesis cancels this release in flight, the way a caller does:
	// the lock's call gets a cancelled context (an adapter is sent a
	// cancel request, and cancels it its language's way).
	opCtx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	cctx, stop := cancellable(opCtx, after)
	err := w.locker.Release(cctx, lease)
	cancelled := err != nil && cancelledByNemesis(cctx)
	stop()
	cancel()
	switch {
	case cancelled:
		// Its outcome is unknown, and a careful caller releases again:
		// whether the lock still lets it is what the cancel tested.
		w.emitThen(history.Event{Kind: history.Info, F: history.Release, Key: lease.Key, Error: history.ErrCancelled + ": " + err.Error()})
		w.releaseThen(ctx, lease, nil)
	case err == nil:
		w.emitThen(history.Event{Kind: history.OK, F: history.Release, Key: lease.Key})
	case errors.Is(err, locks.ErrNotHeld):
		w.emitThen(history.Event{Kind: history.Fail, F: history.Release, Key: lease.Key, Error: history.ErrNotHeld})
	default:
		w.emitThen(history.Event{Kind: history.Info, F: history.Release, Key: lease.Key, Error: err.Error()})
	}
}
