package locks

import (
	"context"
	"time"
)

// SetnxExpire is the simplest lock of the seeds: SETNX, then a separate
// EXPIRE, released with DEL. The two steps are not atomic: a client that
// dies between them leaves a key that never expires, and nobody can take the
// lock again. DEL also removes whoever's lock is there.
type SetnxExpire struct {
	cfg Config
	o   SetnxExpireOptions
}

// SetnxExpireOptions are SetnxExpire's options.
type SetnxExpireOptions struct {
	Gap time.Duration `opt:"gap" default:"0s" help:"pause between SETNX and EXPIRE, widening the window a crash can hit"`
}

func init() {
	Register(Spec{
		Name:         "setnx-expire",
		Description:  "SETNX then a separate EXPIRE, release with DEL (non-atomic: a crash between them deadlocks the key)",
		Library:      "Go, lockchaos (go-redis 9.23.0)",
		Weakness:     "a crash between the two steps leaves a key that never expires (deadlock); `DEL` removes anyone's lock",
		Nodes:        1,
		BlindRelease: true,
		Options:      SetnxExpireOptions{},
		New: func(cfg Config) (Locker, error) {
			return &SetnxExpire{cfg: cfg, o: *cfg.Options.(*SetnxExpireOptions)}, nil
		},
	})
}

func (l *SetnxExpire) Acquire(ctx context.Context, key string) (Lease, error) {
	rdb := l.cfg.Nodes[0]
	n, err := rdb.Do(ctx, "SETNX", key, l.cfg.Owner).Int64()
	if err != nil {
		return Lease{}, err
	}
	if n == 0 {
		return Lease{}, ErrNotAcquired
	}
	if l.o.Gap > 0 {
		time.Sleep(l.o.Gap)
	}
	if err := rdb.PExpire(ctx, key, l.cfg.TTL).Err(); err != nil {
		// The key is set but may have no expiry: the outcome is unknown.
		return Lease{}, err
	}
	return Lease{Key: key, Owner: l.cfg.Owner, Token: l.cfg.Owner}, nil
}

func (l *SetnxExpire) Release(ctx context.Context, lease Lease) error {
	return releaseDel(ctx, l.cfg, lease)
}
