// Package runner is the coordinator of one run: it starts the nodes, the
// proxies and the worker processes, lets the nemeses loose, records the
// history, stops everything in order, and checks what happened.
package runner

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Config is one run.
type Config struct {
	Lock        string
	LockOptions map[string]string
	// Nemeses are nemesis names; empty (or "none") runs without faults.
	Nemeses        []string
	NemesisOptions map[string]map[string]string

	Clients int
	Keys    int
	// Nodes is the number of lock nodes; 0 uses the lock's default.
	Nodes int

	TTL      time.Duration
	Hold     time.Duration
	Duration time.Duration
	// Wait > 0 makes acquires blocking for up to Wait, retrying every Retry.
	Wait  time.Duration
	Retry time.Duration
	// Think is the most a client sleeps between attempts.
	Think time.Duration
	// OpTimeout bounds each Redis operation; 0 means the TTL.
	OpTimeout time.Duration
	// FaultInterval is the quiet time before each fault; 0 means 2×TTL.
	FaultInterval time.Duration
	// CheckTimeout bounds porcupine; 0 uses the checker's default.
	CheckTimeout time.Duration

	Seed int64
	Out  string

	// Backend runs the Redis nodes: "local" (default) or another registered
	// backend; Image is its container image where it uses one.
	Backend string
	Image   string

	// Progress, when set, receives a line every few seconds.
	Progress io.Writer
	// WorkerCommand runs one worker; nil means this executable with
	// LOCKCHAOS_ROLE=worker.
	WorkerCommand []string
}

// UsageError is a problem with the run's configuration that the user fixes.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

func usage(format string, args ...any) error {
	return UsageError{Err: fmt.Errorf(format, args...)}
}

// withDefaults fills zero values and checks ranges.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Lock == "" {
		errs = append(errs, usage("--lock is required (see `lockchaos list`)"))
	}
	if c.Out == "" {
		errs = append(errs, usage("--out DIR is required: where the history and result go"))
	}
	if c.Clients < 1 || c.Clients > 256 {
		errs = append(errs, usage("--clients %d: want 1 to 256", c.Clients))
	}
	if c.Keys < 1 {
		errs = append(errs, usage("--keys %d: want at least 1", c.Keys))
	}
	if c.Nodes < 0 || c.Nodes > 15 {
		errs = append(errs, usage("--nodes %d: want 1 to 15 (or 0 for the lock's default)", c.Nodes))
	}
	if c.TTL < time.Millisecond {
		errs = append(errs, usage("--ttl %v: want at least 1ms", c.TTL))
	}
	if c.Hold < 0 || c.Duration <= 0 || c.Wait < 0 || c.Think < 0 || c.Retry < 0 || c.OpTimeout < 0 || c.FaultInterval < 0 {
		errs = append(errs, usage("durations must not be negative, and --duration must be positive"))
	}
	if c.Backend == "" {
		c.Backend = "local"
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = c.TTL
	}
	if c.FaultInterval == 0 {
		c.FaultInterval = 2 * c.TTL
	}
	if c.Retry == 0 {
		c.Retry = max(c.TTL/10, time.Millisecond)
	}
	var names []string
	for _, n := range c.Nemeses {
		if n != "" && n != "none" {
			names = append(names, n)
		}
	}
	c.Nemeses = names
	return c, errors.Join(errs...)
}

// Validate checks cfg as Run would, without starting anything: names,
// options and ranges. The error is a UsageError saying what to fix, for
// instance that a nemesis does not apply to this lock or topology.
func Validate(cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	_, _, _, err = resolve(cfg)
	return err
}
