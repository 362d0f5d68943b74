package locks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReentrantWatchdog is Redisson's RLock, algorithm for algorithm: a hash per
// lock whose field `<client uuid>:<thread id>` counts the owner's reentries;
// waiters subscribe to the lock's channel and retry when an unlock is
// published (or when the lease they were told about runs out) instead of
// spinning; and, when no explicit lease time is given, a watchdog renews the
// lease every third of it for as long as the lock is held.
//
// The watchdog is what makes it fail the way it does: it lives in the
// client's process, so a process pause (GC, SIGSTOP) freezes it with the
// critical section, the lease runs out, and the next owner gets in while the
// paused client still believes it holds the lock.
type ReentrantWatchdog struct {
	cfg Config
	// field is Redisson's getLockName(threadId): the client instance's UUID
	// and the thread's id. A worker runs its critical sections on one
	// goroutine, so its thread id is always 1.
	field string
	// lease is Redisson's internalLockLeaseTime: the explicit lease time, or
	// the watchdog timeout when there is none.
	lease    time.Duration
	watchdog bool
	// keepRenewing: a failed renewal does not stop the watchdog
	// (ReentrantWatchdogOptions.KeepRenewing).
	keepRenewing bool

	mu sync.Mutex
	// renewals is Redisson's EXPIRATION_RENEWAL_MAP: one watchdog per key
	// this client holds, alive until the outermost release.
	renewals map[string]*renewal
}

type renewal struct {
	holds  int // acquires not yet released: the local reentrancy count
	cancel context.CancelFunc
	lost   chan struct{} // closed when a renewal found the field gone
	// releasing: the outermost release is on its way; a renewal that then
	// finds the field gone found the release, not a loss.
	releasing bool
}

// redissonThreadID: see ReentrantWatchdog.field.
const redissonThreadID = 1

// ReentrantWatchdogOptions are ReentrantWatchdog's options.
type ReentrantWatchdogOptions struct {
	WatchdogTimeout time.Duration `opt:"watchdog-timeout" default:"1ttl" help:"lease when no lease-time is given, renewed every third of it by the watchdog (Redisson's lockWatchdogTimeout, whose default is 30s); follows --ttl unless set"`
	LeaseTime       time.Duration `opt:"lease-time" default:"0s" help:"explicit lease time (Redisson's lock(leaseTime)): the lease just expires, no watchdog; 0 uses the watchdog"`
	KeepRenewing    bool          `opt:"keep-renewing" default:"false" help:"a renewal that fails (a timeout, a reset connection) is logged and the watchdog renews again at its next tick, as Redisson does since 3.44.0; false: one failed renewal stops the watchdog for good and the lease runs out under its holder, as in Redisson before 3.44.0 (redisson#775)"`
}

// lease is Redisson's internalLockLeaseTime, the key of the option that set
// it, and whether a watchdog renews it.
func (o *ReentrantWatchdogOptions) lease() (lease time.Duration, key string, watchdog bool) {
	if o.LeaseTime == 0 {
		return o.WatchdogTimeout, "watchdog-timeout", true
	}
	return o.LeaseTime, "lease-time", false
}

// Validate implements option.Validator.
func (o *ReentrantWatchdogOptions) Validate() error {
	if lease, key, _ := o.lease(); lease < 3*time.Millisecond {
		return fmt.Errorf("%s: lease %v is too short to renew every third of it", key, lease)
	}
	return nil
}

func init() {
	Register(Spec{
		Name:        "reentrant-watchdog",
		Description: "Redisson's RLock: reentrant hash lock, pub/sub wake-up of waiters, watchdog renewing the lease every third of it",
		Library:     "Go, lockchaos's port of Redisson's RLock (the real one: `redisson-rlock`)",
		Weakness:    "the watchdog freezes with its process (pause → violation); a failed renewal stops it silently",
		Nodes:       1,
		Reentrant:   true,
		Options:     ReentrantWatchdogOptions{},
		New: func(cfg Config) (Locker, error) {
			l := &ReentrantWatchdog{cfg: cfg, renewals: map[string]*renewal{}}
			o := cfg.Options.(*ReentrantWatchdogOptions)
			l.lease, _, l.watchdog = o.lease()
			l.keepRenewing = o.KeepRenewing
			l.field = fmt.Sprintf("%s:%d", uuid4(cfg), redissonThreadID)
			return l, nil
		},
	})
}

// uuid4 formats 16 random bytes as a version-4 UUID, as Redisson names each
// client instance.
func uuid4(cfg Config) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(cfg.Rand.Uint32())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// The three scripts of RedissonLock. KEYS[1] is the lock's hash; ARGV carry
// the lease in ms and the owner's field.
var (
	// tryLockInnerAsync: take a free lock or re-enter one's own (count+1),
	// answering nil; otherwise answer how long the current owner's lease
	// still runs, which is how long a waiter need wait at most.
	redissonAcquire = redis.NewScript(`
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])`)

	// unlockInnerAsync: KEYS[2] is the lock's channel; ARGV[1] the unlock
	// message, ARGV[2] the lease, ARGV[3] the field. nil: not held by this
	// owner; 0: still held (a reentry was released); 1: freed and waiters
	// woken.
	redissonRelease = redis.NewScript(`
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1`)

	// renewExpirationAsync: extend only while this owner's field is there.
	redissonRenew = redis.NewScript(`
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0`)
)

// redissonUnlockMessage is LockPubSub.UNLOCK_MESSAGE.
const redissonUnlockMessage = 0

// redissonChannel is the channel a lock's unlocks are published on.
func redissonChannel(key string) string { return "redisson_lock__channel:{" + key + "}" }

func (l *ReentrantWatchdog) Acquire(ctx context.Context, key string) (Lease, error) {
	lease, _, err := l.tryAcquire(ctx, key)
	return lease, err
}

// tryAcquire runs the acquire script once. When another owner holds the
// lock it returns ErrNotAcquired and that owner's remaining lease (negative
// when the key has no expiry).
func (l *ReentrantWatchdog) tryAcquire(ctx context.Context, key string) (Lease, time.Duration, error) {
	res, err := redissonAcquire.Run(ctx, l.cfg.Nodes[0], []string{key}, l.lease.Milliseconds(), l.field).Result()
	if errors.Is(err, redis.Nil) {
		return l.granted(key), 0, nil
	}
	if err != nil {
		return Lease{}, 0, err
	}
	pttl, ok := res.(int64)
	if !ok {
		return Lease{}, 0, fmt.Errorf("reentrant-watchdog: acquire script answered %v (%T), want nil or a PTTL", res, res)
	}
	return Lease{}, time.Duration(pttl) * time.Millisecond, fmt.Errorf("%w: held by another owner for %d ms more", ErrNotAcquired, pttl)
}

// granted counts a successful acquire and, for the outermost one, starts the
// watchdog (Redisson's scheduleExpirationRenewal).
func (l *ReentrantWatchdog) granted(key string) Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.renewals[key]
	if r == nil {
		r = &renewal{lost: make(chan struct{})}
		if l.watchdog {
			ctx, cancel := context.WithCancel(context.Background())
			r.cancel = cancel
			go l.watch(ctx, key, r)
		}
		l.renewals[key] = r
	}
	r.holds++
	lease := Lease{Key: key, Owner: l.field, Token: l.field}
	if l.watchdog {
		lease.Lost = r.lost
	}
	return lease
}

// watch renews key's lease every third of it while this client holds it.
// It ends when the outermost release cancels it, when a renewal finds the
// field gone (closing lost: the client learns it lost the lock), or, as in
// Redisson before 3.44.0, when a renewal fails: Redisson logged "Can't
// update lock expiration" and stopped renewing without telling the owner,
// whose lease then ran out under it (redisson#775; #2515 and #3194 were
// about the entry it left behind, which kept later locks of the same name
// from being renewed at all, fixed in 3.12.1 and 3.14.0). With
// keepRenewing it logs the failure and renews again at the next tick, as
// Redisson's renewal scheduler does since 3.44.0 (RenewalTask.run
// reschedules after an error).
func (l *ReentrantWatchdog) watch(ctx context.Context, key string, r *renewal) {
	t := time.NewTicker(l.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := redissonRenew.Run(ctx, l.cfg.Nodes[0], []string{key}, l.lease.Milliseconds(), l.field).Int64()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && l.keepRenewing:
			fmt.Fprintf(os.Stderr, "reentrant-watchdog: can't update lock %s expiration, renewing again in %v: %v\n", key, l.lease/3, err)
		case err != nil:
			fmt.Fprintf(os.Stderr, "reentrant-watchdog: can't update lock %s expiration, watchdog stopped: %v\n", key, err)
			l.forget(key, r)
			return
		case n == 0:
			l.mu.Lock()
			releasing := r.releasing
			l.mu.Unlock()
			l.forget(key, r)
			if !releasing {
				close(r.lost)
			}
			return
		}
	}
}

// forget drops key's renewal entry if it is still r.
func (l *ReentrantWatchdog) forget(key string, r *renewal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renewals[key] == r {
		delete(l.renewals, key)
	}
}

// Release leaves one level of the lock; the last one deletes the hash and
// publishes the unlock. As in Redisson, the local count (and with it the
// watchdog) goes down whatever the answer.
func (l *ReentrantWatchdog) Release(ctx context.Context, lease Lease) error {
	l.mu.Lock()
	if r := l.renewals[lease.Key]; r != nil && r.holds <= 1 {
		r.releasing = true
	}
	l.mu.Unlock()
	res, err := redissonRelease.Run(ctx, l.cfg.Nodes[0], []string{lease.Key, redissonChannel(lease.Key)},
		redissonUnlockMessage, l.lease.Milliseconds(), l.field).Result()
	l.released(lease.Key)
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	if err != nil {
		return err
	}
	if n, ok := res.(int64); !ok || (n != 0 && n != 1) {
		return fmt.Errorf("reentrant-watchdog: release script answered %v (%T), want nil, 0 or 1", res, res)
	}
	return nil
}

// released is Redisson's cancelExpirationRenewal.
func (l *ReentrantWatchdog) released(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.renewals[key]
	if r == nil {
		return
	}
	if r.holds--; r.holds <= 0 {
		if r.cancel != nil {
			r.cancel()
		}
		delete(l.renewals, key)
	}
}

// AcquireWait is Redisson's tryLock(waitTime): try; if held, subscribe to
// the lock's channel and retry whenever an unlock is published, or at the
// latest when the holder's lease (as the failed attempt reported it) runs
// out, until wait has passed.
func (l *ReentrantWatchdog) AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	deadline := time.Now().Add(wait)
	lease, _, err := l.tryAcquire(ctx, key)
	if !errors.Is(err, ErrNotAcquired) {
		return lease, err
	}
	ps := l.cfg.Nodes[0].Subscribe(ctx, redissonChannel(key))
	defer ps.Close()
	// Wait for the subscription to be confirmed before trying again, so that
	// an unlock published after that attempt cannot be missed.
	subCtx, cancel := context.WithDeadline(ctx, deadline)
	_, serr := ps.Receive(subCtx)
	cancel()
	subscribed := serr == nil
	for {
		var pttl time.Duration
		lease, pttl, err = l.tryAcquire(ctx, key)
		if !errors.Is(err, ErrNotAcquired) {
			return lease, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return Lease{}, err
		}
		d := left
		if pttl >= 0 && pttl < d {
			d = pttl
		}
		d = max(d, time.Millisecond) // a zero timeout would block for good
		if !subscribed {
			// Without a subscription (it failed), fall back to waiting
			// out the holder's lease.
			time.Sleep(d)
			continue
		}
		if _, rerr := ps.ReceiveTimeout(ctx, d); rerr != nil && !isTimeout(rerr) {
			subscribed = false
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Lease is Redisson's internalLockLeaseTime: the watchdog timeout (the TTL
// unless set), or the explicit lease time.
func (l *ReentrantWatchdog) Lease() time.Duration { return l.lease }
