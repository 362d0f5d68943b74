package cluster

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// shimForTest finds the clock shim, building it with `make shim` when it is
// missing and make and gcc are there; otherwise the test fails with the
// lookup's message, which says what to do.
func shimForTest(t *testing.T) string {
	t.Helper()
	if p, err := ClockShim(); err == nil {
		return p
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("make", "-C", root, "shim").CombinedOutput(); err != nil {
		t.Logf("make shim: %v\n%s", err, out)
	}
	p, err := ClockShim()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The clock shim really moves Redis's expiry clock: a forward jump shortens
// a key's PTTL by the jump and expires keys whose TTL it passes; a faster
// rate makes keys expire early in real time; a reset brings the clock back.
func TestClockShimShiftsRedisExpiry(t *testing.T) {
	shim := shimForTest(t)
	local, err := NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	clock, err := NewClock(filepath.Join(t.TempDir(), "n.clock"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := local.StartNode(context.Background(), NodeSpec{Name: "clock", ClockShim: shim, ClockFile: clock.Path()})
	if err != nil {
		t.Fatalf("redis-server under the clock shim did not start (the libfaketime hang would show here): %v", err)
	}
	defer n.Stop()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	pttl := func(key string) time.Duration {
		t.Helper()
		d, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	set := func(key string, ttl time.Duration) {
		t.Helper()
		if err := rdb.Set(ctx, key, "v", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The shim looks at its file at most once per millisecond.
	settle := func() { time.Sleep(5 * time.Millisecond) }

	set("a", 10*time.Second)
	set("b", 3*time.Second)
	before, asked := pttl("a"), time.Now()
	if err := clock.Set(5*time.Second, 1); err != nil {
		t.Fatal(err)
	}
	settle()
	after := pttl("a")
	elapsed := time.Since(asked) // real time between the two questions
	t.Logf("jump +5s: PTTL of a 10 s key went from %v to %v; the 3 s key b: %v", before, after, pttl("b"))
	if jumped := before - after; jumped < 5*time.Second-2*time.Millisecond || jumped > 5*time.Second+elapsed+2*time.Millisecond {
		t.Errorf("PTTL fell by %v after a 5 s jump and %v of real time, want 5 s more than the real time", jumped, elapsed)
	}
	if n, _ := rdb.Exists(ctx, "b").Result(); n != 0 {
		t.Error("a key whose TTL the jump passed still exists")
	}
	if got := clock.Offset(); got < 5*time.Second || got > 5100*time.Millisecond {
		t.Errorf("Offset() = %v, want 5s", got)
	}

	// Back to the real clock: a (set before the jump) regains its time.
	if err := clock.Set(0, 1); err != nil {
		t.Fatal(err)
	}
	settle()
	if d := pttl("a"); d < 9*time.Second {
		t.Errorf("after the reset a's PTTL is %v, want about 10 s again", d)
	}

	// Rate 10: a 1 s key lives about 100 ms of real time.
	if err := clock.Set(0, 10); err != nil {
		t.Fatal(err)
	}
	settle()
	set("c", time.Second)
	start := time.Now()
	for {
		if n, _ := rdb.Exists(ctx, "c").Result(); n == 0 {
			break
		}
		if time.Since(start) > 900*time.Millisecond {
			t.Fatal("at 10× clock speed a 1 s key lived 900 ms of real time")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// It cannot have gone sooner than a tenth of its TTL (less a little for
	// the rounding of the clock's reads); how much later it went depends on
	// how busy the machine is, and only the 900 ms above says the clock was
	// not sped up at all.
	t.Logf("rate 10: a 1 s key expired after %v of real time", time.Since(start).Round(time.Millisecond))
	if lived := time.Since(start); lived < 60*time.Millisecond {
		t.Errorf("at rate 10 a 1 s key lived %v, want about 100 ms", lived)
	}
}

func TestMissingShimSaysMakeShim(t *testing.T) {
	t.Setenv(ShimEnv, filepath.Join(t.TempDir(), "nope.so"))
	if _, err := ClockShim(); err == nil || !strings.Contains(err.Error(), ShimEnv) {
		t.Errorf("error %v, want one naming %s", err, ShimEnv)
	}
	t.Setenv(ShimEnv, "")
	t.Chdir(t.TempDir())
	if p, err := ClockShim(); err == nil {
		t.Skipf("found a shim beside the test binary (%s)", p)
	} else if !strings.Contains(err.Error(), "make shim") {
		t.Errorf("error %v, want one that says make shim", err)
	}
}
