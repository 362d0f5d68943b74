package locks

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/internal/suggest"
	"github.com/lockchaos/lockchaos/internal/yamlfile"
	"github.com/lockchaos/lockchaos/option"
)

// Manifest is an adapter lock's lock.yaml: a lock in any language, run as
// a process that speaks the lock protocol (docs/protocol.md).
type Manifest struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Weakness is how the lock is known to break (Spec.Weakness), for the
	// catalogue: "as `token-lua`" when it breaks as a Go lock does.
	Weakness string `yaml:"weakness"`
	// Language, Library and Version say what code the lock is: "java",
	// "Redisson", "3.52.0" — the version its own manifest (pom.xml,
	// package.json, requirements.txt) pins.
	Language   string `yaml:"language"`
	Library    string `yaml:"library"`
	Version    string `yaml:"version"`
	Store      string `yaml:"store"`
	Nodes      int    `yaml:"nodes"`
	Reentrant  bool   `yaml:"reentrant"`
	Quorum     bool   `yaml:"quorum"`
	KeepsAlive bool   `yaml:"keeps_alive"`
	Leaseless  bool   `yaml:"leaseless"`
	// Renew, Wait, Lost: the adapter answers renew, answers acquire with
	// wait_ms > 0 by its library's own wait, and sends lost events.
	Renew bool `yaml:"renew"`
	Wait  bool `yaml:"wait"`
	Lost  bool `yaml:"lost"`
	// Cancel: the adapter cancels a request in flight when asked (a
	// cancel request), the way its language does it, and answers that
	// request cancelled.
	Cancel bool `yaml:"cancel"`
	// BlindRelease: the library's release does not say whether the lease
	// was still its own, so the adapter answers released whatever became
	// of it (ShedLock's unlock() returns nothing, and ends the name's
	// lock whoever holds it), never not_held.
	BlindRelease bool `yaml:"blind_release"`
	// KeyPrefix is what the library adds to a key (Spec.KeyPrefix).
	KeyPrefix string `yaml:"key_prefix"`
	// LeaseOption names a duration option that, when set, is the lease
	// instead of the run's TTL.
	LeaseOption string `yaml:"lease_option"`
	// Claims are the faults (nemesis names, or none) the library says its
	// lock survives: `lockchaos audit` fails when one of them breaks it.
	Claims []string `yaml:"claims"`
	// Requires lists commands that must be on PATH to build and run it.
	Requires []string `yaml:"requires"`
	// Build is run in Dir by `lockchaos adapter build` (make adapters);
	// Built is a file, relative to Dir, that exists once it is built.
	Build   []string `yaml:"build"`
	Built   string   `yaml:"built"`
	Command []string `yaml:"command"`
	// Bench, run in Dir by `make bench`, times the same library in its own
	// process: it gets the lock's node addresses as arguments and prints
	// one JSON line {"acquire_p50_us", "acquire_p99_us", "holds_per_s"}.
	Bench   []string `yaml:"bench"`
	Options []struct {
		Name    string   `yaml:"name"`
		Default string   `yaml:"default"`
		Kind    string   `yaml:"kind"`
		OneOf   []string `yaml:"oneof"`
		Help    string   `yaml:"help"`
		// When maps a value of the option to what the lock does
		// differently with it (mode: lease, no watchdog): For applies it.
		When map[string]Capabilities `yaml:"when"`
	} `yaml:"options"`

	// File is the manifest's path, Dir its folder (absolute): command,
	// build and built are relative to Dir.
	File string `yaml:"-"`
	// storeLine is the line of the store field, for StoreError.
	storeLine int
	Dir       string `yaml:"-"`
}

// Capabilities are the manifest's fields that an option's value may
// change (an option's when); a field not given keeps the manifest's.
type Capabilities struct {
	Reentrant  *bool `yaml:"reentrant"`
	Quorum     *bool `yaml:"quorum"`
	KeepsAlive *bool `yaml:"keeps_alive"`
	Leaseless  *bool `yaml:"leaseless"`
	Renew      *bool `yaml:"renew"`
	Wait       *bool `yaml:"wait"`
	Lost       *bool `yaml:"lost"`
}

// For is the manifest as its lock runs with the option values given
// (option.Declared.Values: every option, defaults included): what each
// option's when says for its value replaces the manifest's own. It is m
// itself when no when applies.
func (m *Manifest) For(values map[string]string) *Manifest {
	out := m
	for _, o := range m.Options {
		c, ok := o.When[values[o.Name]]
		if !ok {
			continue
		}
		if out == m {
			cp := *m
			out = &cp
		}
		for _, f := range []struct {
			to  *bool
			set *bool
		}{{&out.Reentrant, c.Reentrant}, {&out.Quorum, c.Quorum}, {&out.KeepsAlive, c.KeepsAlive}, {&out.Leaseless, c.Leaseless},
			{&out.Renew, c.Renew}, {&out.Wait, c.Wait}, {&out.Lost, c.Lost}} {
			if f.set != nil {
				*f.to = *f.set
			}
		}
	}
	return out
}

// Code is the lock's language, library and version: "Java, Redisson
// 3.52.0"; "" when the manifest names none.
func (m *Manifest) Code() string {
	lib := strings.TrimSpace(m.Library + " " + m.Version)
	lang := m.Language
	if lang != "" {
		lang = strings.ToUpper(lang[:1]) + lang[1:]
	}
	switch {
	case lang != "" && lib != "":
		return lang + ", " + lib
	case lang != "":
		return lang
	}
	return lib
}

// ReadManifest reads and checks a lock.yaml. An error names the file, the
// line and the field, as a scenario file's does (yamlfile.Decode): an
// unknown field with the one it was probably meant to be.
func ReadManifest(path string) (*Manifest, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("lock manifest: %w", err)
	}
	var m Manifest
	lines, err := yamlfile.Decode(path, b, &m)
	if err != nil {
		return nil, err
	}
	m.File, m.Dir = abs, filepath.Dir(abs)
	if err := m.check(path, lines); err != nil {
		return nil, err
	}
	return &m, nil
}

// check checks the manifest's values and fills the defaults. Each problem
// names the file, the field and its line (lines, yamlfile.Decode's).
func (m *Manifest) check(file string, lines map[string]int) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &yamlfile.FieldError{File: file, Line: lines[field], Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if m.Name == "" || strings.ContainsAny(m.Name, " ,/=") {
		bad("name", "%q: want a name without spaces, commas, slashes or '='", m.Name)
	}
	if len(m.Command) == 0 {
		bad("command", "want the command that starts the adapter, as a list")
	}
	// Whether lockchaos knows the store is asked where the lock runs
	// (cluster.LookupStore, whose error StoreError puts on this line): the
	// stores are registered above this package.
	switch {
	case m.Store == "":
		m.Store = "redis"
	case !storeName.MatchString(m.Store):
		bad("store", "%q: want a store's name (lockchaos list stores), in lowercase letters, digits and '-'", m.Store)
	}
	m.storeLine = lines["store"]
	if m.Nodes == 0 {
		m.Nodes = 1
	}
	if m.Nodes < 1 {
		bad("nodes", "%d: want 1 or more", m.Nodes)
	}
	seen := map[string]bool{}
	for i, o := range m.Options {
		field := fmt.Sprintf("options[%d].name", i)
		if o.Name == "" || seen[o.Name] {
			bad(field, "%q is empty or given twice", o.Name)
		}
		seen[o.Name] = true
		if err := option.CheckKind(o.Kind); err != nil {
			bad(fmt.Sprintf("options[%d].kind", i), "%s", err)
		}
		for v := range o.When {
			if !slices.Contains(o.OneOf, v) {
				bad(fmt.Sprintf("options[%d].when", i), "%q: want one of the option's oneof values (%s)", v, strings.Join(o.OneOf, ", "))
			}
		}
	}
	if m.LeaseOption != "" && !seen[m.LeaseOption] {
		var names []string
		for _, o := range m.Options {
			names = append(names, o.Name)
		}
		bad("lease_option", "%q: no such option%s", m.LeaseOption, suggest.Hint(m.LeaseOption, names, "%s"))
	}
	return errors.Join(errs...)
}

// Declared is the manifest's options, for option.Decode.
func (m *Manifest) Declared() option.Declared {
	var d option.Declared
	for _, o := range m.Options {
		d.Options = append(d.Options, option.DeclaredOption{Spec: option.Spec{Key: o.Name, Default: o.Default, Help: o.Help, OneOf: o.OneOf}, Kind: o.Kind})
	}
	return d
}

// Missing says why the adapter cannot run on this machine ("" when it
// can): a required command not on PATH, or not built yet.
func (m *Manifest) Missing() string {
	if t := m.MissingTools(); t != "" {
		return t
	}
	if m.Unbuilt() {
		if m.Carried() {
			return fmt.Sprintf("not built yet (%s is missing): built on first use, or by `lockchaos adapter build`", m.Built)
		}
		return fmt.Sprintf("not built (%s is missing): run `make adapters`", m.Built)
	}
	return ""
}

// Unbuilt says whether the file the build makes (Built) is missing.
func (m *Manifest) Unbuilt() bool {
	if m.Built == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(m.Dir, m.Built))
	return err != nil
}

// MissingTools names the required commands not on PATH ("" when none).
func (m *Manifest) MissingTools() string {
	var gone []string
	for _, t := range m.Requires {
		if _, err := exec.LookPath(t); err != nil {
			gone = append(gone, t)
		}
	}
	if len(gone) == 0 {
		return ""
	}
	return strings.Join(gone, ", ") + " not found on PATH (its toolchain is missing)"
}

// Spec is the lock the manifest describes.
func (m *Manifest) Spec() Spec {
	desc := m.Description
	if desc == "" {
		desc = "adapter " + m.Command[0]
	}
	return Spec{
		Name: m.Name, Description: desc, Library: m.Code(), Weakness: m.Weakness, Store: m.Store, Nodes: m.Nodes,
		Leaseless: m.Leaseless, KeyPrefix: m.KeyPrefix, KeepsAlive: m.KeepsAlive, Reentrant: m.Reentrant, Quorum: m.Quorum, BlindRelease: m.BlindRelease,
		Options: m.Declared(), Adapter: m,
		New: func(cfg Config) (Locker, error) { return newAdapter(m, cfg) },
	}
}

// For is the lock as it runs with the option values given (every option,
// defaults included: Spec.Decode's used): an adapter lock's capabilities
// as its manifest's options say for their values (Manifest.For); any
// other lock is s.
func (s Spec) For(values map[string]string) Spec {
	if s.Adapter == nil {
		return s
	}
	if m := s.Adapter.For(values); m != s.Adapter {
		return m.Spec()
	}
	return s
}

// QuickManifest is the manifest of --lock-cmd: a command line run in dir,
// store redis, one node, nothing claimed. The line is split into words as
// a shell would for quotes and backslashes (shellwords.Split); no shell
// runs it.
func QuickManifest(command, dir string) (*Manifest, error) {
	if strings.TrimSpace(command) == "" {
		return nil, errors.New("--lock-cmd: want the adapter's command, e.g. --lock-cmd 'perl my-adapter.pl'")
	}
	args, err := shellwords.Split(command)
	if err != nil {
		return nil, fmt.Errorf("--lock-cmd %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Name: "cmd", Description: "adapter: " + command, Command: args, Dir: abs}
	return m, m.check("--lock-cmd", nil)
}

// AdaptersEnv names a folder of adapters (LANGUAGE/LIBRARY/lock.yaml) to
// use instead of the one lockchaos finds by itself.
const AdaptersEnv = "LOCKCHAOS_ADAPTERS"

// AdaptersDir is the folder of the shipped adapters: $LOCKCHAOS_ADAPTERS,
// else the adapters/ of the lockchaos repository the working directory is
// in (developers edit them there), else the one beside the binary's folder
// (bin/.. of a repository), else the sources this binary carries
// (package adapters), unpacked into the user's cache (unpackShipped) and
// built there on first use (Manifest.Ready). "" when there is none: no
// cache folder to unpack into (the error is in ShippedErrors).
func AdaptersDir() string {
	d, _ := adaptersDir()
	return d
}

func adaptersDir() (string, error) {
	if d := os.Getenv(AdaptersEnv); d != "" {
		return d, nil
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if isRepository(d) {
				return filepath.Join(d, "adapters"), nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if d := filepath.Dir(filepath.Dir(exe)); isRepository(d) {
			return filepath.Join(d, "adapters"), nil
		}
	}
	return unpackShipped()
}

var (
	shippedOnce sync.Once
	shippedErrs []string
)

// loadShipped registers the shipped adapters once, on the first lookup. A
// broken manifest is not fatal to the other locks: ShippedErrors says it.
func loadShipped() {
	shippedOnce.Do(func() {
		dir, err := adaptersDir()
		if err != nil {
			shippedErrs = append(shippedErrs, err.Error())
			return
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*", "*", "lock.yaml"))
		sort.Strings(files)
		for _, f := range files {
			m, err := ReadManifest(f)
			if err == nil {
				err = register(m.Spec())
			}
			if err != nil {
				shippedErrs = append(shippedErrs, err.Error())
			}
		}
	})
}

// ShippedErrors lists the shipped manifests that could not be registered.
func ShippedErrors() []string {
	loadShipped()
	return shippedErrs
}

// RegisterFile registers the adapter lock of a manifest (--lock-file), or
// returns the one already registered from the same file.
func RegisterFile(path string) (Spec, error) {
	loadShipped()
	m, err := ReadManifest(path)
	if err != nil {
		return Spec{}, err
	}
	s, err := registered.Lookup(m.Name)
	ok := err == nil
	if ok && s.Adapter != nil && s.Adapter.File == m.File {
		return s, nil
	}
	if ok {
		return Spec{}, fmt.Errorf("lock manifest %s: a lock named %q exists already; rename it", path, m.Name)
	}
	s = m.Spec()
	if err := register(s); err != nil {
		return Spec{}, err
	}
	givenMu.Lock()
	given[m.Name] = m.File
	givenMu.Unlock()
	return s, nil
}

var (
	givenMu sync.Mutex
	given   = map[string]string{}
)

// GivenFile is the manifest (an absolute path) of a lock registered from a
// file by RegisterFile (--lock-file) and not shipped, or "": a run of it
// records the file (settings.Run.LockFile), so that its folder replays, and
// the commands printed for it give --lock-file.
func GivenFile(name string) string {
	givenMu.Lock()
	defer givenMu.Unlock()
	return given[name]
}

// storeName is what a store's name looks like (cluster.RegisterStore's).
var storeName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// StoreError says err, why the manifest's store cannot be had
// (cluster.LookupStore's error, which names the stores lockchaos knows),
// of the manifest's store field and its line.
func (m *Manifest) StoreError(err error) error {
	return &yamlfile.FieldError{File: m.File, Line: m.storeLine, Field: "store", Msg: err.Error()}
}
