package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/option"
)

// Redsync is github.com/go-redsync/redsync/v4, the Go Redlock most projects
// use, over N nodes through its go-redis v9 pool, with its own defaults
// except where an option says otherwise. The expiry follows --ttl unless set.
// The lease's Deadline is the library's Until(): the validity it computed.
type Redsync struct {
	cfg  Config
	rs   *redsync.Redsync
	opts []redsync.Option
	o    RedsyncOptions
}

// RedsyncOptions are Redsync's options.
type RedsyncOptions struct {
	Expiry time.Duration `opt:"expiry" default:"1ttl" help:"the lock's expiry (redsync's own default is 8s)"`
	Tries  PositiveCount `opt:"tries" default:"32" help:"blocking acquire: attempts (redsync's default 32)"`
	// RetryDelay is nil for redsync's own random delay.
	RetryDelay    *time.Duration  `opt:"retry-delay" default:"" help:"blocking acquire: fixed delay between attempts (default: redsync's random 50-250ms)"`
	DriftFactor   option.Fraction `opt:"drift-factor" default:"0.01" help:"clock drift factor (redsync's default 0.01)"`
	TimeoutFactor option.Fraction `opt:"timeout-factor" default:"0.05" help:"each node's request times out after this fraction of the expiry (redsync's default 0.05)"`
	SetNXOnExtend bool            `opt:"setnx-on-extend" default:"false" help:"WithSetNXOnExtend: an extend re-creates an expired lock (hiding that someone else held it)"`
}

// Validate implements option.Validator.
func (o *RedsyncOptions) Validate() error {
	if o.Expiry < time.Millisecond {
		return fmt.Errorf("expiry: want at least 1ms, not %v", o.Expiry)
	}
	return nil
}

func init() {
	Register(Spec{
		Name:        "redsync",
		Description: "github.com/go-redsync/redsync/v4 (Redlock in Go) over N nodes; Extend renews; optional WithSetNXOnExtend",
		Library:     "Go, go-redsync/redsync 4.18.1",
		Weakness:    "as `redlock`; `setnx-on-extend` re-creates an expired lock and hides that someone else held it",
		Nodes:       5,
		Quorum:      true,
		Options:     RedsyncOptions{},
		New:         newRedsync,
	})
}

func newRedsync(cfg Config) (Locker, error) {
	o := *cfg.Options.(*RedsyncOptions)
	opts := []redsync.Option{redsync.WithExpiry(o.Expiry), redsync.WithTries(int(o.Tries)),
		redsync.WithDriftFactor(float64(o.DriftFactor)), redsync.WithTimeoutFactor(float64(o.TimeoutFactor))}
	if o.RetryDelay != nil {
		opts = append(opts, redsync.WithRetryDelay(*o.RetryDelay))
	}
	if o.SetNXOnExtend {
		opts = append(opts, redsync.WithSetNXOnExtend())
	}
	pools := make([]rsredis.Pool, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		pools[i] = goredis.NewPool(n)
	}
	return &Redsync{cfg: cfg, rs: redsync.New(pools...), opts: opts, o: o}, nil
}

// Lease is redsync's expiry (the TTL unless the expiry option sets it).
func (l *Redsync) Lease() time.Duration { return l.o.Expiry }

// NodeTimeout is redsync's per-node timeout: the expiry times its timeout
// factor.
func (l *Redsync) NodeTimeout() time.Duration {
	return time.Duration(float64(l.o.Expiry) * float64(l.o.TimeoutFactor))
}

// Acquire is one attempt (TryLockContext).
func (l *Redsync) Acquire(ctx context.Context, key string) (Lease, error) {
	m := l.rs.NewMutex(key, l.opts...)
	if err := m.TryLockContext(ctx); err != nil {
		return Lease{}, redsyncAcquireError(err)
	}
	return l.lease(key, m), nil
}

// AcquireWait is redsync's own retry loop (LockContext: tries attempts with
// its retry delay), cut off when wait has passed.
func (l *Redsync) AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	m := l.rs.NewMutex(key, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		return Lease{}, redsyncAcquireError(err)
	}
	return l.lease(key, m), nil
}

func (l *Redsync) lease(key string, m *redsync.Mutex) Lease {
	return Lease{Key: key, Owner: l.cfg.Owner, Token: m.Value(), Deadline: monotonicDeadline(m.Until()), Data: m}
}

// monotonicDeadline maps a time.Time taken from time.Now (which carries a
// monotonic reading) to CLOCK_MONOTONIC nanoseconds.
func monotonicDeadline(t time.Time) int64 {
	return history.Now() + int64(time.Until(t))
}

func (l *Redsync) Release(ctx context.Context, lease Lease) error {
	m := lease.Data.(*redsync.Mutex)
	ok, err := m.UnlockContext(ctx)
	if ok {
		return nil
	}
	return redsyncHeldError("release", err)
}

// Renew is redsync's Extend.
func (l *Redsync) Renew(ctx context.Context, lease Lease) (Lease, error) {
	m := lease.Data.(*redsync.Mutex)
	ok, err := m.ExtendContext(ctx)
	if ok {
		lease.Deadline = monotonicDeadline(m.Until())
		return lease, nil
	}
	if errors.Is(err, redsync.ErrExtendFailed) {
		// A majority extended it, but too slowly to trust: redsync keeps
		// the old Until, and so do we.
		return lease, fmt.Errorf("redsync extend: %w", err)
	}
	return lease, redsyncHeldError("extend", err)
}

// redsyncAcquireError maps redsync's answer to a failed lock to the
// contract. redsync counts per node: ErrNodeTaken (the key was there),
// RedisError (no answer), and ErrTaken when a majority was taken. It undoes a
// failed attempt on every node before answering, and ignores the errors of
// that undo.
func redsyncAcquireError(err error) error {
	var (
		taken     *redsync.ErrTaken
		nodeTaken *redsync.ErrNodeTaken
		redisErr  *redsync.RedisError
	)
	switch {
	case errors.As(err, &taken):
		// A majority answered that someone else holds it.
		return fmt.Errorf("%w: redsync: %v", ErrNotAcquired, err)
	case errors.As(err, &redisErr):
		// Some node did not answer: its SET may have taken effect.
		return fmt.Errorf("redsync: %w", err)
	case errors.As(err, &nodeTaken), errors.Is(err, redsync.ErrFailed):
		// Every node answered and there was no majority, or there was one
		// but it came too late (ErrFailed). ErrFailed is also what redsync
		// answers when the context ends during its retry delay, hiding the
		// last attempt's error.
		return fmt.Errorf("%w: redsync: %v", ErrNotAcquired, err)
	}
	return fmt.Errorf("redsync: %w", err)
}

// redsyncHeldError maps a failed unlock or extend: nodes that answered that
// the key is gone (ErrLockAlreadyExpired) or someone else's (ErrNodeTaken,
// ErrTaken) mean the lease was lost; a node that did not answer leaves it
// unknown.
func redsyncHeldError(op string, err error) error {
	var (
		taken     *redsync.ErrTaken
		nodeTaken *redsync.ErrNodeTaken
		redisErr  *redsync.RedisError
	)
	switch {
	case errors.As(err, &taken):
		return fmt.Errorf("%w: redsync %s: %v", ErrNotHeld, op, err)
	case errors.As(err, &redisErr):
		return fmt.Errorf("redsync %s: %w", op, err)
	case errors.As(err, &nodeTaken), errors.Is(err, redsync.ErrLockAlreadyExpired):
		return fmt.Errorf("%w: redsync %s: %v", ErrNotHeld, op, err)
	case err == nil:
		return fmt.Errorf("redsync %s: no majority and no error", op)
	}
	return fmt.Errorf("redsync %s: %w", op, err)
}
