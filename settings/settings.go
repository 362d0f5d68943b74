// Package settings is the schema of a run: every setting a user gives (as a
// flag of `lockchaos run` or in a scenario file), its default, its range
// and its name either way. The runner, the matrix, compare and shrink take
// a Run.
package settings

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/workload"
)

// RunFunc performs one run (runner.Run, or a test's stand-in): the matrix,
// compare and shrink are handed one, and import no runner.
type RunFunc func(context.Context, Run) (checker.Result, error)

// Run is one run's settings. Each setting's tags name it as a flag of `lockchaos
// run` (flag) and as its path in a scenario file (file), so that an error
// about it (SettingError) can name it either way; help makes it a flag
// (BindFlags), {NAME} in it the flag's value.
type Run struct {
	Lock string `flag:"lock" file:"lock.name" help:"the lock to test, a {NAME} from lockchaos list"`
	// LockFile is an adapter lock's manifest (lock.yaml), LockCmd the
	// command line of a quick adapter (store redis, one node): Lock is
	// then the lock they name (docs/protocol.md).
	LockFile    string            `flag:"lock-file" file:"lock.file" json:",omitempty"`
	LockCmd     string            `flag:"lock-cmd" file:"lock.cmd" json:",omitempty" help:"test the adapter that {COMMAND} starts (split into words as a shell would for quotes and backslashes, run in this folder): store redis, one node, nothing claimed — a quick try of an adapter before its lock.yaml"`
	LockOptions map[string]string `flag:"opt" file:"lock.options"`
	// Nemeses are nemesis names; empty (or "none") runs without faults.
	Nemeses        []string                     `flag:"nemesis" file:"faults.nemeses"`
	NemesisOptions map[string]map[string]string `flag:"opt" file:"faults.nemeses"`

	// What the servers and the clients do: declared where they are used.
	cluster.Topology
	workload.Workload

	Duration time.Duration `flag:"duration" file:"duration" help:"how long the workload runs"`
	// FaultInterval is the quiet time before each fault; 0 means 2×TTL.
	FaultInterval time.Duration `flag:"fault-interval" file:"faults.interval" help:"quiet time before each fault (0: 2×TTL)"`
	// StopOnViolation ends the run at the first overlap the live check
	// sees (faults healed, workers stopped, the history kept and checked
	// whole) instead of running out its duration.
	StopOnViolation bool `flag:"stop-on-violation" file:"stop-on-violation" help:"end the run soon after the first violation the live check sees (2×TTL+hold later, so the damage lands), faults healed and the history kept"`
	// CheckTimeout bounds porcupine; 0 uses the checker's default.
	CheckTimeout time.Duration `flag:"check-timeout" span:"plain" help:"porcupine time limit (0: 60s); past it the verdict is inconclusive"`

	Seed int64  `flag:"seed" file:"seed" help:"random seed for clients and faults (0: pick one and print it)"`
	Out  string `flag:"out" help:"output directory (default results/run-<time>); one that holds a run is refused"`
	// Force lets a run replace an earlier run in Out; without it a folder
	// that holds one is refused (its evidence would be overwritten). A run
	// still live there is refused either way (rundir.Claim).
	Force bool `json:"-"`

	// Direct connects clients straight to the lock nodes, bypassing the
	// per-link proxies: only to measure what the proxies cost (make bench).
	// No nemesis may run then.
	Direct bool

	// Replay, when set, is a schedule a run executed (its schedule.json):
	// every nemesis takes those steps instead of drawing its own.
	Replay *nemesis.Timetable `json:"-"`

	// Progress, when set, receives a line every few seconds.
	Progress io.Writer `json:"-"`
	// WorkerCommand runs one worker; nil means this executable with
	// LOCKCHAOS_ROLE=worker.
	WorkerCommand []string `json:"-"`
}

// Defaults of the run's settings that a user may leave out, for every way
// of giving them (flags, scenario files); the ones for which 0 means
// something (hold, think) apply where the setting was not given at all.
// Those that follow from the TTL (retry, op timeout, fault interval) are
// filled in by WithDefaults. The seed has no default here: `lockchaos run`
// picks one and prints it, a scenario file fixes one (scenarios.DefaultSeed)
// so that the matrix is the same from run to run.
const (
	DefaultClients  = 4
	DefaultKeys     = 1
	DefaultTTL      = 500 * time.Millisecond
	DefaultHold     = 100 * time.Millisecond
	DefaultThink    = 10 * time.Millisecond
	DefaultDuration = 10 * time.Second
)

// ParsePersistence reads the lock nodes' persistence: none (also ""),
// everysec or always (AOF with that appendfsync).
func ParsePersistence(s string) (string, error) {
	switch s {
	case "":
		return "none", nil
	case "none", "everysec", "always":
		return s, nil
	}
	return "", fmt.Errorf("%q: want none, everysec or always (AOF with that appendfsync)", s)
}

// UsageError is a problem with the run's configuration that the user fixes.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// StartError is a run whose store's servers did not start (runner wraps
// Store.Start's error in it): a missing server, or one that did not answer
// in time on a machine too busy for it. It says nothing about the lock, so
// the matrix and compare run such a run again, as they do one that was no
// evidence; one that keeps failing is reported as the error it is.
type StartError struct{ Err error }

func (e StartError) Error() string { return e.Err.Error() }
func (e StartError) Unwrap() error { return e.Err }

// IsStartError says whether err is (or wraps) a StartError.
func IsStartError(err error) bool { return errors.As(err, new(StartError)) }

// Usage is a UsageError saying what to fix.
func Usage(format string, args ...any) error {
	return UsageError{Err: fmt.Errorf(format, args...)}
}

// SettingError is a bad value of one of the run's settings. Setting is the
// Run field's name; Error names it as a flag ("--clients 300: want 1 to
// 256"), and a scenario file by its path and line (Path).
type SettingError struct {
	Setting string
	Msg     string
}

func (e *SettingError) Error() string { return "--" + settingTag(e.Setting, "flag") + " " + e.Msg }

// Path is the setting's path in a scenario file ("workload.clients").
func (e *SettingError) Path() string { return settingTag(e.Setting, "file") }

func settingTag(field, tag string) string {
	f, ok := reflect.TypeFor[Run]().FieldByName(field)
	if !ok {
		panic("settings: no setting " + field)
	}
	return f.Tag.Get(tag)
}

func bad(setting, format string, args ...any) error {
	return UsageError{Err: &SettingError{Setting: setting, Msg: fmt.Sprintf(format, args...)}}
}

// WithDefaults fills zero values and checks ranges.
func (c Run) WithDefaults() (Run, error) {
	var errs []error
	if c.LockFile == "" && c.LockCmd == "" && c.Lock != "" {
		// A lock of --lock-file run by name (compare, chaos, audit): its run
		// records the manifest, and replays from its folder alone.
		c.LockFile = locks.GivenFile(c.Lock)
	}
	if c.LockFile != "" || c.LockCmd != "" {
		if spec, err := c.LockSpec(); err != nil {
			errs = append(errs, UsageError{Err: err})
		} else {
			c.Lock = spec.Name
		}
	} else if c.Lock == "" {
		errs = append(errs, Usage("--lock is required (see `lockchaos list`)"))
	}
	if c.Out == "" {
		errs = append(errs, Usage("--out DIR is required: where the history and result go"))
	}
	errs = append(errs, c.rangeErrors()...)
	if c.Direct && len(c.Nemeses) > 0 && !(len(c.Nemeses) == 1 && c.Nemeses[0] == "none") {
		errs = append(errs, Usage("direct connections (no proxies) are for benchmarks only: no nemesis can run"))
	}
	if c.Backend == "" {
		c.Backend = "local"
	}
	if p, err := ParsePersistence(c.Persistence); err == nil {
		c.Persistence = p
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

// rangeErrors checks each setting's value on its own and against the
// others: the one place where the run's ranges are written.
func (c Run) rangeErrors() []error {
	var errs []error
	if c.Clients < 1 || c.Clients > 256 {
		errs = append(errs, bad("Clients", "%d: want 1 to 256", c.Clients))
	}
	if c.Keys < 1 {
		errs = append(errs, bad("Keys", "%d: want at least 1", c.Keys))
	}
	if c.Nodes < 0 || c.Nodes > 15 {
		errs = append(errs, bad("Nodes", "%d: want 1 to 15 (or 0 for the lock's default)", c.Nodes))
	}
	if c.TTL < time.Millisecond {
		errs = append(errs, bad("TTL", "%v: want at least 1ms", c.TTL))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"Hold", c.Hold}, {"Wait", c.Wait}, {"Think", c.Think}, {"Retry", c.Retry}, {"OpTimeout", c.OpTimeout}, {"FaultInterval", c.FaultInterval}} {
		if d.d < 0 {
			errs = append(errs, bad(d.name, "%v: must not be negative", d.d))
		}
	}
	switch {
	case c.Duration <= 0:
		errs = append(errs, bad("Duration", "%v: want a positive duration such as 6s", c.Duration))
	case c.Hold >= c.Duration:
		errs = append(errs, bad("Hold", "%v is not shorter than the run's duration %v: no hold would finish; shorten the hold or lengthen the run", c.Hold, c.Duration))
	}
	if c.Reentry < 0 || c.Reentry > 1 {
		errs = append(errs, bad("Reentry", "%v: want a probability from 0 to 1", c.Reentry))
	}
	if err := cluster.Known(orLocal(c.Backend)); err != nil {
		errs = append(errs, bad("Backend", "%s: %v", c.Backend, err))
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		errs = append(errs, bad("Replicas", "%d: want 0 to 5 per lock node", c.Replicas))
	}
	if c.Sentinels < 0 || c.Sentinels > 7 {
		errs = append(errs, bad("Sentinels", "%d: want 0 to 7 (3 is usual)", c.Sentinels))
	}
	if c.Sentinels > 0 && c.Replicas == 0 {
		errs = append(errs, bad("Sentinels", "%d without replicas: sentinels promote a replica, so add replicas (--replicas 1 or more)", c.Sentinels))
	}
	if c.Pooler != "" && c.Pooler != cluster.PoolerPgBouncer {
		errs = append(errs, bad("Pooler", "%q: want %s (or leave it out: no pooler)", c.Pooler, cluster.PoolerPgBouncer))
	}
	if _, err := ParsePersistence(c.Persistence); err != nil {
		errs = append(errs, bad("Persistence", "%v", err))
	}
	if err := checkLockCapabilities(c); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func orLocal(backend string) string {
	if backend == "" {
		return "local"
	}
	return backend
}

// CheckSettings checks the settings' values and ranges as Run would,
// without looking up the lock or the nemeses: the errors are UsageErrors
// wrapping a SettingError for each bad setting.
func CheckSettings(cfg Run) error { return errors.Join(cfg.rangeErrors()...) }

// checkLockCapabilities refuses --renew for a lock that cannot renew and
// --reentry for one that is not reentrant. An unknown lock or bad options
// are left to resolve, which names them.
func checkLockCapabilities(c Run) error {
	if !c.Renew && c.Reentry == 0 {
		return nil
	}
	spec, err := locks.Lookup(c.Lock)
	if err != nil {
		return nil
	}
	l, used, err := spec.Probe(c.LockOptions, c.TTL)
	if err != nil {
		return nil
	}
	if c.Reentry > 0 && !spec.For(used).Reentrant {
		return bad("Reentry", "%v: lock %s is not reentrant (reentrant locks: %s)", c.Reentry, spec.Name, lockNames(func(s locks.Spec, _ locks.Locker) bool { return s.Reentrant }, c.TTL))
	}
	if c.Renew {
		if _, ok := l.(locks.Renewer); !ok {
			return bad("Renew", "true: lock %s cannot renew a lease, or renews it by itself (locks that renew applies to: %s)", spec.Name,
				lockNames(func(_ locks.Spec, l locks.Locker) bool { _, ok := l.(locks.Renewer); return ok }, c.TTL))
		}
	}
	return nil
}

// lockNames lists the registered locks (with default options) that pass ok.
func lockNames(ok func(locks.Spec, locks.Locker) bool, ttl time.Duration) string {
	var names []string
	for _, s := range locks.All() {
		if l, _, err := s.Probe(nil, ttl); err == nil && ok(s, l) {
			names = append(names, s.Name)
		}
	}
	return strings.Join(names, ", ")
}

// LockSpec finds the run's lock: a registered one by name, or the adapter
// of --lock-file or --lock-cmd.
func (c Run) LockSpec() (locks.Spec, error) {
	var s locks.Spec
	var err error
	switch {
	case c.LockFile != "":
		s, err = locks.RegisterFile(c.LockFile)
	case c.LockCmd != "":
		var m *locks.Manifest
		if m, err = locks.QuickManifest(c.LockCmd, "."); err == nil {
			s = m.Spec()
		}
	default:
		return locks.Lookup(c.Lock)
	}
	if err == nil && c.Lock != "" && c.Lock != s.Name {
		err = fmt.Errorf("--lock %s and the adapter's name %s differ: give one of them", c.Lock, s.Name)
	}
	return s, err
}

// Weight is how many of a grid's --parallel slots the run takes (grid.Pool):
// two when it starts Java virtual machines — a Java adapter's clients, or
// a store whose servers are JVMs — or runs on containers, whose start-up
// and warm-up keep a core busy; one otherwise, since a run mostly sleeps
// (holds, think times, faults). A lock it cannot find counts two.
func (c Run) Weight() int {
	spec, err := c.LockSpec()
	if err != nil || orLocal(c.Backend) != "local" || spec.Adapter != nil && spec.Adapter.Language == "java" {
		return 2
	}
	if st, err := cluster.LookupStore(spec.Store); err != nil || st.JVM {
		return 2
	}
	return 1
}

// CheckStore refuses, for a lock of a store other than Redis, the
// settings that shape Redis servers only: replicas, sentinels and
// persistence; and the pooler for a lock not on PostgreSQL. Each store has its own replication and durability, which
// its ensemble always has (etcd's and ZooKeeper's logs, PostgreSQL's WAL
// and standby).
func (cfg Run) CheckStore(spec locks.Spec) error {
	var errs []error
	if cfg.ServerVersion != "" {
		if st, err := cluster.LookupStore(spec.Store); err == nil && st.ServerVersion == "" {
			errs = append(errs, bad("ServerVersion", "%s: lock %s keeps its state in %s, whose servers are this machine's packages: drop --server-version", cfg.ServerVersion, spec.Name, spec.Store))
		}
	}
	if cfg.Pooler != "" && spec.Store != cluster.StorePostgres {
		errs = append(errs, bad("Pooler", "%s: lock %s keeps its state in %s; the pooler is PostgreSQL's: drop --pooler", cfg.Pooler, spec.Name, spec.Store))
	}
	if spec.Store == cluster.StoreRedis {
		return errors.Join(errs...)
	}
	if cfg.Replicas > 0 {
		errs = append(errs, bad("Replicas", "%d: lock %s keeps its state in %s, which replicates its own way; replicas are Redis replicas: drop --replicas", cfg.Replicas, spec.Name, spec.Store))
	}
	if cfg.Sentinels > 0 {
		errs = append(errs, bad("Sentinels", "%d: lock %s keeps its state in %s; sentinels watch Redis primaries: drop --sentinels", cfg.Sentinels, spec.Name, spec.Store))
	}
	if p, _ := ParsePersistence(cfg.Persistence); p != "none" {
		errs = append(errs, bad("Persistence", "%s: lock %s keeps its state in %s, whose durability is its own (its log is always on); --persistence sets Redis's AOF: drop it", cfg.Persistence, spec.Name, spec.Store))
	}
	return errors.Join(errs...)
}

// WithOptions is c with opts (--opt's, by owner) set on top of its own:
// those of its lock, and of each of its nemeses; the options of a lock or
// nemesis it does not run are left out.
func (c Run) WithOptions(opts map[string]map[string]string) Run {
	for owner, kv := range opts {
		switch {
		case len(kv) == 0:
		case owner == c.Lock:
			c.LockOptions = option.Merged(c.LockOptions, kv)
		case slices.Contains(c.Nemeses, owner):
			nem := maps.Clone(c.NemesisOptions)
			if nem == nil {
				nem = map[string]map[string]string{}
			}
			nem[owner] = option.Merged(nem[owner], kv)
			c.NemesisOptions = nem
		}
	}
	return c
}
