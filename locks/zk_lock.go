package locks

import (
	"context"
	"fmt"
	"time"
)

// ZKLock is the ZooKeeper lock recipe on one session per client: the
// lowest ephemeral sequential node under the key's directory holds the
// lock, and ZooKeeper deletes it when the session expires. The lease is
// the session. Lost closes when the client loses its connection (as
// Curator asks of its users on SUSPENDED), before the session can expire;
// but a client paused past its session timeout has lost the lock while it
// still believes it holds it, and learns so only when it runs again.
type ZKLock struct {
	zk *zkClient
	// fenced hands out the node's czxid as the fencing token.
	fenced bool
	// unprotected: a create that got no answer is taken as not acquired
	// and its node, if it was made, is left behind (ZKOptions.Protect).
	unprotected bool
}

// ZKOptions are zk-lock's options.
type ZKOptions struct {
	Protect bool `opt:"protect" default:"true" help:"a create that got no answer (ConnectionLoss) is cleaned up: its node, found by this attempt's unique prefix, is deleted once the session answers (Curator's protection mode); false: it is taken as not acquired and the node left behind, as a recipe without protection does — an orphaned node that keeps the lock from everyone while its session lives"`
}

func init() {
	Register(Spec{
		Name:        "zk-lock",
		Description: "ZooKeeper lock recipe: lowest EPHEMERAL|SEQUENCE node under /lockchaos/<key> holds it, session timeout = TTL",
		Library:     "Go, lockchaos (go-zookeeper/zk 1.0.4)",
		Weakness:    "a paused client outlives its session, like Redis",
		Store:       "zookeeper",
		KeepsAlive:  true,
		Nodes:       3,
		Options:     ZKOptions{},
		New: func(cfg Config) (Locker, error) {
			l := newZKLock(cfg, false)
			if o, ok := cfg.Options.(*ZKOptions); ok {
				l.unprotected = !o.Protect
			}
			return l, nil
		},
	})
}

func newZKLock(cfg Config, fenced bool) *ZKLock {
	return &ZKLock{zk: newZKClient(cfg), fenced: fenced}
}

// Acquire tries the recipe once. Token is the node's path.
func (l *ZKLock) Acquire(ctx context.Context, key string) (Lease, error) {
	unique := fmt.Sprintf("%016x", l.zk.cfg.Rand.Uint64())
	gap := l.zk.gap()
	got, err := zkTryLock(ctx, l.zk, key, l.zk.cfg.Owner, unique, !l.unprotected)
	if err != nil {
		return Lease{}, err
	}
	lease := Lease{Key: key, Owner: l.zk.cfg.Owner, Token: got.path, Data: got.stat.Version,
		Lost: l.zk.hold(got.path, got.stat.EphemeralOwner, gap)}
	if l.fenced {
		lease.Fence = got.stat.Czxid
	}
	return lease, nil
}

// Release deletes the node: ErrNotHeld when it is gone already (its
// session expired, or someone deleted it).
func (l *ZKLock) Release(ctx context.Context, lease Lease) error {
	return zkRelease(ctx, l.zk, lease)
}

// Lease is the session timeout the servers grant for the TTL.
func (l *ZKLock) Lease() time.Duration { return l.zk.Lease() }

// SessionTimeout is the timeout the server last granted, 0 before.
func (l *ZKLock) SessionTimeout() time.Duration { return l.zk.SessionTimeout() }

// Close ends the session.
func (l *ZKLock) Close() error { return l.zk.Close() }
