package locks_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

func TestParseLuaLock(t *testing.T) {
	for _, tc := range []struct {
		name, src, err string
	}{
		{"prelude is shared", "local x = 1\n-- @acquire\nreturn x\n-- @release\nreturn 1\n", ""},
		{"no release", "-- @acquire\nreturn 1\n", "no `-- @release` section"},
		{"unknown section", "-- @acquire\nreturn 1\n-- @unlock\nreturn 1\n", `unknown section "unlock"`},
		{"twice", "-- @acquire\nreturn 1\n-- @acquire\nreturn 1\n-- @release\nreturn 1\n", "given twice"},
		{"empty", "-- @acquire\n-- @release\nreturn 1\n", "section acquire is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scripts, err := locks.ParseLuaLock(tc.src)
			if tc.err == "" {
				if err != nil || scripts["acquire"] != "local x = 1\nreturn x\n" || scripts["renew"] != "" {
					t.Errorf("scripts %q, error %v", scripts, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}

// outcome names what an operation answered, for comparing two locks.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, locks.ErrNotAcquired):
		return "not-acquired"
	case errors.Is(err, locks.ErrNotHeld):
		return "not-held"
	}
	return "error: " + err.Error()
}

// locks/lua/token.lua and token-lua answer the same sequence of operations
// the same way and leave the same state behind.
func TestLuaTokenFileBehavesLikeTokenLua(t *testing.T) {
	ctx := context.Background()
	ttl := 500 * ms // a few round trips inside each lease, on a busy machine too
	trace := func(name string, opts map[string]string) []string {
		rdb := node(t)
		a := newLock(t, name, rdb, "a", ttl, opts)
		b := newLock(t, name, rdb, "bb", ttl, opts)
		var out []string
		state := func() {
			v := rdb.Get(ctx, "k").Val()
			pttl := rdb.PTTL(ctx, "k").Val()
			out = append(out, "key:"+strings.SplitN(v, ":", 2)[0]+" ttl>0:"+map[bool]string{true: "yes", false: "no"}[pttl > 0])
		}
		la, err := a.Acquire(ctx, "k")
		out = append(out, outcome(err))
		state()
		_, err = b.Acquire(ctx, "k")
		out = append(out, outcome(err))
		_, err = a.(locks.Renewer).Renew(ctx, la)
		out = append(out, outcome(err))
		out = append(out, outcome(a.Release(ctx, la)), outcome(a.Release(ctx, la)))
		state()
		lb, err := b.Acquire(ctx, "k")
		out = append(out, outcome(err))
		state()
		time.Sleep(ttl + 30*ms)
		state()
		la, err = a.Acquire(ctx, "k")
		out = append(out, outcome(err))
		_, err = b.(locks.Renewer).Renew(ctx, lb)
		out = append(out, outcome(err), outcome(b.Release(ctx, lb)))
		state()
		return out
	}
	want := trace("token-lua", nil)
	got := trace("lua", map[string]string{"file": "lua/token.lua"})
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("lua/token.lua:\n  %v\ntoken-lua:\n  %v", got, want)
	}
	// The bundled copy, from a directory with no locks/lua in it.
	t.Chdir(t.TempDir())
	got = trace("lua", map[string]string{"file": "builtin:token.lua"})
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("builtin:token.lua:\n  %v\ntoken-lua:\n  %v", got, want)
	}
}

// The bundled scripts are the files in locks/lua; a name that is not one of
// them says which are.
func TestLuaBuiltinScripts(t *testing.T) {
	names := locks.LuaBuiltins()
	if len(names) == 0 || !slices.Contains(names, "builtin:token.lua") {
		t.Fatalf("bundled scripts %v, want builtin:token.lua among them", names)
	}
	files, _ := filepath.Glob("lua/*.lua")
	if len(files) != len(names) {
		t.Errorf("locks/lua has %v, the binary bundles %v", files, names)
	}
	spec := mustLookup(t, "lua")
	for _, bad := range []string{"builtin:nope.lua", "builtin:../lua.go", "builtin:"} {
		_, err := spec.New(locks.Config{TTL: time.Second, Options: decode(t, spec, map[string]string{"file": bad}, time.Second)})
		if err == nil || !strings.Contains(err.Error(), "want one of builtin:token.lua") {
			t.Errorf("lua.file=%s: %v, want an error listing the bundled scripts", bad, err)
		}
	}
}

// A whole run of the lua lock with the bundled script, started from a
// directory that has no locks/lua (the workers are other processes, which
// load the script themselves): token.lua breaks under a pause past the
// TTL as token-lua does.
func TestLuaBuiltinScriptRunsAnywhere(t *testing.T) {
	c := runCfg(t, "lua", "pause-client")
	c.LockOptions = map[string]string{"file": "builtin:token.lua"}
	t.Chdir(t.TempDir())
	res, _ := run(t, c)
	wantVerdict(t, res, checker.Violation)
}

// An acquire that answers {1, fence} hands out a fencing token; a file
// without a renew section gives a lock that cannot renew.
func TestLuaFencesAndOptionalRenew(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "fenced.lua")
	src := `-- @acquire
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return {1, redis.call("INCR", KEYS[2])}
end
return 0
-- @release
if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end
return 0
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rdb := node(t)
	l := newLock(t, "lua", rdb, "a", time.Second, map[string]string{"file": file})
	if _, ok := l.(locks.Renewer); ok {
		t.Error("a lua lock without a renew section claims to renew")
	}
	for want := int64(1); want <= 2; want++ {
		lease, err := l.Acquire(ctx, "k")
		if err != nil || lease.Fence != want {
			t.Fatalf("acquire %d: fence %d, %v", want, lease.Fence, err)
		}
		if err := l.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	spec := mustLookup(t, "lua")
	if _, err := spec.New(locks.Config{Options: decode(t, spec, nil, time.Second)}); err == nil || !strings.Contains(err.Error(), "lua.file is required") {
		t.Errorf("lua without a file: %v", err)
	}
}

func luaRunCfg(t *testing.T, nemeses ...string) (c settings.Run) {
	file, err := filepath.Abs("lua/token.lua")
	if err != nil {
		t.Fatal(err)
	}
	c = runCfg(t, "lua", nemeses...)
	c.LockOptions = map[string]string{"file": file}
	return c
}

// Renewed by its own renew script, token.lua survives holds longer than its
// TTL; paused past it, it breaks as token-lua does.
func TestLuaTokenFileRuns(t *testing.T) {
	t.Run("renewed-long-holds-are-safe", func(t *testing.T) {
		// A 600 ms lease renewed every 200 ms: a stall of the busy
		// machine shorter than 400 ms loses nothing.
		c := luaRunCfg(t)
		c.TTL = 600 * ms
		c.Renew, c.Hold, c.Duration = true, 2*c.TTL, 3*time.Second
		res, _ := run(t, c)
		wantVerdict(t, res, checker.Safe)
		if res.Release.NotHeld != 0 {
			t.Errorf("%d leases gone at release despite renewals", res.Release.NotHeld)
		}
	})
	t.Run("paused-client-violates", func(t *testing.T) {
		res, _ := run(t, luaRunCfg(t, "pause-client"))
		wantVerdict(t, res, checker.Violation)
	})
}

// A script Redis cannot compile ends the run before any worker starts, as
// a usage error carrying Redis's message, and leaves --out free for the
// corrected run.
func TestLuaScriptThatDoesNotCompileIsAUsageError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.lua")
	src := "-- @acquire\nreturn redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]\n-- @release\nreturn 1\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	_, err := runner.Run(context.Background(), settings.Run{
		Lock:        "lua",
		LockOptions: map[string]string{"file": file},
		Duration:    2 * time.Second,
		Seed:        1,
		Out:         out,
		Workload:    workload.Workload{Clients: 2, Keys: 1, TTL: 300 * time.Millisecond, Hold: 10 * time.Millisecond},
	})
	var ue settings.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "Redis rejects the acquire script") || !strings.Contains(err.Error(), "compiling script") {
		t.Fatalf("error %v, want a usage error with Redis's compile error", err)
	}
	if _, err := os.Stat(filepath.Join(out, "history.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run left a history in --out (%v)", err)
	}
}
