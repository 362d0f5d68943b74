package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Resource is the counter each hold increments, on a node no fault touches.
// A fenced read or write is accepted only if its token is at least the
// highest the resource has seen, checked and recorded atomically on the node.
//
// Reads must be fenced too, not only writes: a read-modify-write whose write
// alone is fenced still loses updates. Paused A (token 5) reads 0; B (6)
// reads 0; A writes 1, accepted since the resource has seen nothing above 5;
// B writes 1, accepted: one increment lost, every write "fenced". With the
// read fenced, B's read records 6 and A's late write is refused.
type Resource struct{ rdb *redis.Client }

var errStale = errors.New("stale fencing token rejected")

var fencedWrite = redis.NewScript(`
local seen = tonumber(redis.call("GET", KEYS[2]) or "0")
local fence = tonumber(ARGV[2])
if fence < seen then return 0 end
redis.call("SET", KEYS[2], fence)
redis.call("SET", KEYS[1], ARGV[1])
return 1`)

// fencedRead: KEYS[1] the counter, KEYS[2] the highest token seen; ARGV[1]
// the reader's token. Answers {0} when the token is stale, else records it
// and answers {1, counter}.
var fencedRead = redis.NewScript(`
local seen = tonumber(redis.call("GET", KEYS[2]) or "0")
local fence = tonumber(ARGV[1])
if fence < seen then return {0} end
redis.call("SET", KEYS[2], fence)
return {1, redis.call("GET", KEYS[1]) or "0"}`)

// Read returns the counter of key; with fence > 0 only if fence is not
// stale, else errStale.
func (r Resource) Read(ctx context.Context, key string, fence int64) (int64, error) {
	if fence > 0 {
		return r.readFenced(ctx, key, fence)
	}
	s, err := r.rdb.Get(ctx, ResourceKey(key)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

func (r Resource) readFenced(ctx context.Context, key string, fence int64) (int64, error) {
	res, err := fencedRead.Run(ctx, r.rdb, []string{ResourceKey(key), FenceKey(key)}, fence).Slice()
	if err != nil {
		return 0, err
	}
	if len(res) == 1 && res[0] == int64(0) {
		return 0, errStale
	}
	if len(res) != 2 || res[0] != int64(1) {
		return 0, fmt.Errorf("fenced read of %s answered %v", key, res)
	}
	s, _ := res[1].(string)
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
	return Resource{rdb: rdb}.Read(ctx, key, 0)
}
