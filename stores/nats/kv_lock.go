package nats

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/lockchaos/lockchaos/locks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KVLock is the lock NATS users build on a JetStream key-value bucket whose
// age limit (TTL) is the lease: acquire creates the key with a token of
// its own (Create: only if the key has no value), release deletes it only
// at the revision it created (a compare-and-delete), renew updates it at
// that revision, which restarts its age. The server expires the key by its
// own clock when the lease runs out.
type KVLock struct {
	cfg locks.Config

	mu     sync.Mutex
	nc     *nats.Conn
	kv     jetstream.KeyValue
	grants int
}

func init() {
	locks.Register(locks.Spec{
		Name:        "nats-kv-lock",
		Description: "NATS JetStream key-value lock: Create(key, token) in a bucket whose TTL is the lease, release Delete at the created revision, renew Update at it",
		Library:     "Go, lockchaos (nats.go 1.55.0)",
		Weakness:    "a lease; survives a restart of the server (its file store)",
		Store:       Name, Nodes: 3,
		New: func(cfg locks.Config) (locks.Locker, error) { return &KVLock{cfg: cfg}, nil },
	})
}

// bucket connects (again, after an error) and binds the bucket, creating
// it with the run's TTL as its age limit.
func (l *KVLock) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	if l.kv != nil && l.nc.IsConnected() {
		return l.kv, nil
	}
	l.drop()
	if len(l.cfg.Addrs) < 1 {
		return nil, errors.New("nats lock: no address of a server (Config.Addrs)")
	}
	nc, err := connect(l.cfg.Addrs, l.cfg.Owner, l.cfg.OpTimeout)
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", strings.Join(l.cfg.Addrs, ", "), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, bucketConfig(l.cfg.TTL, len(l.cfg.Addrs)))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats key-value bucket %s: %w", Bucket, err)
	}
	l.nc, l.kv = nc, kv
	return kv, nil
}

func (l *KVLock) drop() {
	if l.nc != nil {
		l.nc.Close()
	}
	l.nc, l.kv = nil, nil
}

// do runs one request on the bucket, one at a time, bounded by OpTimeout.
func (l *KVLock) do(ctx context.Context, f func(context.Context, jetstream.KeyValue) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.OpTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.cfg.OpTimeout)
		defer cancel()
	}
	kv, err := l.bucket(ctx)
	if err != nil {
		return err
	}
	return f(ctx, kv)
}

// revision is a lease's Data: the revision its token is at.
type revision uint64

func (l *KVLock) Acquire(ctx context.Context, key string) (locks.Lease, error) {
	var lease locks.Lease
	err := l.do(ctx, func(ctx context.Context, kv jetstream.KeyValue) error {
		l.grants++
		token := l.cfg.Owner + "#" + strconv.Itoa(l.grants)
		rev, err := kv.Create(ctx, kvKey(key), []byte(token))
		// Create refuses a key with a value (ErrKeyExists); after a release
		// it writes at the delete marker's revision, which nats.go returns
		// the server's refusal of as is: another create got there first
		// (one the stream's leader had proposed and not yet applied, on a
		// cluster: "wrong last sequence", code 10164).
		if errors.Is(err, jetstream.ErrKeyExists) || wrongRevision(err) {
			return locks.ErrNotAcquired
		}
		lease = locks.Lease{Key: key, Owner: l.cfg.Owner, Token: token, Data: revision(rev)}
		return err
	})
	return lease, err
}

// wrongRevision: the key is at another revision than the lease's: another
// holder's, or gone.
func wrongRevision(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func (l *KVLock) Release(ctx context.Context, lease locks.Lease) error {
	return l.do(ctx, func(ctx context.Context, kv jetstream.KeyValue) error {
		err := kv.Delete(ctx, kvKey(lease.Key), jetstream.LastRevision(uint64(lease.Data.(revision))))
		if wrongRevision(err) {
			return locks.ErrNotHeld
		}
		return err
	})
}

// Renew updates the key at the lease's revision with the same token,
// which restarts its age: a lease of the TTL again.
func (l *KVLock) Renew(ctx context.Context, lease locks.Lease) (locks.Lease, error) {
	err := l.do(ctx, func(ctx context.Context, kv jetstream.KeyValue) error {
		rev, err := kv.Update(ctx, kvKey(lease.Key), []byte(lease.Token), uint64(lease.Data.(revision)))
		if wrongRevision(err) {
			return locks.ErrNotHeld
		}
		if err == nil {
			lease.Data = revision(rev)
		}
		return err
	})
	return lease, err
}

func (l *KVLock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop()
	return nil
}
