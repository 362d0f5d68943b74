package locks

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Fenced is token-lua plus a fencing token: every grant also increments a
// counter, in the same script, so tokens increase strictly with the order of
// grants. The token goes with every operation on the resource, which refuses
// any token lower than one it has already seen. The lock itself breaks under
// a pause exactly as token-lua does; the point is that the resource does not.
type Fenced struct{ TokenLua }

func init() {
	Register(Spec{
		Name:        "fenced",
		Description: "token-lua plus a fencing token (INCR in the acquire script) that the resource checks on every read and write",
		Library:     "Go, lockchaos (go-redis 9.23.0)",
		Weakness:    "the lock breaks like `token-lua`, the resource does not",
		Nodes:       1,
		New:         func(cfg Config) (Locker, error) { return &Fenced{TokenLua{cfg: cfg}}, nil },
	})
}

// fencedAcquire: KEYS[1] the lock, KEYS[2] its fencing counter; ARGV[1] the
// token, ARGV[2] the TTL in ms. Answers the new fencing token, or 0 when the
// lock is held. One script, so no grant can go without a token or two grants
// share one.
var fencedAcquire = redis.NewScript(`
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.call("INCR", KEYS[2])
end
return 0`)

// FenceCounterKey is the counter, on the lock node, that issues key's
// fencing tokens. It never expires: tokens must keep increasing across
// grants however far apart.
func FenceCounterKey(key string) string { return key + ":fencing-token" }

func (l *Fenced) Acquire(ctx context.Context, key string) (Lease, error) {
	token := randomToken(l.cfg.Owner, l.cfg.Rand)
	fence, err := fencedAcquire.Run(ctx, l.cfg.Nodes[0], []string{key, FenceCounterKey(key)}, token, l.cfg.TTL.Milliseconds()).Int64()
	if err != nil {
		if errors.Is(err, redis.Nil) {
			err = fmt.Errorf("fenced: acquire script answered nil: %w", err)
		}
		return Lease{}, err
	}
	if fence == 0 {
		return Lease{}, ErrNotAcquired
	}
	return Lease{Key: key, Owner: l.cfg.Owner, Token: token, Fence: fence}, nil
}
