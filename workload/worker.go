package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/option"
	"github.com/redis/go-redis/v9"
)

// EventsFD is the file descriptor on which a worker writes its events.
const EventsFD = 3

// RoleEnv is set to "worker" in a worker's environment: the binary re-executes
// itself, and this tells its main (or a test binary's TestMain) to run Main.
const RoleEnv = "LOCKCHAOS_ROLE"

// Main runs one worker process: its Config arrives as the first line of
// standard input, "stop" (or the end of input) on a later line ends the loop,
// and events go to file descriptor 3. It returns the process exit code.
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
	go func() {
		// Any line, or the end of input, asks the worker to finish its
		// current iteration and exit.
		_, _ = in.ReadBytes('\n')
		w.stop.Store(true)
	}()
	w.run()
	return 0
}

type worker struct {
	cfg    Config
	locker locks.Locker
	nodes  []*redis.Client
	res    Resource
	rng    *rand.Rand
	stop   atomic.Bool

	mu  sync.Mutex
	out *os.File
}

func newWorker(cfg Config, out *os.File) (*worker, error) {
	spec, err := locks.Lookup(cfg.Lock)
	if err != nil {
		return nil, err
	}
	opts, err := option.Resolve(cfg.Lock, spec.Options, cfg.Options, cfg.TTL)
	if err != nil {
		return nil, err
	}
	w := &worker{cfg: cfg, out: out, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Client)))}
	for _, addr := range cfg.LockAddrs {
		w.nodes = append(w.nodes, redis.NewClient(clientOptions(addr, cfg.OpTimeout)))
	}
	w.res = Resource{rdb: redis.NewClient(clientOptions(cfg.ResourceAddr, cfg.OpTimeout))}
	w.locker, err = spec.New(locks.Config{
		Nodes:   w.nodes,
		TTL:     cfg.TTL,
		Owner:   cfg.Owner,
		Options: opts,
		Rand:    rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Client)+1<<32)),
	})
	if err != nil {
		w.close()
		return nil, fmt.Errorf("lock %s: %w", cfg.Lock, err)
	}
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
		PoolSize:              4,
		Protocol:              2,
		DisableIdentity:       true,
		ContextTimeoutEnabled: true,
	}
}

func (w *worker) close() {
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
func (w *worker) emit(e history.Event) {
	e.Client = w.cfg.Client
	w.mu.Lock()
	defer w.mu.Unlock()
	e.Time = history.Now()
	if _, err := w.out.Write(append(e.Marshal(), '\n')); err != nil {
		fmt.Fprintf(os.Stderr, "worker %d: coordinator gone (%v): exiting\n", w.cfg.Client, err)
		os.Exit(3)
	}
}

func (w *worker) run() {
	ctx := context.Background()
	for !w.stop.Load() {
		key := KeyName(w.rng.IntN(w.cfg.Keys))
		if lease, ok := w.acquire(ctx, key); ok {
			w.hold(ctx, lease)
		}
		if w.cfg.Think > 0 {
			time.Sleep(time.Duration(w.rng.Int64N(int64(w.cfg.Think) + 1)))
		}
	}
}

// acquire is one acquire operation in the history; in blocking mode it
// spans every retry until the lock is taken or the wait runs out.
func (w *worker) acquire(ctx context.Context, key string) (locks.Lease, bool) {
	w.emit(history.Event{Kind: history.Invoke, F: history.Acquire, Key: key})
	start := time.Now()
	for {
		opCtx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
		lease, err := w.locker.Acquire(opCtx, key)
		cancel()
		switch {
		case err == nil:
			w.emit(history.Event{Kind: history.OK, F: history.Acquire, Key: key, Owner: lease.Owner, Fence: lease.Fence})
			return lease, true
		case !errors.Is(err, locks.ErrNotAcquired):
			w.emit(history.Event{Kind: history.Info, F: history.Acquire, Key: key, Error: err.Error()})
			return locks.Lease{}, false
		}
		left := w.cfg.Wait - time.Since(start)
		if left <= 0 || w.stop.Load() {
			w.emit(history.Event{Kind: history.Fail, F: history.Acquire, Key: key, Error: "not-acquired"})
			return locks.Lease{}, false
		}
		time.Sleep(min(left, w.jitter(w.cfg.Retry)))
	}
}

// jitter spreads retries over [d/2, d] so waiting clients do not march in step.
func (w *worker) jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(w.rng.Int64N(int64(d/2)+1))
}

// hold is the critical section: read the counter, work, write it back plus
// one, then release.
func (w *worker) hold(ctx context.Context, lease locks.Lease) {
	key := lease.Key
	w.emit(history.Event{Kind: history.Invoke, F: history.Read, Key: key})
	v, err := w.res.Read(ctx, key)
	if err != nil {
		w.emit(history.Event{Kind: history.Info, F: history.Read, Key: key, Error: err.Error()})
	} else {
		w.emit(history.Event{Kind: history.OK, F: history.Read, Key: key, Value: history.Int64(v)})
		time.Sleep(w.cfg.Hold)
		if lease.Deadline != 0 && history.Now() > lease.Deadline {
			// The lock's own validity ran out: a correct client stops here.
			w.emit(history.Event{Kind: history.Lost, Key: key, Message: "lease validity ran out before the write"})
		} else {
			w.write(ctx, key, v+1, lease.Fence)
		}
	}
	w.release(ctx, lease)
}

func (w *worker) write(ctx context.Context, key string, v, fence int64) {
	w.emit(history.Event{Kind: history.Invoke, F: history.Write, Key: key, Value: history.Int64(v), Fence: fence})
	err := w.res.Write(ctx, key, v, fence)
	switch {
	case err == nil:
		w.emit(history.Event{Kind: history.OK, F: history.Write, Key: key, Value: history.Int64(v), Fence: fence})
	case errors.Is(err, errStale):
		w.emit(history.Event{Kind: history.Fail, F: history.Write, Key: key, Value: history.Int64(v), Fence: fence, Error: "stale-fence"})
	default:
		w.emit(history.Event{Kind: history.Info, F: history.Write, Key: key, Value: history.Int64(v), Fence: fence, Error: err.Error()})
	}
}

func (w *worker) release(ctx context.Context, lease locks.Lease) {
	w.emit(history.Event{Kind: history.Invoke, F: history.Release, Key: lease.Key})
	opCtx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	err := w.locker.Release(opCtx, lease)
	cancel()
	switch {
	case err == nil:
		w.emit(history.Event{Kind: history.OK, F: history.Release, Key: lease.Key})
	case errors.Is(err, locks.ErrNotHeld):
		w.emit(history.Event{Kind: history.Fail, F: history.Release, Key: lease.Key, Error: history.ErrNotHeld})
	default:
		w.emit(history.Event{Kind: history.Info, F: history.Release, Key: lease.Key, Error: err.Error()})
	}
}
