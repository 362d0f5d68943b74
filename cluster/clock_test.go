package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// shimForTest finds the clock shim (ClockShim: make shim's, or one compiled
// on first use); without a C compiler the test fails with the lookup's
// message, which says what to do.
func shimForTest(t *testing.T) string {
	t.Helper()
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
	clock, rdb := nodeUnderShim(t, shim)
	ctx := context.Background()
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
	asked := time.Now() // before the first question: all real time between the two counts
	before := pttl("a")
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

func TestMissingShimNamesWhatToDo(t *testing.T) {
	t.Setenv(ShimEnv, filepath.Join(t.TempDir(), "nope.so"))
	if _, err := ClockShim(); err == nil || !strings.Contains(err.Error(), ShimEnv) {
		t.Errorf("error %v, want one naming %s", err, ShimEnv)
	}
	// Nothing built anywhere and no C compiler: the error says what to
	// install.
	t.Setenv(ShimEnv, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CC", "")
	t.Chdir(t.TempDir())
	if p, err := ClockShim(); err == nil {
		t.Skipf("found a shim beside the test binary (%s)", p)
	} else if !strings.Contains(err.Error(), "apt-get install -y gcc") {
		t.Errorf("error %v, want one that says apt-get install -y gcc", err)
	}
	t.Setenv("CC", "no-such-cc")
	if _, err := ClockShim(); err == nil || !strings.Contains(err.Error(), `$CC="no-such-cc"`) {
		t.Errorf("error %v, want one naming $CC", err)
	}
}

// Outside the repository (no bin/clockshim.so anywhere) the shim is
// compiled from the embedded source into the user's cache directory, once:
// processes that compile it at the same time each get a whole library, and
// a redis-server started under it really has its clock moved.
func TestClockShimCompiledIntoCacheOnFirstUse(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatalf("no C compiler (%v): apt-get install -y gcc", err)
	}
	t.Setenv(ShimEnv, "")
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Chdir(t.TempDir())
	want := filepath.Join(cache, "lockchaos", shimFile())

	// Builds racing one another, as separate processes would (compileShim
	// takes no lock of its own).
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p string
			if p, errs[i] = compileShim(filepath.Join(cache, "lockchaos")); errs[i] == nil && p != want {
				errs[i] = fmt.Errorf("built %s, want %s", p, want)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(cache, "lockchaos", "*"))
	if len(left) != 1 || left[0] != want {
		t.Errorf("the cache holds %v, want only %s (no build folder left behind)", left, want)
	}
	built, _ := os.Stat(want)

	shim, err := ClockShim()
	if err != nil || shim != want {
		t.Fatalf("ClockShim() = %s, %v; want the cached %s", shim, err, want)
	}
	if again, _ := os.Stat(shim); !os.SameFile(built, again) {
		t.Error("ClockShim compiled the shim again although the cache had it")
	}

	clock, rdb := nodeUnderShim(t, shim)
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := clock.Set(5*time.Second, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the shim looks at its file once per ms at most
	if d := rdb.PTTL(ctx, "k").Val(); d > 5*time.Second {
		t.Errorf("PTTL of a 10 s key after a +5 s jump is %v, want at most 5 s", d)
	}
}

// make shim and the compiled shim use the same flags.
func TestMakefileShimFlags(t *testing.T) {
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if want := "$(CC) " + strings.Join(shimCFlags, " ") + " -o $@ $<"; !strings.Contains(string(b), want) {
		t.Errorf("the Makefile's shim target does not run %q: keep it and shimCFlags (cluster/clock.go) the same", want)
	}
}

// nodeUnderShim starts a redis-server under the clock shim, with its clock
// file, and a client to it; both end with the test.
func nodeUnderShim(t *testing.T, shim string) (*Clock, *redis.Client) {
	t.Helper()
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
	t.Cleanup(func() { n.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	return clock, rdb
}

// A clock made from a relative path (`make chaos` writes its runs under
// results/) still reaches a process that runs in another folder, as an
// adapter does in its own: the path the shim is given is absolute. Before
// it was, such a process kept the real clock and a step never reached it.
func TestAClockFromARelativePathReachesAProcessInAnotherFolder(t *testing.T) {
	shim := shimForTest(t)
	t.Chdir(t.TempDir())
	if err := os.Mkdir("runs", 0o755); err != nil {
		t.Fatal(err)
	}
	clock, err := NewClock(filepath.Join("runs", "client-0.clock"))
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(clock.Path()) {
		t.Fatalf("clock path %q is not absolute", clock.Path())
	}
	const back = 1000 * time.Hour
	if err := clock.Set(-back, 1); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("date", "+%s")
	cmd.Dir = t.TempDir() // elsewhere
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+shim, ClockFileEnv+"="+clock.Path())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("date under the shim: %v", err)
	}
	var secs int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &secs); err != nil {
		t.Fatalf("date said %q: %v", out, err)
	}
	if lag := time.Since(time.Unix(secs, 0)); lag < back-time.Hour || lag > back+time.Hour {
		t.Errorf("a process in another folder reads a clock %v behind, want %v", lag.Round(time.Second), back)
	}
}
