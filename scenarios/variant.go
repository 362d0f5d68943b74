package scenarios

import (
	"errors"
	"slices"

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
}

func (v Variant) apply(f fileScenario) fileScenario {
	if v.Clients != 0 {
		f.Workload.Clients = v.Clients
	}
	if v.Keys != 0 {
		f.Workload.Keys = v.Keys
	}
	if v.TTL != nil {
		f.Workload.TTL = Duration{span: *v.TTL, set: true}
	}
	if v.Hold != nil {
		f.Workload.Hold = Duration{span: *v.Hold, set: true}
	}
	if v.Duration != nil {
		f.Duration = Duration{span: *v.Duration, set: true}
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
