package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/settings"
)

// Variant changes the workload of a grid cell or a scenario, as the flags
// of `lockchaos compare` ask: a set field replaces the one written in the
// file, before the file's multiples of the TTL are resolved, so that
// `--ttl 1s` with a grid's `duration: 10ttl` runs 10 s.
type Variant struct {
	Clients, Keys int
	// TTL, Hold and Duration replace the file's when set (option.Span's
	// zero value leaves them); TTL must be a plain duration.
	TTL, Hold, Duration *option.Span
	// Fault sets options of the cell's one nemesis on top of the file's,
	// and its persistence (a fault column such as
	// pause-client:phase=acquire); nil leaves them.
	Fault *Fault
}

// Fault is a fault column with settings of its own, written
// NEMESIS:KEY=VALUE,KEY=VALUE: the nemesis's options set on top of the
// grid's (pause-client:phase=acquire), and the key persistence sets the
// lock nodes' persistence (crash-restart:persistence=always). A plain
// NEMESIS is the grid's column itself.
type Fault struct {
	Nemesis     string
	Options     map[string]string
	Persistence string
}

// FaultDir is the folder name of a fault column: NEMESIS.KEY=VALUE, as
// --opt spells an option (a colon is no file name on every system).
func FaultDir(column string) string { return strings.Replace(column, ":", ".", 1) }

// ParseFault reads a fault column (Fault).
func ParseFault(s string) (Fault, error) {
	name, rest, has := strings.Cut(s, ":")
	f := Fault{Nemesis: name}
	if !has {
		return f, nil
	}
	if rest == "" {
		return f, fmt.Errorf("%q: want NEMESIS:KEY=VALUE[,KEY=VALUE], e.g. pause-client:phase=acquire", s)
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return f, fmt.Errorf("%q: %q is not KEY=VALUE (want NEMESIS:KEY=VALUE[,KEY=VALUE], e.g. pause-client:phase=acquire)", s, kv)
		}
		if k == "persistence" {
			if _, err := settings.ParsePersistence(v); err != nil {
				return f, fmt.Errorf("%q: persistence %w", s, err)
			}
			f.Persistence = v
			continue
		}
		if f.Options == nil {
			f.Options = map[string]string{}
		}
		f.Options[k] = v
	}
	return f, nil
}

func (v Variant) apply(f fileScenario) fileScenario {
	if v.Clients != 0 {
		f.Workload = f.Workload.With("clients", strconv.Itoa(v.Clients))
	}
	if v.Keys != 0 {
		f.Workload = f.Workload.With("keys", strconv.Itoa(v.Keys))
	}
	if v.TTL != nil {
		f.Workload = f.Workload.With("ttl", v.TTL.String())
	}
	if v.Hold != nil {
		f.Workload = f.Workload.With("hold", v.Hold.String())
	}
	if v.Duration != nil {
		f.Duration = Duration{span: *v.Duration, set: true}
	}
	if v.Fault != nil {
		if v.Fault.Persistence != "" {
			f.Topology = f.Topology.With("persistence", v.Fault.Persistence)
		}
		nems := slices.Clone(f.Faults.Nemeses)
		for i, n := range nems {
			if n.Name != v.Fault.Nemesis || len(v.Fault.Options) == 0 {
				continue
			}
			opts := maps.Clone(n.Options)
			if opts == nil {
				opts = map[string]string{}
			}
			maps.Copy(opts, v.Fault.Options)
			nems[i].Options = opts
		}
		f.Faults.Nemeses = nems
	}
	return f
}

// Variant returns the run of the grid cell lock × nem (NoFault for none)
// with v applied.
func (g Grid) Variant(lock, nem string, v Variant) (settings.Run, error) {
	cfg, errs := v.apply(g.file(lock, nem)).config(g.File, nil)
	return cfg, errors.Join(errs...)
}

// Variant returns the run of scenario s with another lock, another fault
// and v applied. lock "" keeps the scenario's; nem "" keeps its faults,
// NoFault drops them, a nemesis name replaces them with that one alone,
// with the scenario's options for it if it names it, else the grid's. A
// lock other than the scenario's takes the grid's options for it.
func (s Scenario) Variant(g Grid, lock, nem string, v Variant) (settings.Run, error) {
	f := s.file
	if lock != "" && lock != f.Lock.Name {
		f.Lock = fileLock{Name: lock, Options: g.locks[lock].Options}
	}
	switch nem {
	case "":
	case NoFault:
		f.Faults.Nemeses = nil
	default:
		i := slices.IndexFunc(f.Faults.Nemeses, func(n fileNemesis) bool { return n.Name == nem })
		one := fileNemesis{Name: nem, Options: g.nemeses[nem].Options}
		if i >= 0 {
			one = f.Faults.Nemeses[i]
		}
		f.Faults.Nemeses = []fileNemesis{one}
	}
	cfg, errs := v.apply(f).config(s.File, nil)
	return cfg, errors.Join(errs...)
}
