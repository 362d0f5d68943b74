// Package customlock shows how to bring your own lock to lockchaos without
// forking it: implement locks.Locker in your own package, register it in an
// init function, and build a binary that imports your package and calls
// cli.Main. Workers re-execute that same binary, so they see the lock too.
//
// The lock here releases with an optimistic transaction (WATCH, GET, MULTI,
// DEL, EXEC) instead of a Lua script: the same compare-and-delete, made
// atomic another way.
package customlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockchaos/lockchaos/locks"
	"github.com/redis/go-redis/v9"
)

// Name is the name the lock registers under.
const Name = "example-watch-release"

// WatchRelease is SET key token NX PX ttl, released by a WATCHed
// compare-and-delete.
type WatchRelease struct{ cfg locks.Config }

func init() {
	locks.Register(locks.Spec{
		Name:        Name,
		Description: "example: SET NX PX, release by WATCH / GET / MULTI DEL EXEC",
		Library:     "Go, an example of lockchaos's (go-redis)",
		Weakness:    "as token-lua: a paused client works on after its lease",
		Nodes:       1,
		New:         func(cfg locks.Config) (locks.Locker, error) { return &WatchRelease{cfg: cfg}, nil },
	})
}

func (l *WatchRelease) Acquire(ctx context.Context, key string) (locks.Lease, error) {
	token := fmt.Sprintf("%s:%016x", l.cfg.Owner, l.cfg.Rand.Uint64())
	ok, err := l.cfg.Nodes[0].SetNX(ctx, key, token, l.cfg.TTL).Result()
	if err != nil {
		return locks.Lease{}, err
	}
	if !ok {
		return locks.Lease{}, locks.ErrNotAcquired
	}
	return locks.Lease{Key: key, Owner: l.cfg.Owner, Token: token}, nil
}

func (l *WatchRelease) Release(ctx context.Context, lease locks.Lease) error {
	err := l.cfg.Nodes[0].Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, lease.Key).Result()
		if errors.Is(err, redis.Nil) || (err == nil && v != lease.Token) {
			return locks.ErrNotHeld
		}
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, lease.Key)
			return nil
		})
		return err
	}, lease.Key)
	if errors.Is(err, redis.TxFailedErr) {
		// The key changed between GET and EXEC: it expired and was taken.
		return locks.ErrNotHeld
	}
	return err
}
