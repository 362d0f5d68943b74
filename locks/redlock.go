package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/option"
	"github.com/redis/go-redis/v9"
)

// Redlock is the algorithm of the Redis documentation ("Distributed locks
// with Redis") over N independent masters: SET key token NX PX ttl on every
// node with a timeout much smaller than the TTL; the lock is taken when a
// majority said yes and less than the TTL has passed; it is valid for
// TTL − elapsed − drift from the start of the attempt, and the client must
// be done by then (Lease.Deadline). A failed attempt is undone on every node.
//
// Time is measured on CLOCK_MONOTONIC. The validity still assumes that the
// nodes' clocks run at the rate of ours and that the client is not paused
// between checking it and acting: the two assumptions of the Redlock debate.
type Redlock struct {
	cfg Config
	o   RedlockOptions
}

// RedlockOptions are Redlock's options.
type RedlockOptions struct {
	NodeTimeout time.Duration   `opt:"node-timeout" default:"0.05ttl" help:"timeout of each node's request, much smaller than the TTL"`
	Parallel    bool            `opt:"parallel" default:"false" help:"ask the nodes in parallel instead of one after another"`
	DriftFactor option.Fraction `opt:"drift-factor" default:"0.01" help:"clock drift allowance as a fraction of the TTL (plus 2ms)"`
	RetryDelay  time.Duration   `opt:"retry-delay" default:"0.2ttl" help:"blocking acquire: wait a random time up to this before retrying"`
}

// Validate implements option.Validator.
func (o *RedlockOptions) Validate() error {
	if o.NodeTimeout <= 0 {
		return errors.New("node-timeout: want a positive duration")
	}
	return nil
}

func init() {
	Register(Spec{
		Name:        "redlock",
		Description: "Redlock over N independent masters: majority of SET NX PX within the TTL, validity TTL − elapsed − drift",
		Library:     "Go, lockchaos (go-redis 9.23.0)",
		Weakness:    "a pause between checking the validity and acting; clock jumps on the nodes",
		Nodes:       5,
		Quorum:      true,
		Options:     RedlockOptions{},
		New: func(cfg Config) (Locker, error) {
			return &Redlock{cfg: cfg, o: *cfg.Options.(*RedlockOptions)}, nil
		},
	})
}

// drift is the Redlock reference's allowance: TTL × factor + 2 ms.
func (l *Redlock) drift() time.Duration {
	return time.Duration(float64(l.cfg.TTL)*float64(l.o.DriftFactor)) + 2*time.Millisecond
}

func (l *Redlock) quorum() int { return len(l.cfg.Nodes)/2 + 1 }

// NodeTimeout is the timeout of each node's request.
func (l *Redlock) NodeTimeout() time.Duration { return l.o.NodeTimeout }

// tally is what the nodes answered to one step.
type tally struct {
	yes  int     // the step took effect
	no   int     // the node answered no
	errs []error // no answer: timeout, connection lost
}

// onAll runs step on every node, each bounded by the node timeout, one
// after another or in parallel.
func (l *Redlock) onAll(ctx context.Context, step func(ctx context.Context, rdb *redis.Client) (bool, error)) tally {
	var (
		mu sync.Mutex
		t  tally
		wg sync.WaitGroup
	)
	one := func(i int, rdb *redis.Client) {
		nctx, cancel := context.WithTimeout(ctx, l.o.NodeTimeout)
		ok, err := step(nctx, rdb)
		cancel()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			t.errs = append(t.errs, fmt.Errorf("node %d: %w", i, err))
		case ok:
			t.yes++
		default:
			t.no++
		}
	}
	for i, rdb := range l.cfg.Nodes {
		if !l.o.Parallel {
			one(i, rdb)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(i, rdb)
		}()
	}
	wg.Wait()
	return t
}

func (l *Redlock) Acquire(ctx context.Context, key string) (Lease, error) {
	token := randomToken(l.cfg.Owner, l.cfg.Rand)
	start := history.Now()
	t := l.onAll(ctx, func(ctx context.Context, rdb *redis.Client) (bool, error) {
		err := setNXPX(ctx, rdb, key, token, l.cfg.TTL)
		if errors.Is(err, ErrNotAcquired) {
			return false, nil
		}
		return err == nil, err
	})
	elapsed := time.Duration(history.Now() - start)
	validity := l.cfg.TTL - elapsed - l.drift()
	if t.yes >= l.quorum() && validity > 0 {
		return Lease{Key: key, Owner: l.cfg.Owner, Token: token, Deadline: start + int64(l.cfg.TTL-l.drift())}, nil
	}
	// Undo the attempt everywhere, also where the SET seemed to fail: its
	// answer may have been lost after it took effect. The attempt's context
	// may be spent; each node still gets its own timeout.
	l.onAll(context.WithoutCancel(ctx), l.deleteStep(key, token))
	what := fmt.Sprintf("%d of %d nodes granted (quorum %d) in %v", t.yes, len(l.cfg.Nodes), l.quorum(), elapsed.Round(time.Microsecond))
	switch {
	case t.yes >= l.quorum():
		return Lease{}, fmt.Errorf("%w: %s, leaving no validity of the %v TTL", ErrNotAcquired, what, l.cfg.TTL)
	case len(t.errs) > 0:
		// The nodes that did not answer may have set the key: as far as the
		// servers go, the outcome is unknown.
		return Lease{}, fmt.Errorf("redlock: %s, %d did not answer: %w", what, len(t.errs), errors.Join(t.errs...))
	}
	return Lease{}, fmt.Errorf("%w: %s", ErrNotAcquired, what)
}

func (l *Redlock) deleteStep(key, token string) func(context.Context, *redis.Client) (bool, error) {
	return func(ctx context.Context, rdb *redis.Client) (bool, error) {
		return answeredOne(scriptOne(ctx, compareAndDelete, rdb, key, token))
	}
}

// answeredOne turns scriptOne's answer into (took effect, error).
func answeredOne(err error) (bool, error) {
	if errors.Is(err, ErrNotHeld) {
		return false, nil
	}
	return err == nil, err
}

// Release deletes the key on every node where it still holds this lease's
// token. It reports ErrNotHeld when fewer than a majority still had it: the
// lease had already lost its majority, so someone else could have taken it.
func (l *Redlock) Release(ctx context.Context, lease Lease) error {
	t := l.onAll(ctx, l.deleteStep(lease.Key, lease.Token))
	switch {
	case t.yes >= l.quorum():
		return nil
	case t.yes+len(t.errs) >= l.quorum():
		return fmt.Errorf("redlock: released on %d of %d nodes, %d did not answer: %w", t.yes, len(l.cfg.Nodes), len(t.errs), errors.Join(t.errs...))
	}
	return fmt.Errorf("%w: only %d of %d nodes still had this lease (quorum %d)", ErrNotHeld, t.yes, len(l.cfg.Nodes), l.quorum())
}

// Renew extends the key on every node that still has this lease's token; a
// majority within the TTL gives a new validity, counted from the start of
// the renewal.
func (l *Redlock) Renew(ctx context.Context, lease Lease) (Lease, error) {
	start := history.Now()
	t := l.onAll(ctx, func(ctx context.Context, rdb *redis.Client) (bool, error) {
		return answeredOne(scriptOne(ctx, compareAndExpire, rdb, lease.Key, lease.Token, l.cfg.TTL.Milliseconds()))
	})
	elapsed := time.Duration(history.Now() - start)
	switch {
	case t.yes >= l.quorum() && l.cfg.TTL-elapsed-l.drift() > 0:
		lease.Deadline = start + int64(l.cfg.TTL-l.drift())
		return lease, nil
	case t.yes >= l.quorum():
		// Extended, but too slowly to count on it: the old validity stands.
		return lease, fmt.Errorf("redlock: renewal took %v of the %v TTL", elapsed.Round(time.Microsecond), l.cfg.TTL)
	case t.yes+len(t.errs) >= l.quorum():
		return lease, fmt.Errorf("redlock: renewed on %d of %d nodes, %d did not answer: %w", t.yes, len(l.cfg.Nodes), len(t.errs), errors.Join(t.errs...))
	}
	return lease, fmt.Errorf("%w: only %d of %d nodes still had this lease (quorum %d)", ErrNotHeld, t.yes, len(l.cfg.Nodes), l.quorum())
}

// AcquireWait retries failed attempts after a random delay, so that clients
// that split the votes do not collide again in step, until wait has passed.
func (l *Redlock) AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	deadline := time.Now().Add(wait)
	for {
		lease, err := l.Acquire(ctx, key)
		if err == nil {
			return lease, nil
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return Lease{}, err
		}
		var d time.Duration
		if l.o.RetryDelay > 0 {
			d = time.Duration(l.cfg.Rand.Int64N(int64(l.o.RetryDelay)))
		}
		time.Sleep(min(left, d))
	}
}
