// Package compare runs lock algorithms side by side: every (lock, fault)
// cell for several seeds, each seed its own run, and sums the runs up per
// cell — how often the fault broke the lock (with a 95 % Wilson interval),
// how soon, and what the lock cost in throughput and availability. It is
// what `lockchaos compare` does; the checker's results (result.json) are
// its only input, so every figure comes from a recorded history.
package compare

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
)

// Spec is a comparison as asked: saved in compare.json, so that
// `lockchaos compare --rerun DIR` repeats it.
type Spec struct {
	Locks   []string `json:"locks"`
	Nemeses []string `json:"nemeses"`
	// Seeds is how many seeds each cell runs at most, from FirstSeed on.
	Seeds     int   `json:"seeds"`
	FirstSeed int64 `json:"first_seed"`
	// EarlyStop ends a cell once its interval excludes 0 — a violation
	// was found — and at least MinSeeds of its seeds ran.
	EarlyStop bool `json:"early_stop"`
	MinSeeds  int  `json:"min_seeds"`
	// Parallel is how many runs go at once.
	Parallel int `json:"parallel"`
	// Workload overrides, as written on the command line ("" leaves the
	// grid's or the scenario's).
	TTL      string `json:"ttl,omitempty"`
	Hold     string `json:"hold,omitempty"`
	Duration string `json:"duration,omitempty"`
	Clients  int    `json:"clients,omitempty"`
	Keys     int    `json:"keys,omitempty"`
	// Scenario is the scenario the cells vary ("" for the grid's cells).
	Scenario string `json:"scenario,omitempty"`
	Backend  string `json:"backend,omitempty"`
	Image    string `json:"image,omitempty"`
	// StopOnViolation ends each run soon after its first violation
	// (settings.Run.StopOnViolation): detection and time to the first
	// violation stay, while throughput and availability are then
	// measured over the shorter run.
	StopOnViolation bool `json:"stop_on_violation,omitempty"`
	// Options are --opt's: options of a lock or a nemesis by its name, set
	// on top of the grid's in every cell they apply to.
	Options map[string]map[string]string `json:"options,omitempty"`
}

// Cell is one lock against one fault.
type Cell struct {
	Lock    string `json:"lock"`
	Nemesis string `json:"nemesis"`
	// Config is the run of its first seed (Out empty); seed k adds k.
	Config settings.Run `json:"config"`
	// Skip, when set, says why the cell does not run: the fault does not
	// apply to the lock (n/a) or its settings are wrong (error).
	Skip string `json:"skip,omitempty"`
	Why  string `json:"why,omitempty"`
}

// Name is the cell's name and folder: LOCK+NEMESIS, as in the grid (a
// fault column with options: LOCK+NEMESIS.KEY=VALUE, scenarios.FaultDir).
func (c Cell) Name() string { return scenarios.GridName(c.Lock, scenarios.FaultDir(c.Nemesis)) }

// Skip reasons (Cell.Skip, Row.Status).
const (
	SkipNA    = "n/a"
	SkipError = "error"
	// SkipMissing is a cell whose shard was missing from a merge.
	SkipMissing = "missing"
)

// Plan lists the cells of spec: each lock against each nemesis, in that
// order, from the grid's cells, or from scenario s when it is not nil;
// validate (runner.Validate) marks those that cannot run.
func Plan(spec Spec, g scenarios.Grid, s *scenarios.Scenario, v scenarios.Variant, validate func(settings.Run) error) []Cell {
	var cells []Cell
	for _, l := range spec.Locks {
		for _, n := range spec.Nemeses {
			c := Cell{Lock: l, Nemesis: n}
			var cfg settings.Run
			f, err := scenarios.ParseFault(n)
			if err == nil {
				v := v
				v.Fault = &f
				switch {
				case s != nil && n == ScenarioFaults:
					cfg, err = s.Variant(g, l, "", v)
				case s != nil:
					cfg, err = s.Variant(g, l, f.Nemesis, v)
				default:
					cfg, err = g.Variant(l, f.Nemesis, v)
				}
			}
			cfg.Seed = spec.FirstSeed
			if file := locks.GivenFile(l); file != "" {
				cfg.LockFile = file // a lock of --lock-file: the cell reruns from compare.json alone
			}
			cfg = cfg.WithOptions(spec.Options)
			cfg.Backend, cfg.Image = orString(spec.Backend, cfg.Backend), orString(spec.Image, cfg.Image)
			cfg.StopOnViolation = spec.StopOnViolation
			c.Config = cfg
			if err == nil {
				check := cfg
				check.Out = "validate"
				err = validate(check)
				if ue := (settings.UsageError{}); err != nil && asUsage(err, &ue) {
					c.Skip, c.Why = SkipNA, err.Error()
					cells = append(cells, c)
					continue
				}
			}
			if err != nil {
				c.Skip, c.Why = SkipError, err.Error()
			}
			cells = append(cells, c)
		}
	}
	return cells
}

// ScenarioFaults is the nemesis column that keeps a scenario's own faults.
const ScenarioFaults = "scenario"

// Validate says what is wrong with spec, naming the flag to fix.
func (s Spec) Validate() error {
	var errs []string
	if len(s.Locks) == 0 {
		errs = append(errs, "--locks: give at least one lock (lockchaos list shows them)")
	}
	if len(s.Nemeses) == 0 {
		errs = append(errs, "--nemeses: give at least one nemesis, or none")
	}
	if s.Seeds < 1 || s.Seeds > 10000 {
		errs = append(errs, fmt.Sprintf("--seeds %d: want 1 to 10000", s.Seeds))
	}
	if s.MinSeeds < 1 {
		errs = append(errs, fmt.Sprintf("--min-seeds %d: want at least 1", s.MinSeeds))
	}
	if s.Parallel < 1 {
		errs = append(errs, fmt.Sprintf("--parallel %d: want at least 1", s.Parallel))
	}
	for _, l := range s.Locks {
		if _, err := locks.Lookup(l); err != nil {
			errs = append(errs, "--locks: "+err.Error())
		}
	}
	for _, n := range s.Nemeses {
		if n == scenarios.NoFault || (n == ScenarioFaults && s.Scenario != "") {
			continue
		}
		f, err := scenarios.ParseFault(n)
		var spec nemesis.Spec
		if err == nil {
			spec, err = nemesis.Lookup(f.Nemesis)
		}
		if err == nil {
			// An option misspelt is the user's to fix, not a cell that
			// does not apply (which is what the runner would make of it).
			_, err = spec.Build(f.Options, time.Second)
		}
		if err != nil {
			errs = append(errs, "--nemeses: "+err.Error())
		}
	}
	for _, list := range []struct {
		flag  string
		names []string
	}{{"--locks", s.Locks}, {"--nemeses", s.Nemeses}} {
		seen := map[string]bool{}
		for _, n := range list.names {
			if seen[n] {
				errs = append(errs, fmt.Sprintf("%s: %s is listed twice", list.flag, n))
			}
			seen[n] = true
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func orString(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

func asUsage(err error, ue *settings.UsageError) bool { return errors.As(err, ue) }
