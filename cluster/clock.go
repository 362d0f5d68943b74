package cluster

import (
	"errors"
	"fmt"
	"math"
	"os"
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

// ClockShim finds the clock shim library that `make shim` builds from
// cluster/clockshim/clockshim.c: $LOCKCHAOS_CLOCKSHIM, else beside this
// executable, else bin/clockshim.so in the working directory or one of its
// parents (the repository, for `go test` and `go run`). The error says how
// to build it.
func ClockShim() (string, error) {
	if p := os.Getenv(ShimEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("clock shim %s (from $%s): %w", p, ShimEnv, err)
		}
		return filepath.Abs(p)
	}
	var tried []string
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), shimName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			p := filepath.Join(dir, "bin", shimName)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			tried = append(tried, p)
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("the clock faults need the clock shim %s, which is not built (looked in %s): run `make shim` (needs gcc), or set $%s to its path",
		shimName, strings.Join(tried, ", "), ShimEnv)
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

// NewClock writes a control file for the real clock at path.
func NewClock(path string) (*Clock, error) {
	c := &Clock{path: path}
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
