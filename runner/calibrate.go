package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// calibrate measures the round trip to every lock node through client 0's
// links (the path every client's requests take), and refuses a run whose
// lock gives each node a timeout this machine cannot honour: a Redlock
// whose per-node timeout is shorter than a round trip never gets a
// majority, and a run where nothing was ever held tests nothing.
func (r *run) calibrate(ctx context.Context, addrs [][]string, rs resolved) error {
	if len(addrs) == 0 || r.topo.replicated() == nil {
		// The round trip is measured with PING; the other stores' locks
		// have no per-node timeout that it could refute.
		return nil
	}
	var rtts []time.Duration
	for _, addr := range addrs[0] {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
			DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second})
		_ = c.Ping(ctx).Err() // the first one dials
		for i := 0; i < 20; i++ {
			t := time.Now()
			if err := c.Ping(ctx).Err(); err != nil {
				c.Close()
				return fmt.Errorf("measure the round trip to lock node %s: %w", addr, err)
			}
			rtts = append(rtts, time.Since(t))
		}
		c.Close()
	}
	slices.Sort(rtts)
	p50, p99 := rtts[len(rtts)/2], rtts[len(rtts)*99/100]
	if rs.nodeTimeout > 0 && p50 >= rs.nodeTimeout {
		return fmt.Errorf("lock %s gives each node %v to answer, but a round trip to the lock nodes takes %v here (median of %d at start-up; p99 %v): "+
			"it could never gather a majority. Raise --ttl (the per-node timeout is a fraction of it) or the lock's timeout option",
			rs.lock.Name, rs.nodeTimeout, p50.Round(10*time.Microsecond), len(rtts), p99.Round(10*time.Microsecond))
	}
	return nil
}
