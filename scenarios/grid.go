package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/settings"
)

// Grid is the lock × fault grid: every registered lock against every fault
// that applies to it (and against none), each cell a short run with the same
// workload. Expect holds the verdicts that are known; a cell without one is
// only observed.
type Grid struct {
	File string
	// Expect maps lock → nemesis ("none" for the column without faults) →
	// the verdict that cell must reach.
	Expect map[string]map[string]checker.Verdict
	// Liveness is each cell's liveness expectation (Expectation.Liveness):
	// LivenessStuck for "safe+stuck", a key must get stuck; "" for
	// "safe+stuck?", a key may get stuck or not, as the run falls (not by
	// construction: liveness is then not judged); LivenessAvailable for
	// every other cell.
	Liveness map[string]map[string]string
	// Chance is each cell that grid.yaml marks "violation?": the fault
	// can break the lock, not by construction (Expectation.Chance).
	Chance map[string]map[string]bool
	// NA is each cell that grid.yaml marks "n/a: REASON": a fault that
	// cannot reach the lock under the grid's workload by construction, so
	// that no run of it could be evidence either way. It does not run, and
	// the reason is its cell's.
	NA map[string]map[string]string

	cell    fileGridCell
	locks   map[string]fileGridLock
	nemeses map[string]fileGridNemesis
	cells   map[string]fileGridOne
}

// fileGrid is the YAML form of grid.yaml.
type fileGrid struct {
	// Cell is the run every cell starts from.
	Cell fileGridCell `yaml:"cell"`
	// Locks and Nemeses adjust the cells of one lock or one fault.
	Locks   map[string]fileGridLock    `yaml:"locks"`
	Nemeses map[string]fileGridNemesis `yaml:"nemeses"`
	// Cells adjust single cells, by name (LOCK+NEMESIS).
	Cells  map[string]fileGridOne       `yaml:"cells"`
	Expect map[string]map[string]string `yaml:"expect"`
}

// fileGridOne adjusts one cell: how many seeds it runs (its expectation is
// then "found in at least one of them" for a violation, "in every one" for
// safe), and its workload.
type fileGridOne struct {
	Seeds    int              `yaml:"seeds"`
	Workload settings.Section `yaml:"workload"`
	Duration Duration         `yaml:"duration"`
	// Options set options of the cell's nemesis, over its column's.
	Options map[string]string `yaml:"options"`
}

type fileGridCell struct {
	Topology settings.Section `yaml:"topology"`
	Workload settings.Section `yaml:"workload"`
	Faults   fileGridFaults   `yaml:"faults"`
	Duration Duration         `yaml:"duration"`
	Seed     int64            `yaml:"seed"`
}

type fileGridFaults struct {
	Interval Duration `yaml:"interval"`
}

type fileGridLock struct {
	Options  map[string]string `yaml:"options"`
	Topology settings.Section  `yaml:"topology"`
	Workload settings.Section  `yaml:"workload"`
}

type fileGridNemesis struct {
	Options  map[string]string `yaml:"options"`
	Topology settings.Section  `yaml:"topology"`
	// Workload replaces the fields of the cell's workload it sets, for a
	// fault that needs, say, a lease long enough to outlast a restart.
	Workload settings.Section `yaml:"workload"`
	// Duration replaces the cell's duration for a fault that takes longer
	// to show (a restart, a failover).
	Duration Duration `yaml:"duration"`
}

// LoadGrid returns the built-in grid.
func LoadGrid() (Grid, error) {
	b, err := files.ReadFile(GridFile)
	if err != nil {
		return Grid{}, err
	}
	return ParseGrid("scenarios/"+GridFile, b)
}

// LoadGridFile reads a grid file from disk.
func LoadGridFile(path string) (Grid, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Grid{}, fmt.Errorf("read grid: %w", err)
	}
	return ParseGrid(path, b)
}

// ParseGrid reads a grid from the YAML in b; name is the file it came from.
func ParseGrid(name string, b []byte) (Grid, error) {
	var f fileGrid
	lines, err := decodeStrict(name, b, &f)
	if err != nil {
		return Grid{}, err
	}
	g := Grid{File: name, Expect: map[string]map[string]checker.Verdict{}, Liveness: map[string]map[string]string{}, Chance: map[string]map[string]bool{}, NA: map[string]map[string]string{}, cell: f.Cell, locks: f.Locks, nemeses: f.Nemeses, cells: f.Cells}
	var errs []error
	for lock, row := range f.Expect {
		g.Expect[lock] = map[string]checker.Verdict{}
		g.Liveness[lock] = map[string]string{}
		g.Chance[lock] = map[string]bool{}
		for nem, v := range row {
			if why, ok := strings.CutPrefix(v, "n/a:"); ok && strings.TrimSpace(why) != "" {
				if g.NA[lock] == nil {
					g.NA[lock] = map[string]string{}
				}
				g.NA[lock][nem] = strings.TrimSpace(why)
				continue
			}
			verdict, liveness := v, LivenessAvailable
			if w, ok := strings.CutSuffix(v, "+stuck?"); ok {
				verdict, liveness = w, ""
			} else if w, ok := strings.CutSuffix(v, "+stuck"); ok {
				verdict, liveness = w, LivenessStuck
			}
			if w, ok := strings.CutSuffix(verdict, "?"); ok && w == string(checker.Violation) {
				verdict = w
				g.Chance[lock][nem] = true
			}
			switch checker.Verdict(verdict) {
			case checker.Safe, checker.Violation:
				g.Expect[lock][nem] = checker.Verdict(verdict)
				g.Liveness[lock][nem] = liveness
			default:
				field := "expect." + lock + "." + nem
				errs = append(errs, &FieldError{File: name, Line: lines[field], Field: field,
					Msg: fmt.Sprintf("%q: want safe or violation (violation? when a fault may break the lock, not by construction), with +stuck when a key is expected to get stuck (+stuck? when it may), or \"n/a: REASON\" for a fault that cannot reach the lock under this workload", v)})
			}
		}
	}
	for cell, one := range f.Cells {
		if one.Seeds < 0 || one.Seeds > 100 {
			field := "cells." + cell + ".seeds"
			errs = append(errs, &FieldError{File: name, Line: lines[field], Field: field, Msg: fmt.Sprintf("%d: want 1 to 100", one.Seeds)})
		}
	}
	// The template must make a valid run on its own.
	if _, cerrs := g.file("", "none").config(name, prefixed(lines, "cell.")); len(cerrs) > 0 {
		errs = append(errs, cerrs...)
	}
	return g, errors.Join(errs...)
}

// prefixed returns the lines of the fields under prefix, with it removed,
// so errors about the template point at its lines.
func prefixed(lines map[string]int, prefix string) map[string]int {
	out := map[string]int{}
	for k, v := range lines {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			out[k[len(prefix):]] = v
		}
	}
	return out
}

// file returns the scenario form of one cell.
func (g Grid) file(lock, nem string) fileScenario {
	c := g.cell
	f := fileScenario{Topology: c.Topology, Workload: c.Workload, Duration: c.Duration, Seed: c.Seed}
	f.Faults.Interval = c.Faults.Interval
	f.Lock.Name = lock
	if l, ok := g.locks[lock]; ok {
		f.Lock.Options = l.Options
		f.Topology = f.Topology.Over(l.Topology)
		f.Workload = f.Workload.Over(l.Workload)
	}
	if nem != "none" && nem != "" {
		n := g.nemeses[nem]
		f.Faults.Nemeses = []fileNemesis{{Name: nem, Options: n.Options}}
		// A fault's topology (replicas, sentinels, persistence) shapes
		// Redis servers; a lock of another store brings its own ensemble.
		if spec, err := locks.Lookup(lock); err != nil || spec.Store == "redis" {
			f.Topology = f.Topology.Over(n.Topology)
		}
		f.Workload = f.Workload.Over(n.Workload)
		if n.Duration.set {
			f.Duration = n.Duration
		}
	}
	if one, ok := g.cells[GridName(lock, nem)]; ok {
		if len(one.Options) > 0 && len(f.Faults.Nemeses) == 1 {
			opts := maps.Clone(f.Faults.Nemeses[0].Options)
			if opts == nil {
				opts = map[string]string{}
			}
			maps.Copy(opts, one.Options)
			f.Faults.Nemeses[0].Options = opts
		}
		f.Workload = f.Workload.Over(one.Workload)
		if one.Duration.set {
			f.Duration = one.Duration
		}
	}
	return f
}

// Seeds is how many seeds the cell lock × nem runs.
func (g Grid) Seeds(lock, nem string) int {
	return max(g.cells[GridName(lock, nem)].Seeds, 1)
}

// Config returns the run of the cell lock × nem (nem "none" for no fault).
func (g Grid) Config(lock, nem string) (settings.Run, error) {
	cfg, errs := g.file(lock, nem).config(g.File, nil)
	return cfg, errors.Join(errs...)
}

// ExpectOf is the verdicts lock's cells must reach, and where they come
// from: the grid's row ("catalogue"), or, for a lock the grid has no row
// for, its manifest's claims ("claims"): safe under each fault it claims to
// survive, nothing expected (only observed) elsewhere. A lock with neither
// has none (""). A "violation?" cell expects nothing there: either verdict
// meets it.
func (g Grid) ExpectOf(lock string) (map[string]checker.Verdict, string) {
	if e := g.Expect[lock]; len(e) > 0 {
		sure := maps.Clone(e)
		for n := range g.Chance[lock] {
			delete(sure, n)
		}
		return sure, "catalogue"
	}
	spec, err := locks.Lookup(lock)
	if err != nil || spec.Adapter == nil || len(spec.Adapter.Claims) == 0 {
		return nil, ""
	}
	e := map[string]checker.Verdict{}
	for _, c := range spec.Adapter.Claims {
		e[c] = checker.Safe
	}
	return e, "claims"
}
