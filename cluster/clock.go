package cluster

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ClockFileEnv names the variable that tells the clock shim where its
// control file is.
const ClockFileEnv = "LOCKCHAOS_CLOCK_FILE"

// ShimEnv overrides where the clock shim library is looked for.
const ShimEnv = "LOCKCHAOS_CLOCKSHIM"

const shimName = "clockshim.so"

// shimSource is cluster/clockshim/clockshim.c, compiled into the binary so
// that an installed lockchaos can build its shim where there is no
// repository (see ClockShim).
//
//go:embed clockshim/clockshim.c
var shimSource []byte

// shimCFlags are the C compiler's flags for the shim: the Makefile's
// (target shim) too.
var shimCFlags = []string{"-O2", "-fPIC", "-shared", "-Wall", "-Wextra"}

// shimBuild serialises the builds of one process (chaos starts runs side by
// side); builds of different processes are safe by their atomic rename.
var shimBuild sync.Mutex

// ClockShim finds the clock shim library, the LD_PRELOAD library of the
// clock faults: $LOCKCHAOS_CLOCKSHIM, else the one `make shim` builds
// (bin/clockshim.so, looked for beside this executable, then in bin/ of the
// working directory or one of its parents: the repository, for `go test`
// and `go run`), else the one compiled from the embedded source into the
// user's cache directory (os.UserCacheDir()/lockchaos/clockshim-HASH.so),
// which it compiles on first use with the system C compiler ($CC, or cc).
// The error says what to install when there is no compiler.
func ClockShim() (string, error) {
	if p := os.Getenv(ShimEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("clock shim %s (from $%s): %w", p, ShimEnv, err)
		}
		return filepath.Abs(p)
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), shimName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			p := filepath.Join(dir, "bin", shimName)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the clock faults need the clock shim, compiled into the user's cache directory, and there is none (%v): set $HOME or $XDG_CACHE_HOME, or build it with `make shim` in the repository and set $%s to its path", err, ShimEnv)
	}
	shimBuild.Lock()
	defer shimBuild.Unlock()
	return compileShim(filepath.Join(cache, "lockchaos"))
}

// shimFile is the name of the shim compiled from this binary's source and
// flags: clockshim-<hash of both>.so, so that a changed source never reuses
// an older build.
func shimFile() string {
	h := sha256.New()
	h.Write(shimSource)
	h.Write([]byte(strings.Join(shimCFlags, " ")))
	return fmt.Sprintf("clockshim-%x.so", h.Sum(nil)[:8])
}

// compileShim returns dir/shimFile(), compiling the embedded source there
// first when it is missing. The compiler writes into a folder of its own in
// dir, and the library is then renamed into place: a reader never sees half
// a library, and processes that compile it at once each get a whole one.
func compileShim(dir string) (string, error) {
	out := filepath.Join(dir, shimFile())
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	cc, err := cCompiler()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "clockshim.c")
	if err := os.WriteFile(src, shimSource, 0o644); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	lib := filepath.Join(tmp, shimName)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(append(append([]string(nil), cc[1:]...), shimCFlags...), "-o", lib, src)
	cmd := exec.CommandContext(ctx, cc[0], args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compile the clock shim (%s): %w\n%s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(string(b)))
	}
	if err := os.Chmod(lib, 0o755); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	if err := os.Rename(lib, out); err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	return out, nil
}

// cCompiler is $CC (a command and its arguments), else cc from $PATH.
func cCompiler() ([]string, error) {
	if cc := strings.Fields(os.Getenv("CC")); len(cc) > 0 {
		p, err := exec.LookPath(cc[0])
		if err != nil {
			return nil, fmt.Errorf("the clock faults need the clock shim, which lockchaos compiles on first use, but the C compiler $CC=%q is not there (%v): install it, or unset CC to use cc (Debian/Ubuntu: apt-get install -y gcc)", os.Getenv("CC"), err)
		}
		return append([]string{p}, cc[1:]...), nil
	}
	p, err := exec.LookPath("cc")
	if err != nil {
		return nil, errors.New("the clock faults need the clock shim, which lockchaos compiles on first use with the system C compiler, and there is none (no cc in $PATH, $CC unset): install one, on Debian/Ubuntu as root `apt-get install -y gcc` (or `sudo apt-get install -y gcc`), or set $CC")
	}
	return []string{p}, nil
}

// Clock is the control file of one node's clock shim: the node's wall clock
// runs at real time + offset, at a rate, from the moment it was last set.
// The file holds "<offset_ns> <rate_ppm> <anchor_ns>" (see clockshim.c);
// it is replaced with rename(2), so the shim never reads half a line.
type Clock struct {
	path string

	mu     sync.Mutex
	offset time.Duration // at anchor
	rate   float64
	anchor time.Time
}

// NewClock writes a control file for the real clock at path. Its Path is
// absolute: the process that reads it may run in another folder (an
// adapter runs in its own), and a relative path there names no file — the
// shim would keep the real clock, and a step would never reach it.
func NewClock(path string) (*Clock, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	c := &Clock{path: abs}
	return c, c.Set(0, 1)
}

// Path is the control file, for NodeSpec.ClockFile.
func (c *Clock) Path() string { return c.path }

// Set makes the node's clock read real time + offset now and run at rate
// (1: real speed, 2: twice as fast) from now on.
func (c *Clock) Set(offset time.Duration, rate float64) error {
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return fmt.Errorf("clock rate %v: want a finite rate of at least 0", rate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// time.Now's wall reading is CLOCK_REALTIME, the clock the shim reads.
	now := time.Now()
	line := fmt.Sprintf("%d %d %d\n", offset.Nanoseconds(), int64(math.Round(rate*1e6)), now.UnixNano())
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		return fmt.Errorf("write clock file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return errors.Join(fmt.Errorf("replace clock file %s: %w", c.path, err), os.Remove(tmp))
	}
	c.offset, c.rate, c.anchor = offset, rate, now
	return nil
}

// Offset is how far the node's clock is ahead of the real one right now.
func (c *Clock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset + time.Duration(float64(time.Since(c.anchor))*(c.rate-1))
}

// Rate is how fast the node's clock runs.
func (c *Clock) Rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}
