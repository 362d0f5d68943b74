package locks

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// TokenLua sets a random token with SET NX PX and releases with a Lua
// compare-and-delete, so a client never deletes another client's lock. The
// token protects the release, not the hold: a client whose lease expired
// still believes it holds the lock until it tries to release.
type TokenLua struct{ cfg Config }

func init() {
	Register(Spec{
		Name:        "token-lua",
		Description: "SET key <random token> NX PX ttl, release with a Lua compare-and-delete",
		Library:     "Go, lockchaos (go-redis 9.23.0)",
		Weakness:    "the token protects the release, not the hold: a paused client still works after its lease expired",
		Nodes:       1,
		New:         func(cfg Config) (Locker, error) { return &TokenLua{cfg: cfg}, nil },
	})
}

var (
	compareAndDelete = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)
	compareAndExpire = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
)

func (l *TokenLua) Acquire(ctx context.Context, key string) (Lease, error) {
	token := randomToken(l.cfg.Owner, l.cfg.Rand)
	if err := setNXPX(ctx, l.cfg.Nodes[0], key, token, l.cfg.TTL); err != nil {
		return Lease{}, err
	}
	return Lease{Key: key, Owner: l.cfg.Owner, Token: token}, nil
}

func (l *TokenLua) Release(ctx context.Context, lease Lease) error {
	return scriptOne(ctx, compareAndDelete, l.cfg.Nodes[0], lease.Key, lease.Token)
}

// Renew extends the lease only while the token is still there.
func (l *TokenLua) Renew(ctx context.Context, lease Lease) (Lease, error) {
	return lease, scriptOne(ctx, compareAndExpire, l.cfg.Nodes[0], lease.Key, lease.Token, l.cfg.TTL.Milliseconds())
}

// scriptOne runs a script that answers 1 when this lease still held the key
// and 0 when it did not.
func scriptOne(ctx context.Context, s *redis.Script, rdb redis.Scripter, key string, args ...any) error {
	n, err := s.Run(ctx, rdb, []string{key}, args...).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
