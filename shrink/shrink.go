// Package shrink finds the minimal counterexample of a violation: from a
// run folder whose verdict is violation, the smallest configuration found
// that still violates — fewer faults, clients and keys, a shorter run, a
// shorter hold — written as a scenario file that reproduces it
// (minimal.yaml), its story (witness.md), the search (shrink.json) and the
// minimal run itself (minimal/). `lockchaos shrink` and `lockchaos chaos
// --shrink` call it; docs/shrink.md describes it.
//
// Every candidate is a real run (Options.Run, runner.Run, with the candidate's fault
// schedule as Config.Replay), taken again up to Options.Tries times, and
// kept when one of them violates: a violation found in a run is real, a
// run without one proves little, since the same faults land at slightly
// different moments each time. The search is greedy, one dimension after
// the other, the faults by delta debugging (DDMin).
package shrink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/checker/explain"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// Defaults of the options.
const (
	DefaultTries  = 3
	DefaultBudget = 10 * time.Minute
	// MinHold is where the halving of the hold stops: a shorter critical
	// section says nothing more about the lock.
	MinHold = 10 * time.Millisecond
)

// ErrNotReproduced: the original configuration and schedule, unchanged,
// did not violate in any of its tries; nothing is written but shrink.json.
var ErrNotReproduced = errors.New("the original violation could not be reproduced")

// Options of a shrink.
type Options struct {
	// Out is the folder it writes (DIR2); OutGiven, that the user named it
	// (--out): a refusal blames the flag only then.
	Out      string
	OutGiven bool
	// Force lets Out replace an earlier shrink's files.
	Force bool
	// Tries is how many runs a candidate gets before it is given up
	// (default DefaultTries).
	Tries int
	// Budget bounds the search; a run under way finishes. The runs of
	// minimal.yaml that follow the search are not counted (default
	// DefaultBudget).
	Budget time.Duration
	// Progress receives a line per candidate; nil for none.
	Progress io.Writer
	// AfterRun, when set, is called with the minimal run's folder once it
	// is in place: the CLI renders its report.html there.
	AfterRun func(dir string) error
	// Run performs one run (runner.Run); required.
	Run settings.RunFunc
}

// Report is what shrink.json holds.
type Report struct {
	// Source is the run folder shrunk; Out, this shrink's.
	Source string `json:"source"`
	Out    string `json:"out"`
	Tries  int    `json:"tries"`
	// BudgetS bounds the search; Seconds is how long it all took.
	BudgetS float64 `json:"budget_s"`
	Seconds float64 `json:"seconds"`
	// Stopped says why the search ended early: StoppedBudget or
	// StoppedInterrupted; "" when it ran to its end.
	Stopped string `json:"stopped,omitempty"`
	// Reproduced: the original violated again, unchanged.
	Reproduced bool `json:"reproduced"`
	// Original and Minimal are the sizes before and after (Minimal nil
	// when the original was not reproduced).
	Original Size  `json:"original"`
	Minimal  *Size `json:"minimal,omitempty"`
	// Candidates are every configuration tried, in order.
	Candidates []Attempt `json:"candidates"`
	// Verify is minimal.yaml run again, through the scenario path.
	Verify *Verify `json:"verify,omitempty"`
	// Scenario, Witness and Run are the files written, relative to Out.
	Scenario string `json:"scenario,omitempty"`
	Witness  string `json:"witness,omitempty"`
	Run      string `json:"run,omitempty"`
}

// Read reads the shrink.json in dir.
func Read(dir string) (*Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, rundir.ShrinkReportFile))
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.ShrinkReportFile), err)
	}
	return &r, nil
}

// Size is what the shrink makes smaller.
type Size struct {
	Faults     int      `json:"faults"`
	Nemeses    []string `json:"nemeses"`
	Clients    int      `json:"clients"`
	Keys       int      `json:"keys"`
	DurationMs float64  `json:"duration_ms"`
	HoldMs     float64  `json:"hold_ms"`
	// Events is the number of events in the history of the run (of the
	// original run, and of minimal/); 0 when not counted.
	Events int `json:"events,omitempty"`
}

func (z Size) String() string {
	return fmt.Sprintf("%d %s, %d %s, %d %s, %s, hold %s", z.Faults, plural(z.Faults, "fault", "faults"), z.Clients, plural(z.Clients, "client", "clients"),
		z.Keys, plural(z.Keys, "key", "keys"), checker.Millis(z.DurationMs), checker.Millis(z.HoldMs))
}

// Attempt is one candidate: what it changed, how many runs it took, and
// whether one violated (and so was kept).
type Attempt struct {
	N    int    `json:"n"`
	What string `json:"what"`
	Size Size   `json:"size"`
	Runs int    `json:"runs"`
	// Violated: a run violated (verdict violation, not only stalls of
	// the harness); the candidate is then kept as the best so far.
	Violated bool    `json:"violated"`
	Kept     bool    `json:"kept"`
	Seconds  float64 `json:"seconds"`
	// Undecided: the budget ran out or the shrink was interrupted before
	// its runs were done.
	Undecided bool `json:"undecided,omitempty"`
	// Failed counts the runs that could not be set up; Error is the last
	// error.
	Failed int    `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Verify is minimal.yaml run again: how many of its runs violated.
type Verify struct {
	Runs     int      `json:"runs"`
	Violated int      `json:"violated"`
	Dirs     []string `json:"dirs"`
}

// candidate is one configuration to try: the run and its fault steps, in
// order within each nemesis (the steps keep their numbers from the
// original schedule, which the faults of a run record as FaultWindow.Step).
type candidate struct {
	cfg   settings.Run
	steps []nemesis.Step
}

// config is the candidate as a run in out: the nemeses that have no step
// left are dropped with their options, the others take exactly their steps.
func (c candidate) config(out string) settings.Run {
	cfg := c.cfg
	cfg.Out, cfg.Force, cfg.Progress = out, false, nil
	sched := &nemesis.Timetable{Nemeses: []nemesis.Executions{}}
	cfg.Nemeses, cfg.NemesisOptions = nil, map[string]map[string]string{}
	for _, n := range c.cfg.Nemeses {
		var steps []nemesis.Executed
		for _, s := range c.steps {
			if s.Nemesis == n {
				steps = append(steps, nemesis.Executed{Step: s})
			}
		}
		if len(steps) == 0 {
			continue
		}
		cfg.Nemeses = append(cfg.Nemeses, n)
		if o, ok := c.cfg.NemesisOptions[n]; ok {
			cfg.NemesisOptions[n] = o
		}
		sched.Nemeses = append(sched.Nemeses, nemesis.Executions{Name: n, Plan: "shrink", Steps: steps})
	}
	cfg.Replay = sched
	return cfg
}

func (c candidate) size() Size {
	cfg := c.config("")
	return Size{Faults: len(c.steps), Nemeses: append([]string{}, cfg.Nemeses...), Clients: cfg.Clients, Keys: cfg.Keys,
		DurationMs: ms(cfg.Duration), HoldMs: ms(cfg.Hold)}
}

func (c candidate) withSteps(steps []nemesis.Step) candidate {
	c.steps = slices.Clone(steps)
	return c
}

type shrinker struct {
	o        Options
	start    time.Time
	ctx      context.Context // cancelled by an interruption
	budget   context.Context // ends with the budget too
	src      string
	work     string
	rep      *Report
	n        int
	best     candidate
	bestRes  checker.Result
	bestDir  string
	setupErr error // the last run that could not be set up
	usageErr error // the last candidate that could not run at all
}

// Shrink searches for the smallest configuration of the run in dir that
// still violates, and writes it to o.Out (see the package comment). The
// error is a settings.UsageError when dir or o is wrong, ErrNotReproduced
// (wrapped) when the original did not violate again, and another error
// when runs could not be set up or files not written. The report is
// returned with every error but a usage error.
func Shrink(ctx context.Context, dir string, o Options) (*Report, error) {
	start := time.Now()
	if o.Run == nil {
		panic("shrink.Shrink: Options.Run is nil (pass runner.Run)")
	}
	if o.Tries <= 0 {
		o.Tries = DefaultTries
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.Out == "" {
		return nil, usage("--out: want the folder the shrink writes")
	}
	if filepath.Clean(o.Out) == filepath.Clean(dir) {
		return nil, usage("--out %s: give another folder than the run it shrinks", o.Out)
	}
	for _, f := range []string{rundir.ConfigFile, rundir.ScheduleFile, rundir.ResultFile, rundir.HistoryFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, usage("%s is not a run folder of this version of lockchaos: %v (one holds config.json, schedule.json, result.json and history.jsonl)", dir, err)
		}
	}
	cfg, err := settings.LoadReplay(dir)
	if err != nil {
		return nil, usage("%s", strings.Replace(err.Error(), "--replay ", "", 1))
	}
	var res checker.Result
	if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err != nil {
		return nil, usage("%s: %v (check the run first: %s check %s)", dir, err, rundir.Program(), shellwords.Quote(dir))
	} else if err := json.Unmarshal(b, &res); err != nil {
		return nil, usage("%s: result.json: %v", dir, err)
	}
	if res.Verdict != checker.Violation {
		return nil, usage("%s: its verdict is %s: only a violation can be shrunk", dir, res.Verdict)
	}
	if err := claim(o.Out, o.OutGiven, o.Force); err != nil {
		return nil, err
	}
	orig := candidate{cfg: cfg}
	orig.cfg.Replay = nil
	for _, n := range cfg.Replay.Nemeses {
		for _, e := range n.Steps {
			s := e.Step
			s.Nemesis = n.Name
			// To the microsecond, as minimal.yaml writes it.
			s.Gap = s.Gap.Round(time.Microsecond)
			orig.steps = append(orig.steps, s)
		}
	}
	s := &shrinker{o: o, ctx: ctx, src: dir, start: start, work: filepath.Join(o.Out, rundir.ShrinkWorkDir),
		rep: &Report{Source: dir, Out: o.Out, Tries: o.Tries, BudgetS: o.Budget.Seconds(), Candidates: []Attempt{}}}
	var cancel func()
	s.budget, cancel = context.WithDeadline(ctx, start.Add(o.Budget))
	defer cancel()
	s.rep.Original = orig.size()
	s.rep.Original.Events = countEvents(dir)
	s.printf("shrink: %s (%s), %d runs at most per candidate, budget %v", dir, s.rep.Original, o.Tries, o.Budget.Round(time.Second))

	defer func() {
		os.RemoveAll(s.work)
		s.rep.Seconds = time.Since(start).Seconds()
	}()
	if !s.test(orig, "the original configuration and fault schedule, unchanged") {
		s.rep.Stopped = s.stopped()
		s.rep.Seconds = time.Since(start).Seconds()
		werr := rundir.WriteJSON(filepath.Join(o.Out, rundir.ShrinkReportFile), s.rep)
		a := s.rep.Candidates[0]
		var err error
		switch {
		case s.usageErr != nil:
			return nil, s.usageErr
		case a.Undecided:
			err = fmt.Errorf("%w: %s after %d of %d runs, none of which violated", ErrNotReproduced, orDash(s.stopped()), a.Runs, o.Tries)
		case a.Failed == a.Runs:
			err = fmt.Errorf("the original configuration could not be run: %w", s.setupErr)
		default:
			err = fmt.Errorf("%w: it did not violate in %d %s (%d could not be set up)", ErrNotReproduced, a.Runs, plural(a.Runs, "run", "runs"), a.Failed)
			if a.Failed == 0 {
				err = fmt.Errorf("%w: it did not violate in %d %s", ErrNotReproduced, a.Runs, plural(a.Runs, "run", "runs"))
			}
		}
		return s.rep, errors.Join(err, werr)
	}
	s.rep.Reproduced = true

	// The reductions that usually hold come first: a candidate kept
	// costs one run, one given up Tries runs, and the budget may end the
	// search anywhere.
	s.cutDuration()
	s.explainingFaults()
	s.shrinkKeys()
	s.shrinkClients()
	s.cutDuration()
	s.shrinkFaults()
	s.halveHold()
	s.cutDuration()
	s.rep.Stopped = s.stopped()
	return s.rep, s.finish()
}

// violated says whether a run is the evidence a candidate needs: a
// violation, and not one that only the harness's own stalls made.
func violated(res checker.Result) bool {
	return res.Verdict == checker.Violation && !res.StallOnly()
}

// test runs c up to Tries times; the first run that violates makes c the
// best so far, and its folder the best run.
func (s *shrinker) test(c candidate, what string) bool {
	s.n++
	a := Attempt{N: s.n, What: what, Size: c.size()}
	t0 := time.Now()
	for i := 1; i <= s.o.Tries; i++ {
		if s.budget.Err() != nil {
			a.Undecided = true
			break
		}
		dir := filepath.Join(s.work, fmt.Sprintf("c%03d-%d", s.n, i))
		res, err := s.o.Run(s.ctx, c.config(dir))
		a.Runs++
		var ue settings.UsageError
		if errors.As(err, &ue) {
			// The candidate cannot run at all (a nemesis that needs more
			// clients): no other try would.
			a.Error, s.usageErr = err.Error(), err
			os.RemoveAll(dir)
			break
		}
		if err != nil && res.Verdict == "" {
			a.Error, s.setupErr = err.Error(), err
			a.Failed++
			os.RemoveAll(dir)
			continue
		}
		if violated(res) {
			a.Violated, a.Kept = true, true
			if s.bestDir != "" {
				os.RemoveAll(s.bestDir)
			}
			s.best, s.bestRes, s.bestDir = c, res, dir
			break
		}
		os.RemoveAll(dir)
		if s.ctx.Err() != nil {
			a.Undecided = true
			break
		}
	}
	a.Seconds = time.Since(t0).Seconds()
	s.rep.Candidates = append(s.rep.Candidates, a)
	outcome := fmt.Sprintf("no violation in %d %s", a.Runs, plural(a.Runs, "run", "runs"))
	switch {
	case a.Violated:
		outcome = fmt.Sprintf("violated (run %d), kept", a.Runs)
	case a.Error != "" && a.Failed < a.Runs:
		outcome = "cannot run: " + a.Error
	}
	if a.Undecided {
		outcome += ", stopped: " + s.stopped()
	}
	left := "budget spent"
	if d, ok := s.budget.Deadline(); ok && time.Until(d) > 0 {
		left = time.Until(d).Round(time.Second).String() + " left"
	}
	best := "none yet"
	if s.bestDir != "" {
		best = s.best.size().String()
	}
	s.printf("shrink: #%d %s: %s — best: %s (%d tried, %s)", a.N, what, outcome, best, s.n, left)
	return a.Violated
}

// Why a search ended early (Report.Stopped).
const (
	StoppedBudget      = "budget"
	StoppedInterrupted = "interrupted"
)

func (s *shrinker) stopped() string {
	switch {
	case s.ctx.Err() != nil:
		return StoppedInterrupted
	case s.budget.Err() != nil:
		return StoppedBudget
	}
	return ""
}

func (s *shrinker) printf(format string, args ...any) {
	if s.o.Progress != nil {
		fmt.Fprintf(s.o.Progress, format+"\n", args...)
	}
}

// firstOverlap is the best run's first overlap; false when it has none (a
// violation of the resource alone).
func (s *shrinker) firstOverlap() (checker.Overlap, bool) {
	if len(s.bestRes.Mutex.Overlaps) == 0 {
		return checker.Overlap{}, false
	}
	return s.bestRes.Mutex.Overlaps[0], true
}

// faultOf is the fault that step s of the best run became, if any.
func (s *shrinker) faultOf(st nemesis.Step) (checker.FaultWindow, bool) {
	for _, f := range s.bestRes.Faults {
		if f.Name == st.Nemesis && f.Step == st.N {
			return f, true
		}
	}
	return checker.FaultWindow{}, false
}

// cutDuration ends the run shortly after the best run's first overlap —
// two TTLs after it ended, to the next 100 ms — and drops the steps whose
// faults had not begun by then; failing that, halfway between that and
// the current duration.
func (s *shrinker) cutDuration() {
	o, ok := s.firstOverlap()
	if !ok || s.budget.Err() != nil {
		return
	}
	cur := s.best.cfg.Duration
	cut := time.Duration(o.EndMs*float64(time.Millisecond)) + 2*s.best.cfg.TTL
	cut = max(cut, s.best.cfg.Hold+s.best.cfg.TTL)
	for _, d := range []time.Duration{cut, (cut + cur) / 2} {
		d = (d + 99*time.Millisecond).Truncate(100 * time.Millisecond)
		if d > cur*9/10 {
			return
		}
		var steps []nemesis.Step
		for _, st := range s.best.steps {
			if f, ok := s.faultOf(st); ok && f.StartMs < ms(d) {
				steps = append(steps, st)
			}
		}
		c := s.best.withSteps(steps)
		c.cfg.Duration = d
		what := fmt.Sprintf("cut the duration to %s", span(d))
		if dropped := len(s.best.steps) - len(steps); dropped > 0 {
			what += fmt.Sprintf(", without the %d %s that had not begun by then", dropped, plural(dropped, "fault", "faults"))
		}
		if s.test(c, what) || s.budget.Err() != nil {
			return
		}
	}
}

// explainingFaults tries the steps whose faults explain the best run's
// first overlap alone (FaultWindow IDs of Overlap.Faults).
func (s *shrinker) explainingFaults() {
	o, ok := s.firstOverlap()
	if !ok || len(s.best.steps) == 0 || s.budget.Err() != nil {
		return
	}
	var expl []nemesis.Step
	for _, st := range s.best.steps {
		if f, ok := s.faultOf(st); ok && slices.Contains(o.Faults, f.ID) {
			expl = append(expl, st)
		}
	}
	if len(expl) < len(s.best.steps) {
		s.test(s.best.withSteps(expl), fmt.Sprintf("only the %d %s that explain the first overlap (%s)", len(expl), plural(len(expl), "fault", "faults"), stepList(expl)))
	}
}

// shrinkFaults delta-debugs the fault steps (DDMin): the result is
// 1-minimal, each of its steps needed, unless the budget ends it first.
func (s *shrinker) shrinkFaults() {
	all := s.best.steps
	if len(all) == 0 || s.budget.Err() != nil {
		return
	}
	DDMin(s.budget, all, func(sub []nemesis.Step) bool {
		return s.test(s.best.withSteps(sub), fmt.Sprintf("faults: %d of %d (%s)", len(sub), len(all), stepList(sub)))
	})
}

func stepList(steps []nemesis.Step) string {
	if len(steps) == 0 {
		return "none"
	}
	var out []string
	for _, st := range steps {
		out = append(out, fmt.Sprintf("%s step %d", st.Nemesis, st.N))
	}
	return strings.Join(out, ", ")
}

// shrinkKeys tries fewer keys, from one up. The first overlap's key becomes
// lock:0 and the others follow in order; a step whose key is gone is
// remapped (its rank modulo the keys left), never dropped: DDMin has kept
// only the steps the violation needs.
func (s *shrinker) shrinkKeys() {
	o, ok := s.firstOverlap()
	if !ok {
		return
	}
	n := s.best.cfg.Keys
	order := []string{o.Key}
	for k := 0; k < n; k++ {
		if name := workload.KeyName(k); name != o.Key {
			order = append(order, name)
		}
	}
	for keys := 1; keys < n && s.budget.Err() == nil; keys++ {
		c := s.best.withSteps(s.best.steps)
		c.cfg.Keys = keys
		for i := range c.steps {
			if r := slices.Index(order, c.steps[i].Key); r >= 0 {
				c.steps[i].Key = workload.KeyName(r % keys)
			}
		}
		if s.test(c, fmt.Sprintf("%d %s (%s as %s)", keys, plural(keys, "key", "keys"), o.Key, workload.KeyName(0))) {
			return
		}
	}
}

// shrinkClients tries fewer clients, from two up. The first overlap's two
// clients become clients 0 and 1, the others follow in order; a step aimed
// at a client that is gone is remapped (its rank modulo the clients left),
// never dropped.
func (s *shrinker) shrinkClients() {
	o, ok := s.firstOverlap()
	if !ok {
		return
	}
	n := s.best.cfg.Clients
	order := []int{o.Clients[0], o.Clients[1]}
	for c := 0; c < n; c++ {
		if !slices.Contains(order, c) {
			order = append(order, c)
		}
	}
	for clients := 2; clients < n && s.budget.Err() == nil; clients++ {
		c := s.best.withSteps(s.best.steps)
		c.cfg.Clients = clients
		for i := range c.steps {
			if r := slices.Index(order, c.steps[i].Client); r >= 0 {
				c.steps[i].Client = r % clients
			}
		}
		if s.test(c, fmt.Sprintf("%d clients (the first overlap's clients %d and %d as 0 and 1)", clients, o.Clients[0], o.Clients[1])) {
			return
		}
	}
}

// halveHold halves the hold while the run still violates, down to
// MinHold — unless no fault explains the first overlap: then the hold
// itself outlived the lease, and the failure needs it.
func (s *shrinker) halveHold() {
	if o, ok := s.firstOverlap(); ok && len(o.Faults) == 0 {
		s.printf("shrink: the hold stays %s: no fault explains the first overlap, the hold itself does", span(s.best.cfg.Hold))
		return
	}
	for s.budget.Err() == nil {
		h := (s.best.cfg.Hold / 2).Round(time.Millisecond)
		if h < MinHold || h == s.best.cfg.Hold {
			return
		}
		c := s.best.withSteps(s.best.steps)
		c.cfg.Hold = h
		if !s.test(c, "hold "+span(h)) {
			return
		}
	}
}

// finish writes minimal.yaml from the best candidate, runs it again
// through the scenario path, keeps the last violating run as minimal/ (the
// search's best run when none did), and writes witness.md and shrink.json.
func (s *shrinker) finish() error {
	out := s.o.Out
	size := s.best.size()
	s.rep.Minimal = &size
	cfg := s.best.config("")
	cfg.Out = ""
	ttl := float64(s.best.cfg.TTL.Milliseconds())
	if s.bestRes.Settings != nil {
		ttl = float64(s.bestRes.Settings.Lease())
	}
	scen := filepath.Join(out, rundir.ShrinkScenarioFile)
	if err := s.writeScenario(scen, cfg, s.bestRes, ttl); err != nil {
		return err
	}
	s.rep.Scenario = rundir.ShrinkScenarioFile
	chosen := s.bestDir
	if s.ctx.Err() != nil {
		s.rep.Stopped = StoppedInterrupted
		s.printf("shrink: wrote %s (%s); interrupted: not run again", scen, size)
	} else {
		s.printf("shrink: wrote %s (%s); running it %d times", scen, size, s.o.Tries)
		v, dir, err := s.verify(scen)
		if err != nil {
			return err
		}
		s.rep.Verify = v
		if dir != "" {
			chosen = dir
		}
		s.printf("shrink: %s violated in %d of %d runs", scen, v.Violated, v.Runs)
	}
	minDir := filepath.Join(out, rundir.ShrinkMinimalDir)
	if err := os.Rename(chosen, minDir); err != nil {
		return fmt.Errorf("keep the minimal run: %w", err)
	}
	// Checked again in its place, so that its result names the folder
	// (the command that replays it).
	res, err := checker.CheckDir(minDir, 0)
	if err != nil {
		return err
	}
	if s.o.AfterRun != nil {
		if err := s.o.AfterRun(minDir); err != nil {
			return err
		}
	}
	s.rep.Run = rundir.ShrinkMinimalDir
	s.rep.Minimal.Events = countEvents(minDir)
	// The same scenario, its shows line now the minimal run's, as the
	// witness is.
	if err := s.writeScenario(scen, cfg, res, ttl); err != nil {
		return err
	}
	if err := writeWitness(filepath.Join(out, rundir.ShrinkWitnessFile), s.rep, res, scen); err != nil {
		return err
	}
	s.rep.Witness = rundir.ShrinkWitnessFile
	s.rep.Seconds = time.Since(s.start).Seconds()
	return rundir.WriteJSON(filepath.Join(out, rundir.ShrinkReportFile), s.rep)
}

// writeScenario writes the minimal configuration cfg as a scenario file,
// saying what res (a run of it) shows.
func (s *shrinker) writeScenario(path string, cfg settings.Run, res checker.Result, ttl float64) error {
	abs, _ := filepath.Abs(s.src)
	y, err := scenarios.Render(scenarios.Written{
		Shows:  "minimal counterexample: " + explain.Headline(res, ttl),
		Source: fmt.Sprintf("lockchaos shrink of %s (%s + %s, seed %d)", abs, res.Lock, orDash(strings.Join(s.rep.Original.Nemeses, ",")), cfg.Seed),
		Expect: checker.Violation,
		Comment: fmt.Sprintf("The smallest configuration lockchaos shrink found that still violates.\nOriginal: %s.\nMinimal:  %s.\nRun it: %s run --scenario %s",
			s.rep.Original, *s.rep.Minimal, rundir.PortableProgram(), shellwords.Quote(path)),
		Config: cfg,
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, y, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// verify runs the scenario file Tries times, as `lockchaos run --scenario`
// would, and returns the last run that violated ("" when none did).
func (s *shrinker) verify(path string) (*Verify, string, error) {
	sc, err := scenarios.LoadFile(path)
	if err != nil {
		return nil, "", err
	}
	v := &Verify{Dirs: []string{}}
	last := ""
	for i := 1; i <= s.o.Tries && s.ctx.Err() == nil; i++ {
		cfg := sc.RunConfig(false)
		cfg.Out = filepath.Join(s.o.Out, rundir.ShrinkVerifyDir, fmt.Sprintf("run-%d", i))
		res, err := s.o.Run(s.ctx, cfg)
		v.Runs++
		rel, _ := filepath.Rel(s.o.Out, cfg.Out)
		v.Dirs = append(v.Dirs, rel)
		if err != nil && res.Verdict == "" {
			s.printf("shrink: %s run %d: %v", path, i, err)
			continue
		}
		if violated(res) {
			v.Violated++
			last = cfg.Out
		}
	}
	if last != "" {
		// minimal/ is that run: its place in verify/ says so.
		for i, d := range v.Dirs {
			if filepath.Join(s.o.Out, d) == last {
				v.Dirs[i] = rundir.ShrinkMinimalDir
			}
		}
	}
	return v, last, nil
}

// writeWitness writes witness.md: the sizes before and after, and the
// story of the minimal run's first overlap (explain.Witness).
func writeWitness(path string, rep *Report, res checker.Result, scen string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Witness: %s + %s\n\n", res.Lock, orDash(strings.Join(res.Nemesis, ", ")))
	fmt.Fprintf(&b, "The smallest run `lockchaos shrink` found that still violates, from `%s`.\n\n", rep.Source)
	fmt.Fprintf(&b, "| | original | minimal |\n| --- | --- | --- |\n")
	o, m := rep.Original, *rep.Minimal
	rows := [][3]string{
		{"faults", fmt.Sprint(o.Faults), fmt.Sprint(m.Faults)},
		{"nemeses", orDash(strings.Join(o.Nemeses, ", ")), orDash(strings.Join(m.Nemeses, ", "))},
		{"clients", fmt.Sprint(o.Clients), fmt.Sprint(m.Clients)},
		{"keys", fmt.Sprint(o.Keys), fmt.Sprint(m.Keys)},
		{"duration", checker.Millis(o.DurationMs), checker.Millis(m.DurationMs)},
		{"hold", checker.Millis(o.HoldMs), checker.Millis(m.HoldMs)},
		{"events in the history", fmt.Sprint(o.Events), fmt.Sprint(m.Events)},
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	fmt.Fprintf(&b, "\nWhat happened in the minimal run (`%s/`, its report `%s/%s`):\n\n", rundir.ShrinkMinimalDir, rundir.ShrinkMinimalDir, rundir.ReportFile)
	for i, l := range explain.Witness(res) {
		fmt.Fprintf(&b, "%d. %s\n", i+1, l)
	}
	fmt.Fprintf(&b, "\nRun it again: `%s run --scenario %s`", rundir.PortableProgram(), shellwords.Quote(scen))
	if v := rep.Verify; v != nil {
		fmt.Fprintf(&b, " (it violated in %d of %d runs after the search)", v.Violated, v.Runs)
	}
	b.WriteString(".\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// claim makes out ready, refusing to overwrite an earlier shrink unless
// force, which removes that shrink's files (and only those).
func claim(out string, given, force bool) error {
	var found []string
	for _, f := range []string{rundir.ShrinkScenarioFile, rundir.ShrinkWitnessFile, rundir.ShrinkReportFile, rundir.ShrinkMinimalDir, rundir.ShrinkVerifyDir, rundir.ShrinkWorkDir} {
		if _, err := os.Lstat(filepath.Join(out, f)); err == nil {
			found = append(found, f)
		}
	}
	if len(found) > 0 && !force {
		if !given {
			return usage("%s already holds a shrink (%s): give --out another folder, or --force to replace it", out, strings.Join(found, ", "))
		}
		return usage("--out %s already holds a shrink (%s): choose another folder, or give --force to replace it", out, strings.Join(found, ", "))
	}
	for _, f := range found {
		if err := os.RemoveAll(filepath.Join(out, f)); err != nil {
			return fmt.Errorf("--force: %w", err)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	return nil
}

func usage(format string, args ...any) error {
	return settings.UsageError{Err: fmt.Errorf(format, args...)}
}

// countEvents counts the lines of a run's history.
func countEvents(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func span(d time.Duration) string { return d.Round(time.Millisecond).String() }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
