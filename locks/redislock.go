package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockchaos/lockchaos/option"
)

// RedisLock is github.com/bsm/redislock: a token lock on one node (Obtain,
// Refresh, Release, each one Lua script), whose blocking acquire follows one
// of the library's retry strategies.
type RedisLock struct {
	cfg    Config
	client *redislock.Client
	// strategy makes a fresh retry strategy for each blocking acquire: the
	// library's strategies count their attempts.
	strategy func() redislock.RetryStrategy
}

func init() {
	Register(Spec{
		Name:        "redislock",
		Description: "github.com/bsm/redislock: Obtain / Refresh / Release on one node, blocking acquires use its retry strategies",
		Nodes:       1,
		Options: []option.Spec{
			{Key: "retry", Default: "linear", Help: "blocking acquire's strategy: linear (LinearBackoff), exponential (ExponentialBackoff) or none (NoRetry)"},
			{Key: "backoff", Default: "0.1ttl", Help: "linear: the interval; exponential: the longest wait"},
			{Key: "min-backoff", Default: "16ms", Help: "exponential: the shortest wait"},
			{Key: "limit", Default: "0", Help: "LimitRetry: at most this many retries (0: until the wait runs out)"},
		},
		New: newRedisLock,
	})
}

func newRedisLock(cfg Config) (Locker, error) {
	backoff, err := cfg.Options.Duration("backoff")
	if err != nil {
		return nil, err
	}
	minBackoff, err := cfg.Options.Duration("min-backoff")
	if err != nil {
		return nil, err
	}
	limit, err := cfg.Options.Int("limit")
	if err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("option redislock.limit=%d: want 0 or more", limit)
	}
	var base func() redislock.RetryStrategy
	switch s := cfg.Options.String("retry"); s {
	case "linear":
		if backoff <= 0 {
			return nil, errors.New("option redislock.backoff: a linear strategy needs a positive interval")
		}
		base = func() redislock.RetryStrategy { return redislock.LinearBackoff(backoff) }
	case "exponential":
		base = func() redislock.RetryStrategy { return redislock.ExponentialBackoff(minBackoff, backoff) }
	case "none":
		base = redislock.NoRetry
	default:
		return nil, fmt.Errorf("option redislock.retry=%q: want linear, exponential or none", s)
	}
	l := &RedisLock{cfg: cfg, strategy: base}
	if limit > 0 {
		l.strategy = func() redislock.RetryStrategy { return redislock.LimitRetry(base(), limit) }
	}
	if len(cfg.Nodes) > 0 {
		l.client = redislock.New(cfg.Nodes[0])
	}
	return l, nil
}

// Acquire is one Obtain without retries.
func (l *RedisLock) Acquire(ctx context.Context, key string) (Lease, error) {
	return l.obtain(ctx, key, redislock.NoRetry())
}

// AcquireWait is Obtain with the configured strategy until wait has passed.
func (l *RedisLock) AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return l.obtain(ctx, key, l.strategy())
}

// obtain maps redislock's answers: ErrNotObtained (also when joined with the
// context's error: the wait ended between two attempts) means the last
// attempt found the lock held; redislock returns any other error as soon as
// an attempt gets it, and that attempt's outcome is unknown.
func (l *RedisLock) obtain(ctx context.Context, key string, retry redislock.RetryStrategy) (Lease, error) {
	lock, err := l.client.Obtain(ctx, key, l.cfg.TTL, &redislock.Options{RetryStrategy: retry})
	if errors.Is(err, redislock.ErrNotObtained) {
		return Lease{}, fmt.Errorf("%w: %v", ErrNotAcquired, err)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("redislock obtain: %w", err)
	}
	return Lease{Key: key, Owner: l.cfg.Owner, Token: lock.Token(), Data: lock}, nil
}

func (l *RedisLock) Release(ctx context.Context, lease Lease) error {
	err := lease.Data.(*redislock.Lock).Release(ctx)
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return ErrNotHeld
	}
	if err != nil {
		return fmt.Errorf("redislock release: %w", err)
	}
	return nil
}

// Renew is Refresh by the TTL, once: the worker's watchdog decides when to
// try again.
func (l *RedisLock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	err := lease.Data.(*redislock.Lock).Refresh(ctx, l.cfg.TTL, &redislock.Options{RetryStrategy: redislock.NoRetry()})
	if errors.Is(err, redislock.ErrNotObtained) {
		return lease, ErrNotHeld
	}
	if err != nil {
		return lease, fmt.Errorf("redislock refresh: %w", err)
	}
	return lease, nil
}
