package workload

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Resource is the counter each hold increments, on a node no fault touches.
// A fenced write is accepted only if its token is at least the highest the
// resource has seen, checked atomically on the node.
type Resource struct{ rdb *redis.Client }

var errStale = errors.New("stale fencing token rejected")

var fencedWrite = redis.NewScript(`
local seen = tonumber(redis.call("GET", KEYS[2]) or "0")
local fence = tonumber(ARGV[2])
if fence < seen then return 0 end
redis.call("SET", KEYS[2], fence)
redis.call("SET", KEYS[1], ARGV[1])
return 1`)

// Read returns the counter of key.
func (r Resource) Read(ctx context.Context, key string) (int64, error) {
	s, err := r.rdb.Get(ctx, ResourceKey(key)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// Write sets the counter of key to v; with fence > 0 only if fence is not
// stale, else errStale.
func (r Resource) Write(ctx context.Context, key string, v, fence int64) error {
	if fence == 0 {
		return r.rdb.Set(ctx, ResourceKey(key), v, 0).Err()
	}
	n, err := fencedWrite.Run(ctx, r.rdb, []string{ResourceKey(key), FenceKey(key)}, v, fence).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return errStale
	}
	return nil
}

// ReadWith reads key's counter through rdb (used by the coordinator's final
// probe).
func (Resource) ReadWith(ctx context.Context, rdb *redis.Client, key string) (int64, error) {
	return Resource{rdb: rdb}.Read(ctx, key)
}
