package locks

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Lua is a lock whose acquire, release and (optionally) renew are Lua
// scripts read from a file, so lock algorithms can be compared without
// writing Go. locks/lua/token.lua reimplements token-lua this way. The
// files in locks/lua are bundled in the binary: lua.file=builtin:token.lua
// names one of them, from any directory; any other value is a path.
//
// The file is split by marker lines:
//
//	-- @acquire
//	-- @release
//	-- @renew      (optional: without it the lock cannot be renewed)
//
// Text before the first marker is a prelude prepended to every script (for
// shared helper functions). Every script gets the same keys and arguments:
//
//	KEYS[1]  the lock key
//	KEYS[2]  a companion key for the lock's own bookkeeping, e.g. a fencing
//	         counter (<key>:fencing-token; it is never expired for you)
//	ARGV[1]  a token unique to this acquire; release and renew get the token
//	         of the acquire that granted the lease
//	ARGV[2]  the TTL in milliseconds
//	ARGV[3]  the client's identity, stable for the client's life (for
//	         reentrant designs)
//
// and answers:
//
//	acquire  1: acquired; {1, fence}: acquired with fencing token fence > 0
//	         (carried to every resource operation); 0 or nil: held by
//	         someone else
//	release  1: released; 0 or nil: this lease no longer held the lock
//	renew    1: extended by the TTL; 0 or nil: this lease no longer held it
//
// An error reply, or no reply, leaves the outcome unknown.
type Lua struct {
	cfg                     Config
	path                    string
	acquire, release, renew *redis.Script
}

// LuaRenewing is a Lua lock whose file has a renew script.
type LuaRenewing struct{ *Lua }

func init() {
	Register(Spec{
		Name:        "lua",
		Description: "acquire / release / renew Lua scripts read from a file (see builtin:token.lua, locks/lua/token.lua, for the conventions)",
		Library:     "Lua: your scripts, run by lockchaos",
		Weakness:    "whatever the scripts do",
		Nodes:       1,
		Options:     LuaOptions{},
		New:         newLua,
	})
}

// LuaOptions are Lua's options.
type LuaOptions struct {
	// The help mentions the markers in backquotes, so the tag is an
	// interpreted string.
	File string "opt:\"file\" default:\"\" help:\"the scripts' file: a PATH, or builtin:NAME for one bundled in the binary (builtin:token.lua); sections marked by lines `-- @acquire`, `-- @release`, `-- @renew` (optional)\""
}

// LuaBuiltin prefixes lua.file's name of a script bundled in the binary.
const LuaBuiltin = "builtin:"

// luaFiles are the bundled scripts, locks/lua/*.lua.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// LuaBuiltins lists the bundled scripts, as lua.file names them
// (builtin:token.lua).
func LuaBuiltins() []string {
	names, _ := fs.Glob(luaFiles, "lua/*.lua")
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = LuaBuiltin + path.Base(n)
	}
	return out
}

// readLuaFile reads lua.file: a bundled script (builtin:NAME) or a file.
func readLuaFile(file string) ([]byte, error) {
	name, ok := strings.CutPrefix(file, LuaBuiltin)
	if !ok {
		return os.ReadFile(file)
	}
	if b, err := luaFiles.ReadFile("lua/" + name); err == nil && !strings.Contains(name, "/") {
		return b, nil
	}
	return nil, fmt.Errorf("no bundled script %s: want one of %s, or a path", file, strings.Join(LuaBuiltins(), ", "))
}

// newLua reads and splits the file (a local read, so that a missing file is
// a usage error before anything starts). The file is required, but checked
// here rather than by a Validate method, so that lua's defaults decode like
// every other lock's.
func newLua(cfg Config) (Locker, error) {
	path := cfg.Options.(*LuaOptions).File
	if path == "" {
		return nil, errors.New("option lua.file is required: --opt lua.file=PATH, or builtin:NAME for a bundled script (for example builtin:token.lua)")
	}
	src, err := readLuaFile(path)
	if err != nil {
		return nil, fmt.Errorf("option lua.file: %w", err)
	}
	scripts, err := ParseLuaLock(string(src))
	if err != nil {
		return nil, fmt.Errorf("option lua.file=%s: %w", path, err)
	}
	l := &Lua{cfg: cfg, path: path, acquire: redis.NewScript(scripts["acquire"]), release: redis.NewScript(scripts["release"])}
	if scripts["renew"] == "" {
		return l, nil
	}
	l.renew = redis.NewScript(scripts["renew"])
	return LuaRenewing{l}, nil
}

var luaMarker = regexp.MustCompile(`^--\s*@([a-z]+)\s*$`)

// ParseLuaLock splits a lua lock file into its scripts, by name, each with
// the prelude prepended. acquire and release are required.
func ParseLuaLock(src string) (map[string]string, error) {
	var prelude strings.Builder
	bodies := map[string]*strings.Builder{}
	var cur *strings.Builder = &prelude
	sc := bufio.NewScanner(strings.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := luaMarker.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			name := m[1]
			if name != "acquire" && name != "release" && name != "renew" {
				return nil, fmt.Errorf("line %d: unknown section %q (want acquire, release or renew)", n, name)
			}
			if bodies[name] != nil {
				return nil, fmt.Errorf("line %d: section %s given twice", n, name)
			}
			cur = &strings.Builder{}
			bodies[name] = cur
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	out := map[string]string{}
	for name, b := range bodies {
		if strings.TrimSpace(b.String()) == "" {
			return nil, fmt.Errorf("section %s is empty", name)
		}
		out[name] = prelude.String() + b.String()
	}
	for _, name := range []string{"acquire", "release"} {
		if out[name] == "" {
			return nil, fmt.Errorf("no `-- @%s` section", name)
		}
	}
	return out, nil
}

// Preflight loads every script on every node (SCRIPT LOAD): Redis compiles
// it then, so a syntax error is reported before the run, with Redis's own
// message, rather than as acquires that all failed.
func (l *Lua) Preflight(ctx context.Context, nodes []*redis.Client) error {
	for _, s := range []struct {
		name string
		s    *redis.Script
	}{{"acquire", l.acquire}, {"release", l.release}, {"renew", l.renew}} {
		if s.s == nil {
			continue
		}
		for _, n := range nodes {
			var rerr redis.Error
			if err := s.s.Load(ctx, n).Err(); errors.As(err, &rerr) {
				return fmt.Errorf("option lua.file=%s: Redis rejects the %s script: %v", l.path, s.name, err)
			}
		}
	}
	return nil
}

func (l *Lua) run(ctx context.Context, s *redis.Script, key, token string) (any, error) {
	return s.Run(ctx, l.cfg.Nodes[0], []string{key, FenceCounterKey(key)}, token, l.cfg.TTL.Milliseconds(), l.cfg.Owner).Result()
}

func (l *Lua) Acquire(ctx context.Context, key string) (Lease, error) {
	token := randomToken(l.cfg.Owner, l.cfg.Rand)
	res, err := l.run(ctx, l.acquire, key, token)
	if errors.Is(err, redis.Nil) {
		return Lease{}, ErrNotAcquired
	}
	if err != nil {
		return Lease{}, fmt.Errorf("lua acquire: %w", err)
	}
	lease := Lease{Key: key, Owner: l.cfg.Owner, Token: token}
	switch v := res.(type) {
	case int64:
		switch v {
		case 0:
			return Lease{}, ErrNotAcquired
		case 1:
			return lease, nil
		}
	case []any:
		if len(v) == 2 && v[0] == int64(1) {
			if fence, ok := v[1].(int64); ok && fence > 0 {
				lease.Fence = fence
				return lease, nil
			}
		}
	}
	return Lease{}, fmt.Errorf("lua acquire answered %v (%T): want 1, {1, fence} or 0", res, res)
}

func (l *Lua) Release(ctx context.Context, lease Lease) error {
	return l.one(ctx, "release", l.release, lease)
}

// Renew runs the renew script.
func (l LuaRenewing) Renew(ctx context.Context, lease Lease) (Lease, error) {
	return lease, l.one(ctx, "renew", l.renew, lease)
}

// one runs a release or renew script: 1 held, 0 or nil not held.
func (l *Lua) one(ctx context.Context, what string, s *redis.Script, lease Lease) error {
	res, err := l.run(ctx, s, lease.Key, lease.Token)
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	if err != nil {
		return fmt.Errorf("lua %s: %w", what, err)
	}
	switch res {
	case int64(1):
		return nil
	case int64(0):
		return ErrNotHeld
	}
	return fmt.Errorf("lua %s answered %v (%T): want 1 or 0", what, res, res)
}
