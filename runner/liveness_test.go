package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/runner/runtest"
	"github.com/lockchaos/lockchaos/settings"
)

// renewAfterRelease is a lock written for the liveness tests, with a bug a
// hand-rolled watchdog often has: every acquire starts a renewal that sets
// the key again every third of the TTL, and the release deletes the key
// but never stops it. The key comes back under a token nobody holds, and
// nobody can take it again while the client lives. Safe, and stuck.
//
// The renewal sets the watchdog's own lease, ten TTLs (as Redisson's
// watchdog renews to lockWatchdogTimeout whatever lease the lock was
// taken with), so that the orphan outlives the client's exit until the
// run's end probe reads it: with a renewal to one 300 ms TTL, a machine
// busy enough to take 0.9 s between the workers' stop and the probe let
// the key expire first (make test beside the CPU hogs, 2026-11-27).
type renewAfterRelease struct {
	cfg locks.Config
}

func init() {
	locks.Register(locks.Spec{
		Name:        "test-renew-after-release",
		Description: "test lock: token SET NX PX whose renewal (SET … PX every ttl/3) outlives its release",
		Nodes:       1,
		New:         func(cfg locks.Config) (locks.Locker, error) { return &renewAfterRelease{cfg: cfg}, nil },
	})
}

var compareAndDelete = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

func (l *renewAfterRelease) Acquire(ctx context.Context, key string) (locks.Lease, error) {
	token := fmt.Sprintf("%s-%x", l.cfg.Owner, l.cfg.Rand.Uint64())
	ok, err := l.cfg.Nodes[0].SetNX(ctx, key, token, l.cfg.TTL).Result()
	switch {
	case err != nil:
		return locks.Lease{}, err
	case !ok:
		return locks.Lease{}, locks.ErrNotAcquired
	}
	go func() { // the bug: nothing ever stops it
		for {
			time.Sleep(l.cfg.TTL / 3)
			c, cancel := context.WithTimeout(context.Background(), l.cfg.TTL)
			l.cfg.Nodes[0].Set(c, key, token, 10*l.cfg.TTL)
			cancel()
		}
	}()
	return locks.Lease{Key: key, Owner: l.cfg.Owner, Token: token}, nil
}

func (l *renewAfterRelease) Release(ctx context.Context, lease locks.Lease) error {
	n, err := compareAndDelete.Run(ctx, l.cfg.Nodes[0], []string{lease.Key}, lease.Token).Int()
	switch {
	case err != nil:
		return err
	case n == 0:
		return locks.ErrNotHeld
	}
	return nil
}

// A lock whose renewal outlives its release keeps its key from everyone:
// stuck, beside a safe verdict, and its key is held by nobody the history
// knows at the end.
func TestRenewalThatOutlivesItsReleaseIsStuck(t *testing.T) {
	t.Parallel()
	c := runtest.Config(t, "test-renew-after-release")
	res := runtest.RunChecked(t, c)
	if res.Verdict != checker.Safe {
		t.Errorf("verdict %s, want safe: %s", res.Verdict, res.Summary)
	}
	if len(res.Liveness.Stuck) == 0 || !strings.Contains(res.Summary, "liveness: stuck") {
		t.Fatalf("no key stuck: %+v: %s", res.Liveness, res.Summary)
	}
	if st := res.Liveness.Stuck[0]; st.OutsideFaultsMs < res.Liveness.StuckAfterMs || st.Tries < 10 {
		t.Errorf("stuck %+v, want at least %v ms outside faults and many tries", st, res.Liveness.StuckAfterMs)
	}
	if len(res.Liveness.Orphans) == 0 {
		t.Errorf("the key re-created by the renewal is not said to be held by nobody the history knows: %+v", res.Liveness)
	}
}

// token-lua under kill-client is not stuck: the killed holder's key frees
// itself when its lease runs out.
func TestKilledHolderOfTokenLuaDoesNotStickItsKey(t *testing.T) {
	t.Parallel()
	c := runtest.Config(t, "token-lua", "kill-client")
	res := runtest.RunChecked(t, c)
	if res.Evidence.Landed == 0 {
		t.Fatalf("no kill landed: %s", res.Summary)
	}
	if len(res.Liveness.Stuck) > 0 {
		t.Errorf("token-lua got stuck after a kill: %+v: %s", res.Liveness.Stuck, res.Summary)
	}
	if len(res.Liveness.Keys) != 1 || res.Liveness.Keys[0].LongestMs >= res.Liveness.StuckAfterMs {
		t.Errorf("keys %+v: the longest span without a holder should be under %v ms", res.Liveness.Keys, res.Liveness.StuckAfterMs)
	}
}

// A ZooKeeper recipe that takes a create without an answer as "not
// acquired" and leaves its node (zk-lock.protect=false) orphans that node
// when the reply of a create is lost: its session lives on, so nobody can
// take the key again — stuck, and the fault that lost the reply landed.
// The recipe with protection (the default) deletes such a node and stays
// available under the same fault.
func TestZooKeeperOrphanedNodeIsStuck(t *testing.T) {
	t.Parallel()
	// Replies are reset on every link for 0.3 s, well inside the 1 s
	// session: the creates sent then run, their answers are lost, and the
	// sessions that made them live on.
	config := func(t *testing.T, protect string) settings.Run {
		c := runtest.FaultConfig(t, "zk-lock", []string{"reset-peer"}, "zk-lock.protect="+protect,
			"reset-peer.stream=downstream", "reset-peer.links=all", "reset-peer.duration=0.3ttl", "reset-peer.schedule=at=1s")
		c.TTL, c.Hold, c.Duration = time.Second, 200*time.Millisecond, 6*time.Second
		return c
	}
	t.Run("unprotected", func(t *testing.T) {
		res := runtest.RunChecked(t, config(t, "false"))
		if len(res.Liveness.Stuck) == 0 {
			t.Fatalf("no key stuck: %+v: %s", res.Liveness, res.Summary)
		}
		if st := res.Liveness.Stuck[0]; len(st.Faults) == 0 || res.Evidence.Landed == 0 {
			t.Errorf("the reset that orphaned the node did not land: %+v, evidence %+v", st, res.Evidence)
		}
		if res.Verdict != checker.Safe {
			t.Errorf("verdict %s, want safe (stuck is liveness, not safety): %s", res.Verdict, res.Summary)
		}
	})
	t.Run("protected", func(t *testing.T) {
		// Nothing breaks, so the fault does not land (inconclusive): only
		// liveness is asked here.
		res, err := runner.Run(context.Background(), config(t, "true"))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Liveness.Stuck) > 0 {
			t.Errorf("the protected recipe got stuck: %+v: %s", res.Liveness.Stuck, res.Summary)
		}
	})
}
