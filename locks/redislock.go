package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
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

// RedisLockOptions are RedisLock's options.
type RedisLockOptions struct {
	Retry      string        `opt:"retry" default:"linear" oneof:"linear,exponential,none" help:"blocking acquire's strategy: linear (LinearBackoff), exponential (ExponentialBackoff) or none (NoRetry)"`
	Backoff    time.Duration `opt:"backoff" default:"0.1ttl" help:"linear: the interval; exponential: the longest wait"`
	MinBackoff time.Duration `opt:"min-backoff" default:"16ms" help:"exponential: the shortest wait"`
	Limit      Count         `opt:"limit" default:"0" help:"LimitRetry: at most this many retries (0: until the wait runs out)"`
}

// Validate implements option.Validator.
func (o *RedisLockOptions) Validate() error {
	if o.Retry == "linear" && o.Backoff <= 0 {
		return errors.New("backoff: a linear strategy needs a positive interval")
	}
	return nil
}

func init() {
	Register(Spec{
		Name:        "redislock",
		Description: "github.com/bsm/redislock: Obtain / Refresh / Release on one node, blocking acquires use its retry strategies",
		Library:     "Go, bsm/redislock 0.10.0",
		Weakness:    "as `token-lua`",
		Nodes:       1,
		Options:     RedisLockOptions{},
		New:         newRedisLock,
	})
}

func newRedisLock(cfg Config) (Locker, error) {
	o := *cfg.Options.(*RedisLockOptions)
	var base func() redislock.RetryStrategy
	switch o.Retry {
	case "linear":
		base = func() redislock.RetryStrategy { return redislock.LinearBackoff(o.Backoff) }
	case "exponential":
		base = func() redislock.RetryStrategy { return redislock.ExponentialBackoff(o.MinBackoff, o.Backoff) }
	case "none":
		base = redislock.NoRetry
	default:
		return nil, fmt.Errorf("redislock: unknown retry strategy %q", o.Retry) // decoding refuses it
	}
	l := &RedisLock{cfg: cfg, strategy: base}
	if o.Limit > 0 {
		l.strategy = func() redislock.RetryStrategy { return redislock.LimitRetry(base(), int(o.Limit)) }
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
