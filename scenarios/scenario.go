// Package scenarios holds the catalogue of known lock failure modes and the
// lock × fault grid that `lockchaos chaos` runs. A scenario is a YAML file
// (see README.md in this folder): the topology, the lock, the workload, the
// faults, and the verdict the run must reach. The built-in files are embedded
// in the binary, so the catalogue runs from any directory.
//
// A scenario that names a lock lockchaos ships but this build could not
// register (an adapter whose manifest is not here) loads, and the matrix
// reports it as skipped. A lock, nemesis or option that no build knows (a
// typo), like anything else wrong with a file, is an error naming the file,
// the line, the field and what it may have meant.
package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/internal/suggest"
	"github.com/lockchaos/lockchaos/internal/yamlfile"
	"github.com/lockchaos/lockchaos/settings"

	"gopkg.in/yaml.v3"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/option"
)

// Scenario is one catalogued run and the outcome it must reach.
type Scenario struct {
	// Name is the file's name without .yaml.
	Name string
	// File is where it was loaded from (scenarios/NAME.yaml when embedded).
	File string
	// Shows says in one line what the run demonstrates; Source, where the
	// failure mode is described.
	Shows  string
	Source string
	// Expect is what the run must show: a verdict, safe or violation, and
	// optionally a deadlock and a state of the resource.
	Expect Expectation
	// QuickDuration is the run's duration under `chaos --quick`; 0 leaves
	// the scenario out of the quick run.
	QuickDuration time.Duration
	// Config is the run; Out is left empty for the caller.
	Config settings.Run

	// file is the scenario as written, for Variant.
	file fileScenario
	// lines are the lines of the file's fields, by path (lock.options.gap).
	lines map[string]int
	// unexplained says what the file lacks to be a catalogue scenario: a
	// shows line, an expected verdict. `run` does without; the catalogue
	// does not (Complete).
	unexplained []error
}

// Complete is nil for a scenario fit for the catalogue: one that says what
// it shows and what verdict it expects. A scenario for `lockchaos run`
// needs neither.
func (s Scenario) Complete() error { return errors.Join(s.unexplained...) }

// Defaults of a scenario file's optional fields are the run's own
// (settings.DefaultClients and the rest), except the seed: a scenario runs
// with seed 1 unless its file says otherwise, so the matrix is the same
// from run to run (`lockchaos run` picks a seed and prints it).
const (
	DefaultSeed = 1
	// MaxQuick caps a scenario's duration under --quick unless its file
	// says otherwise.
	MaxQuick = 3 * time.Second
)

// Unavailable says why s cannot run in this build — its lock, a nemesis or
// one of their options is not registered here (yet) — or "" when it can.
// It does not check values: runner.Validate does, and a bad value is an
// error in the scenario, not a missing feature.
// An option the file names is placed at its line (", at FILE:LINE").
func (s Scenario) Unavailable() string {
	why, path := unavailableAt(s.Config)
	if line := s.lines[path]; path != "" && line > 0 {
		why += fmt.Sprintf(", at %s:%d", s.File, line)
	}
	return why
}

// shippedLocks are the locks lockchaos ships, whether or not this build
// registered them: the built-in grid has an expectation for each. An
// adapter lock among them is missing here when its manifest is (lockchaos
// run outside the repository): its scenarios are skipped, not refused.
var shippedLocks = sync.OnceValue(func() []string {
	g, err := LoadGrid()
	if err != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(g.Expect))
})

// lockNames are the locks of this build and those lockchaos ships.
func lockNames() []string {
	return slices.Compact(slices.Sorted(slices.Values(append(locks.Names(), shippedLocks()...))))
}

// unknownNames says, at its line, what in cfg no build of lockchaos
// knows — a lock or nemesis name, an option of a lock or nemesis this
// build has: a typo (token-lau), which would otherwise be skipped as a
// feature this build lacks and pass the matrix unseen. A lock that
// lockchaos ships but this build could not register (an adapter whose
// manifest is not here) is no error: the matrix skips it.
func unknownNames(cfg settings.Run, bad func(field, format string, args ...any) error) error {
	why, path := unavailableAt(cfg)
	if why == "" || path == "lock.name" && slices.Contains(shippedLocks(), cfg.Lock) {
		return nil
	}
	return bad(path, "%s (lockchaos list shows what there is)", why)
}

func unavailable(cfg settings.Run) string {
	why, _ := unavailableAt(cfg)
	return why
}

// unavailableAt is unavailable, and the path in a scenario file of the
// name or option it blames. A name is given the known ones it may have
// meant.
func unavailableAt(cfg settings.Run) (why, path string) {
	spec, err := locks.Lookup(cfg.Lock)
	if err != nil {
		return fmt.Sprintf("lock %s not available%s", cfg.Lock, suggest.Hint(cfg.Lock, lockNames(), "%s")), "lock.name"
	}
	if k, hint := undeclared(spec.OptionSpecs(), cfg.LockOptions); k != "" {
		return fmt.Sprintf("lock %s has no option %s in this build%s", cfg.Lock, k, hint), "lock.options." + k
	}
	for i, n := range cfg.Nemeses {
		if n == "" || n == "none" {
			continue
		}
		ns, err := nemesis.Lookup(n)
		if err != nil {
			return fmt.Sprintf("nemesis %s not available%s", n, suggest.Hint(n, nemesis.Names(), "%s")), fmt.Sprintf("faults.nemeses[%d].name", i)
		}
		if k, hint := undeclared(ns.OptionSpecs(), cfg.NemesisOptions[n]); k != "" {
			return fmt.Sprintf("nemesis %s has no option %s in this build%s", n, k, hint), fmt.Sprintf("faults.nemeses[%d].options.%s", i, k)
		}
	}
	return "", ""
}

// undeclared returns the first key of given that specs does not declare,
// and a hint of the declared ones it may have meant.
func undeclared(specs []option.Spec, given map[string]string) (key, hint string) {
	known := map[string]bool{}
	for _, s := range specs {
		known[s.Key] = true
	}
	var keys []string
	for k := range given {
		if !known[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		return keys[0], suggest.Hint(keys[0], option.KeyList(specs), "%s")
	}
	return "", ""
}

// RunConfig returns the run's configuration, shortened for `chaos --quick`
// when quick is set.
func (s Scenario) RunConfig(quick bool) settings.Run {
	cfg := s.Config
	cfg.LockOptions = cloneMap(cfg.LockOptions)
	cfg.NemesisOptions = map[string]map[string]string{}
	for k, v := range s.Config.NemesisOptions {
		cfg.NemesisOptions[k] = cloneMap(v)
	}
	cfg.Nemeses = append([]string(nil), cfg.Nemeses...)
	if quick && s.QuickDuration > 0 {
		cfg.Duration = s.QuickDuration
	}
	return cfg
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// LoadFile reads one scenario file from disk.
func LoadFile(path string) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, b)
}

// Parse reads a scenario from the YAML in b; name is the file it came from,
// for error messages and for the scenario's name.
func Parse(name string, b []byte) (Scenario, error) {
	var f fileScenario
	lines, err := decodeStrict(name, b, &f)
	if err != nil {
		return Scenario{}, err
	}
	bad := func(field, format string, args ...any) error {
		return &FieldError{File: name, Line: lines[field], Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	s := Scenario{
		Name:   strings.TrimSuffix(strings.TrimSuffix(filepath.Base(name), ".yaml"), ".yml"),
		File:   name,
		Shows:  strings.TrimSpace(f.Shows),
		Source: strings.TrimSpace(f.Source),
		file:   f,
		lines:  lines,
	}
	var errs []error
	if s.Shows == "" {
		s.unexplained = append(s.unexplained, bad("shows", "missing: say in one line what this scenario shows (a scenario of the catalogue must; one for lockchaos run need not)"))
	}
	switch v := checker.Verdict(f.Expect.Verdict); v {
	case checker.Safe, checker.Violation:
		s.Expect.Verdict = v
	case "":
		s.unexplained = append(s.unexplained, bad("expect.verdict", "missing: want safe or violation (a scenario of the catalogue must; one for lockchaos run need not)"))
	default:
		errs = append(errs, bad("expect.verdict", "%q: want safe or violation", f.Expect.Verdict))
	}
	s.Expect.Deadlock = f.Expect.Deadlock
	switch l := f.Expect.Liveness; l {
	case "", LivenessAvailable, LivenessStuck:
		s.Expect.Liveness = l
	default:
		errs = append(errs, bad("expect.liveness", "%q: want available (no key gets stuck) or stuck", l))
	}
	switch r := checker.ResourceState(f.Expect.Resource); r {
	case "", checker.ResourceIntact, checker.ResourceFenced, checker.ResourceDamaged:
		s.Expect.Resource = r
	default:
		errs = append(errs, bad("expect.resource", "%q: want intact, fenced (intact, and stale fencing tokens were rejected) or damaged", r))
	}

	cfg, cerrs := f.config(name, lines)
	errs = append(errs, cerrs...)
	if cfg.Lock == "" {
		errs = append(errs, bad("lock.name", "missing: want the lock this scenario tests (see `lockchaos list`)"))
	} else if err := unknownNames(cfg, bad); err != nil {
		errs = append(errs, err)
	}
	s.Config = cfg
	switch {
	case f.Quick.skip:
	case f.Quick.d.set:
		s.QuickDuration = f.Quick.d.resolve(cfg.TTL)
		if s.QuickDuration <= 0 {
			errs = append(errs, bad("quick", "want a positive duration, or skip"))
		}
	default:
		s.QuickDuration = min(cfg.Duration, MaxQuick)
	}
	return s, errors.Join(errs...)
}

// config builds the run from the file's topology, lock, workload, faults,
// duration and seed. It also serves the grid's cell template, which has no
// lock.
func (f fileScenario) config(name string, lines map[string]int) (settings.Run, []error) {
	bad := func(field, format string, args ...any) error {
		return &FieldError{File: name, Line: lines[field], Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	var errs []error
	cfg := settings.Run{
		Lock:        strings.TrimSpace(f.Lock.Name),
		LockOptions: f.Lock.Options,
		Seed:        f.Seed,
	}
	if cfg.Seed == 0 {
		cfg.Seed = DefaultSeed
	}
	// The topology's and the workload's settings are declared where they
	// are used (cluster.Topology, workload.Workload) with their file tags:
	// the sections are read from them.
	cfg.Workload = settings.Defaults().Workload
	for _, sec := range []struct {
		name string
		s    settings.Section
	}{{"topology", f.Topology}, {"workload", f.Workload}} {
		for _, err := range sec.s.Apply(&cfg, sec.name) {
			var ke *settings.KeyError
			if errors.As(err, &ke) {
				errs = append(errs, bad(sec.name+"."+ke.Key, "%s", ke.Msg))
			}
		}
	}
	cfg.FaultInterval = f.Faults.Interval.resolve(cfg.TTL)
	cfg.Duration = settings.DefaultDuration
	if f.Duration.set {
		cfg.Duration = f.Duration.resolve(cfg.TTL)
	}
	seen := map[string]bool{}
	for i, n := range f.Faults.Nemeses {
		field := fmt.Sprintf("faults.nemeses[%d].name", i)
		n.Name = strings.TrimSpace(n.Name)
		switch {
		case n.Name == "" || n.Name == "none":
			errs = append(errs, bad(field, "missing: want a nemesis name (see `lockchaos list`); leave faults out for a run without faults"))
			continue
		case seen[n.Name]:
			errs = append(errs, bad(field, "nemesis %s is listed twice", n.Name))
			continue
		}
		seen[n.Name] = true
		cfg.Nemeses = append(cfg.Nemeses, n.Name)
		if len(n.Options) > 0 {
			if cfg.NemesisOptions == nil {
				cfg.NemesisOptions = map[string]map[string]string{}
			}
			cfg.NemesisOptions[n.Name] = n.Options
		}
	}

	cfg.Replay = f.replay(cfg, func(field, msg string) { errs = append(errs, bad(field, "%s", msg)) })
	// The ranges are the runner's (settings.CheckSettings); its errors name
	// the setting, which becomes the field and line in this file.
	for _, err := range unjoin(settings.CheckSettings(cfg)) {
		var se *settings.SettingError
		if errors.As(err, &se) && se.Path() != "" {
			errs = append(errs, bad(se.Path(), "%s", se.Msg))
		} else {
			errs = append(errs, &FieldError{File: name, Field: "(run)", Msg: err.Error()})
		}
	}
	return cfg, errs
}

// unjoin lists the errors joined in err (errors.Join), or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// fileScenario is the YAML form of a scenario file; README.md in this folder
// documents every field.
type fileScenario struct {
	Shows    string           `yaml:"shows"`
	Source   string           `yaml:"source"`
	Expect   fileExpect       `yaml:"expect"`
	Topology settings.Section `yaml:"topology"`
	Lock     fileLock         `yaml:"lock"`
	Workload settings.Section `yaml:"workload"`
	Faults   fileFaults       `yaml:"faults"`
	Duration Duration         `yaml:"duration"`
	Quick    Quick            `yaml:"quick"`
	Seed     int64            `yaml:"seed"`
}

type fileExpect struct {
	Verdict  string `yaml:"verdict"`
	Deadlock *bool  `yaml:"deadlock"`
	Resource string `yaml:"resource"`
	Liveness string `yaml:"liveness"`
}

type fileLock struct {
	Name    string            `yaml:"name"`
	Options map[string]string `yaml:"options"`
}

type fileFaults struct {
	Interval Duration      `yaml:"interval"`
	Nemeses  []fileNemesis `yaml:"nemeses"`
}

type fileNemesis struct {
	Name    string            `yaml:"name"`
	Options map[string]string `yaml:"options"`
	// Steps, when given, are the nemesis's steps to take, as a run's
	// schedule.json records them (steps.go).
	Steps []fileStep `yaml:"steps"`
}

// Duration is a duration in a scenario file, read by option.ParseSpan as
// everywhere else: a Go duration ("300ms", "2.5s") or a multiple of the
// scenario's TTL ("2ttl"). set tells a field given as 0 from one left out.
type Duration struct {
	span option.Span
	set  bool
}

// UnmarshalYAML parses "300ms" or "2ttl".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("want " + option.SpanHint)
	}
	s, err := option.ParseSpan(n.Value)
	if err != nil {
		return fmt.Errorf("%q: %w", strings.TrimSpace(n.Value), err)
	}
	*d = Duration{span: s, set: true}
	return nil
}

func (d Duration) resolve(ttl time.Duration) time.Duration { return d.span.Resolve(ttl) }

// Quick is a scenario's duration under `chaos --quick`, or "skip" to leave
// it out of the quick run.
type Quick struct {
	d    Duration
	skip bool
}

// UnmarshalYAML parses a duration or skip.
func (q *Quick) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && strings.TrimSpace(n.Value) == "skip" {
		*q = Quick{skip: true}
		return nil
	}
	if err := q.d.UnmarshalYAML(n); err != nil {
		return fmt.Errorf("%q: want skip, or the duration under --quick such as 3s", n.Value)
	}
	return nil
}

// FieldError is a problem with one field of a scenario or grid file.
type FieldError = yamlfile.FieldError

// decodeStrict decodes a scenario or grid file (yamlfile.Decode).
func decodeStrict(name string, b []byte, out any) (map[string]int, error) {
	return yamlfile.Decode(name, b, out)
}
