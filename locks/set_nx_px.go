package locks

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetNxPx is the seeds' Jedis lock: SET key 1 NX PX ttl, released with a
// plain DEL that removes whatever lock is there, its own or the next
// holder's.
type SetNxPx struct{ cfg Config }

func init() {
	Register(Spec{
		Name:         "set-nx-px",
		Description:  "SET key 1 NX PX ttl, release with plain DEL (deletes whoever holds it)",
		Library:      "Go, lockchaos (go-redis 9.23.0)",
		Weakness:     "a client whose lease expired deletes the next holder's lock",
		Nodes:        1,
		BlindRelease: true,
		New:          func(cfg Config) (Locker, error) { return &SetNxPx{cfg: cfg}, nil },
	})
}

func (l *SetNxPx) Acquire(ctx context.Context, key string) (Lease, error) {
	if err := setNXPX(ctx, l.cfg.Nodes[0], key, "1", l.cfg.TTL); err != nil {
		return Lease{}, err
	}
	return Lease{Key: key, Owner: l.cfg.Owner, Token: "1"}, nil
}

func (l *SetNxPx) Release(ctx context.Context, lease Lease) error {
	return releaseDel(ctx, l.cfg, lease)
}

// releaseDel deletes the key whoever holds it; "not held" only when no key
// was there at all.
func releaseDel(ctx context.Context, cfg Config, lease Lease) error {
	n, err := cfg.Nodes[0].Del(ctx, lease.Key).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// doer is a client or a single connection (token-lua-wait must WAIT on the
// connection that wrote).
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// setNXPX runs SET key value NX PX ttl: nil when set, ErrNotAcquired when the
// key existed.
func setNXPX(ctx context.Context, rdb doer, key, value string, ttl time.Duration) error {
	err := rdb.Do(ctx, "SET", key, value, "NX", "PX", ttl.Milliseconds()).Err()
	if errors.Is(err, redis.Nil) {
		return ErrNotAcquired
	}
	return err
}
