package locks

import (
	"context"
	"fmt"
	"time"
)

// TokenLuaWait is token-lua followed by WAIT numreplicas timeout after the
// acquire and after the release: what Redisson does today instead of
// RedLock, to make a lock survive a failover. An acquire that fewer replicas
// acknowledged than asked for counts as failed, and its key is deleted again.
//
// WAIT only says how many replicas had received the write when it answered;
// it makes nothing durable, and a replica promoted before it got the write
// still loses it. That is what failover scenarios test. Renewal is
// token-lua's, without WAIT.
type TokenLuaWait struct {
	TokenLua
	o TokenLuaWaitOptions
}

// TokenLuaWaitOptions are TokenLuaWait's options.
type TokenLuaWaitOptions struct {
	NumReplicas Count         `opt:"numreplicas" default:"0" help:"replicas that must acknowledge the acquire (WAIT's numreplicas)"`
	Timeout     time.Duration `opt:"timeout" default:"0.1ttl" help:"WAIT's timeout (Redisson waits up to 1s against a 30s lease)"`
	IgnoreAcks  bool          `opt:"ignore-acks" default:"false" help:"WAIT's answer is not checked: the acquire succeeds however few replicas acknowledged it, as Redisson's RLock did before 3.16.7 (redisson#3994, #3253)"`
}

func init() {
	Register(Spec{
		Name:        "token-lua-wait",
		Description: "token-lua, each acquire and release followed by WAIT numreplicas timeout; too few acknowledgements fail the acquire",
		Library:     "Go, lockchaos (go-redis 9.23.0)",
		Weakness:    "WAIT is no durability: a replica promoted before it got the key loses it; a pause still breaks it",
		Nodes:       1,
		Options:     TokenLuaWaitOptions{},
		New: func(cfg Config) (Locker, error) {
			return &TokenLuaWait{TokenLua: TokenLua{cfg: cfg}, o: *cfg.Options.(*TokenLuaWaitOptions)}, nil
		},
	})
}

// Acquire sets the key and WAITs on the same connection: WAIT counts the
// replicas that have every write of the connection it runs on.
func (l *TokenLuaWait) Acquire(ctx context.Context, key string) (Lease, error) {
	conn := l.cfg.Nodes[0].Conn()
	defer conn.Close()
	token := randomToken(l.cfg.Owner, l.cfg.Rand)
	if err := setNXPX(ctx, conn, key, token, l.cfg.TTL); err != nil {
		return Lease{}, err
	}
	acked, err := conn.Wait(ctx, int(l.o.NumReplicas), l.o.Timeout).Result()
	if err != nil {
		return Lease{}, fmt.Errorf("token-lua-wait: WAIT after the acquire (the key is set on the master): %w", err)
	}
	if Count(acked) >= l.o.NumReplicas || l.o.IgnoreAcks {
		return Lease{Key: key, Owner: l.cfg.Owner, Token: token}, nil
	}
	if err := scriptOne(ctx, compareAndDelete, conn, key, token); err != nil {
		return Lease{}, fmt.Errorf("token-lua-wait: %d of %d replicas acknowledged the acquire, and deleting the key again failed: %w", acked, l.o.NumReplicas, err)
	}
	return Lease{}, fmt.Errorf("%w: %d of %d replicas acknowledged within %v; the key was deleted again", ErrNotAcquired, acked, l.o.NumReplicas, l.o.Timeout)
}

// Release deletes the key if it is still this lease's and WAITs for the
// deletion. Too few acknowledgements make the outcome unknown: the lock is
// gone from the master but a promoted replica may still have it.
func (l *TokenLuaWait) Release(ctx context.Context, lease Lease) error {
	conn := l.cfg.Nodes[0].Conn()
	defer conn.Close()
	if err := scriptOne(ctx, compareAndDelete, conn, lease.Key, lease.Token); err != nil {
		return err
	}
	acked, err := conn.Wait(ctx, int(l.o.NumReplicas), l.o.Timeout).Result()
	if err != nil {
		return fmt.Errorf("token-lua-wait: WAIT after the release (the key is deleted on the master): %w", err)
	}
	if Count(acked) < l.o.NumReplicas && !l.o.IgnoreAcks {
		return fmt.Errorf("token-lua-wait: released on the master, but %d of %d replicas acknowledged within %v", acked, l.o.NumReplicas, l.o.Timeout)
	}
	return nil
}
