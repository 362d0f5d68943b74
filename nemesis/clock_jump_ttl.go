package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/redis/go-redis/v9"
)

// ClockJumpTTL emulates a forward clock jump on any Redis, with no shim: it
// shortens the remaining TTL of every key on a lock node by the jump, in one
// Lua script (atomic: no lease is renewed or re-acquired halfway). Keys
// whose TTL was shorter than the jump are deleted, as an expiry would. For
// the keys alive at that instant this is exactly what a wall-clock jump
// does in Redis; keys written afterwards keep their full TTL, as they would
// after a real jump. There is nothing to heal.
type ClockJumpTTL struct {
	onNode
	By time.Duration `opt:"by" default:"1.5ttl" margin:"0.1ttl..3ttl" help:"how far the emulated clock jumps"`
	onHold
}

// Applies: it rewrites a Redis key's TTL, so the lock must be a Redis one.
func (j *ClockJumpTTL) Applies(t Topology) error {
	if err := redisOnly("clock-jump-ttl", t); err != nil {
		return err
	}
	return j.onNode.Applies(t)
}

func init() {
	Register(Spec{
		Name:        "clock-jump-ttl",
		Description: "emulate a forward clock jump on any Redis: shorten every key's TTL on a lock node (PEXPIRE)",
		Action:      history.ActionClock,
		New:         func() Nemesis { return new(ClockJumpTTL) },
	})
}

var shortenTTLs = redis.NewScript(`
local by, n = tonumber(ARGV[1]), 0
for _, k in ipairs(redis.call("KEYS", "*")) do
  local t = redis.call("PTTL", k)
  if t > 0 then
    if t <= by then redis.call("DEL", k) else redis.call("PEXPIRE", k, t - by) end
    n = n + 1
  end
end
return n`)

func (c *ClockJumpTTL) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	by := c.By
	nf, err := aimNode(ctx, env, step, c.onHold, c.Node)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: nf.node.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	start := history.Now()
	n, err := shortenTTLs.Run(ctx, rdb, nil, by.Milliseconds()).Int64()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("clock-jump-ttl on lock node %d (%s): %w", nf.i, nf.node.Name(), err), nf.release())
	}
	f := nf.fault(&Fault{
		Target: fmt.Sprintf("TTLs on lock node %d (%s) shortened by %v", nf.i, nf.node.Name(), by),
		Params: map[string]string{"variant": "pexpire", "by": by.String(), "keys": strconv.FormatInt(n, 10)},
		Start:  start,
	})
	f.Effect, err = nf.effect(ctx, env, history.Now(), fmt.Sprintf("every TTL on lock node %d was shortened by %s", nf.i, by))
	return f, err
}
