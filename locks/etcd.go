package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// dialEtcd makes the one etcd client of a worker's lock, to the lock nodes
// as this worker reaches them (Config.Addrs, its own proxies). It never
// syncs its endpoints with the cluster: the members' own URLs would take it
// around the proxies, out of reach of every link fault. The dial itself
// does not block; each request waits for a connection under its own
// deadline.
func dialEtcd(cfg Config) (*clientv3.Client, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("etcd lock: no member addresses (Config.Addrs)")
	}
	eps := make([]string, len(cfg.Addrs))
	for i, a := range cfg.Addrs {
		eps[i] = "http://" + a
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:        eps,
		AutoSyncInterval: 0,
		// gRPC's keep-alive is the client's only way to see that a member
		// that still holds its connection open (SIGSTOPped, partitioned
		// without a reset) answers nothing: until then the round-robin
		// balancer keeps sending it every third request, which waits out
		// its deadline. 10 s is the shortest gRPC allows; etcdctl sets it
		// too.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", cfg.Addrs, err)
	}
	return c, nil
}

// etcdOpTimeout bounds each request: a request that reaches a SIGSTOPped
// member waits for its context alone (gRPC's keepalive is clamped to 10 s
// and more), so a missing deadline would be a hang.
func etcdOpTimeout(cfg Config) time.Duration {
	if cfg.OpTimeout > 0 {
		return cfg.OpTimeout
	}
	if cfg.TTL > 0 {
		return cfg.TTL
	}
	return time.Second
}

// etcdLeaseSeconds is ttl as an etcd lease: whole seconds, rounded up, at
// least one.
func etcdLeaseSeconds(ttl time.Duration) int64 {
	s := int64((ttl + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// cleanupCtx is a context for undoing what a failed or finished operation
// left (revoking its lease): its own deadline, not the caller's, which may
// have run out already.
func cleanupCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}
