package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/settings"

	// The catalogue names these locks and nemeses: register them.
	_ "github.com/lockchaos/lockchaos/locks"
	_ "github.com/lockchaos/lockchaos/nemesis"
)

// TestCatalogueCoversTheKnownFailureModes: every built-in file loads, says
// what it shows and where the failure mode comes from, and the failure
// modes of the seeds and of the Redlock debate are all there.
func TestCatalogueCoversTheKnownFailureModes(t *testing.T) {
	cat, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Scenario{}
	for _, s := range cat {
		names[s.Name] = s
		if s.Shows == "" || s.Source == "" {
			t.Errorf("%s: says neither what it shows nor its source", s.Name)
		}
		if s.Expect.Verdict != checker.Safe && s.Expect.Verdict != checker.Violation {
			t.Errorf("%s: expects %q", s.Name, s.Expect.Verdict)
		}
		if s.QuickDuration > s.Config.Duration {
			t.Errorf("%s: its quick version (%v) is longer than the full one (%v)", s.Name, s.QuickDuration, s.Config.Duration)
		}
	}
	for _, want := range []string{
		"pause-past-ttl-set-nx-px", "hold-outlives-ttl", "delete-someone-elses-lock", "setnx-expire-crash-deadlock",
		"failover-before-replication", "redlock-clock-jump", "redlock-pause-during-acquire", "crash-restart-no-persistence",
		"watchdog-frozen-by-gc-pause", "fenced-resource-survives",
		// The track record's upstream bugs (docs/track-record.md).
		"redsync-bare-majority-crash-restart", "watchdog-stops-after-failed-renewal", "watchdog-keeps-renewing-after-failed-renewal",
		"wait-lagging-replica-promoted", "wait-result-ignored", "expire-clock-jump-token-lua", "manual-sentinel-failover-loses-lock",
	} {
		if _, ok := names[want]; !ok {
			t.Errorf("the catalogue lacks %s", want)
		}
	}
	if _, err := LoadGrid(); err != nil {
		t.Errorf("grid.yaml: %v", err)
	}
}

// TestCatalogueRunsInThisBuild: every scenario names locks, nemeses and
// options that exist, with values the runner accepts. When a lock or a
// nemesis is renamed, this says which scenario to fix.
func TestCatalogueRunsInThisBuild(t *testing.T) {
	cat, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cat {
		if why := s.Unavailable(); why != "" {
			t.Errorf("%s: %s", s.Name, why)
			continue
		}
		cfg := s.RunConfig(false)
		cfg.Out = t.TempDir()
		if err := runner.Validate(cfg); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}

const valid = `
shows: something
source: somewhere
expect:
  verdict: violation
lock:
  name: token-lua
workload:
  ttl: 300ms
  hold: 2ttl
faults:
  nemeses:
    - name: pause-client
      options:
        duration: 3ttl
duration: 6s
`

func TestParseFillsTheRun(t *testing.T) {
	s, err := Parse("scenarios/x.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config
	if s.Name != "x" || c.Lock != "token-lua" || c.TTL != 300*time.Millisecond || c.Hold != 600*time.Millisecond ||
		c.Duration != 6*time.Second || c.Clients != settings.DefaultClients || c.Keys != settings.DefaultKeys || c.Seed != DefaultSeed ||
		strings.Join(c.Nemeses, ",") != "pause-client" || c.NemesisOptions["pause-client"]["duration"] != "3ttl" {
		t.Errorf("config %+v", c)
	}
	if s.QuickDuration != MaxQuick {
		t.Errorf("quick duration %v, want the full 6s capped at %v", s.QuickDuration, MaxQuick)
	}
	if s.Expect.Verdict != checker.Violation || s.Expect.Deadlock != nil {
		t.Errorf("expect %+v", s.Expect)
	}
	quick := s.RunConfig(true)
	quick.NemesisOptions["pause-client"]["duration"] = "changed"
	if quick.Duration != MaxQuick || s.Config.NemesisOptions["pause-client"]["duration"] != "3ttl" {
		t.Errorf("RunConfig(true): duration %v, and it must not share maps with the scenario", quick.Duration)
	}
}

// TestMalformedFilesSayFileLineFieldAndWhatIsAllowed: each error names the
// file, the line, the field and what the field accepts.
func TestMalformedFilesSayFileLineFieldAndWhatIsAllowed(t *testing.T) {
	for _, tc := range []struct {
		name, edit, replace string
		want                []string
	}{
		{"unknown field", "  ttl: 300ms", "  tll: 300ms", []string{"bad.yaml:9: workload.tll: unknown field; allowed here: clients, keys, ttl, hold"}},
		{"unknown top-level field", "duration: 6s", "duraton: 6s", []string{"bad.yaml:", "duraton: unknown field; allowed here: shows, source, expect", "(did you mean duration?)"}},
		{"not a number", "  ttl: 300ms", "  ttl: 300ms\n  clients: four", []string{"workload.clients: \"four\": want a whole number"}},
		{"bad duration", "  hold: 2ttl", "  hold: soon", []string{"bad.yaml:10: workload.hold:", "want a duration such as 300ms or a multiple of the TTL such as 2ttl"}},
		{"no lock", "lock:\n  name: token-lua\n", "", []string{"bad.yaml: lock.name: missing: want the lock this scenario tests"}},
		{"decimal comma", "  hold: 2ttl", "  hold: 2,5ttl", []string{"bad.yaml:10: workload.hold: \"2,5ttl\": want a duration such as 300ms"}},
		{"number without unit", "  hold: 2ttl", "  hold: 300", []string{"bad.yaml:10: workload.hold:", "a number needs a unit: 300ms"}},
		{"ttl in ttls", "  ttl: 300ms", "  ttl: 2ttl", []string{"bad.yaml:9: workload.ttl: cannot be a multiple of the TTL: want a duration such as 300ms"}},
		{"bad verdict", "  verdict: violation", "  verdict: broken", []string{"bad.yaml:5: expect.verdict: \"broken\": want safe or violation"}},
		{"bad resource", "  verdict: violation", "  verdict: violation\n  resource: fine", []string{"expect.resource: \"fine\": want intact, fenced"}},
		{"missing verdict", "  verdict: violation", "  deadlock: true", []string{"expect.verdict: missing: want safe or violation"}},
		{"missing shows", "shows: something", "", []string{"bad.yaml: shows: missing"}},
		{"nemesis twice", "duration: 6s", "    - name: pause-client\nduration: 6s", []string{"faults.nemeses[1].name: nemesis pause-client is listed twice"}},
		{"list expected", "  nemeses:\n    - name: pause-client\n      options:\n        duration: 3ttl", "  nemeses: pause-client", []string{"faults.nemeses: want a list"}},
		{"options not a mapping", "        duration: 3ttl", "        - 3ttl", []string{"faults.nemeses[0].options: want a mapping of NAME: VALUE"}},
		{"bad persistence", "lock:", "topology:\n  persistence: sometimes\nlock:", []string{"topology.persistence: \"sometimes\": want none, everysec or always"}},
		{"bad quick", "duration: 6s", "duration: 6s\nquick: maybe", []string{"quick:", "want skip, or the duration under --quick"}},
		{"not yaml", "shows: something", "shows: [unclosed", []string{"bad.yaml: not valid YAML"}},
		{"two documents", "duration: 6s", "duration: 6s\n---\nshows: again", []string{"want one YAML document"}},
	} {
		src := strings.Replace(valid, tc.edit, tc.replace, 1)
		if src == valid {
			t.Fatalf("%s: the edit %q did not apply", tc.name, tc.edit)
		}
		sc, err := Parse("scenarios/bad.yaml", []byte(src))
		if err == nil {
			err = sc.Complete() // what a catalogue scenario must have
		}
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
	if _, err := Parse("scenarios/empty.yaml", nil); err == nil || !strings.Contains(err.Error(), "scenarios/empty.yaml: the file is empty") {
		t.Errorf("empty file: %v", err)
	}
}

// A scenario for `lockchaos run` needs no shows line and no expectation;
// the catalogue refuses one without them, naming what is missing.
func TestOnlyACatalogueScenarioMustSayWhatItShowsAndExpects(t *testing.T) {
	src := strings.Replace(strings.Replace(valid, "shows: something", "", 1), "  verdict: violation", "", 1)
	s, err := Parse("scenarios/adhoc.yaml", []byte(src))
	if err != nil {
		t.Fatalf("a scenario without shows and expect: %v", err)
	}
	if s.Expect.Verdict != "" || s.Config.Lock != "token-lua" {
		t.Errorf("scenario %+v", s)
	}
	err = s.Complete()
	if err == nil || !strings.Contains(err.Error(), "adhoc.yaml: shows: missing") || !strings.Contains(err.Error(), "expect.verdict: missing") {
		t.Errorf("Complete: %v, want both missing fields named", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "adhoc.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadGlob(filepath.Join(dir, "*.yaml")); err == nil || !strings.Contains(err.Error(), "shows: missing") {
		t.Errorf("LoadGlob of a scenario without shows: %v, want an error", err)
	}
}

// TestScenarioNamingWhatNoBuildKnowsIsAnError: a lock, nemesis or option
// that no build of lockchaos knows is a typo, refused at its line with what
// it was near — not a cell skipped for what this build lacks, which would
// pass the matrix unseen.
func TestScenarioNamingWhatNoBuildKnowsIsAnError(t *testing.T) {
	for _, tc := range []struct{ edit, replace, want string }{
		{"  name: token-lua", "  name: token-lau", "scenarios/later.yaml:7: lock.name: lock token-lau not available (did you mean token-lua?)"},
		{"    - name: pause-client", "    - name: cosmic-ray", "scenarios/later.yaml:13: faults.nemeses[0].name: nemesis cosmic-ray not available"},
		{"        duration: 3ttl", "        strength: 11", "scenarios/later.yaml:15: faults.nemeses[0].options.strength: nemesis pause-client has no option strength in this build"},
		{"        duration: 3ttl", "        duraton: 3ttl", "scenarios/later.yaml:15: faults.nemeses[0].options.duraton: nemesis pause-client has no option duraton in this build (did you mean duration?)"},
	} {
		_, err := Parse("scenarios/later.yaml", []byte(strings.Replace(valid, tc.edit, tc.replace, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse: %v, want %q", err, tc.want)
		}
	}
}

func TestGridExpectationsAreValidated(t *testing.T) {
	_, err := ParseGrid("scenarios/grid.yaml", []byte("cell:\n  duration: 2s\nexpect:\n  token-lua:\n    none: fine\n"))
	if err == nil || !strings.Contains(err.Error(), "scenarios/grid.yaml:5: expect.token-lua.none: \"fine\": want safe or violation") {
		t.Errorf("error %v", err)
	}
	_, err = ParseGrid("scenarios/grid.yaml", []byte("cell:\n  workload:\n    clients: 0.5\n"))
	if err == nil || !strings.Contains(err.Error(), "cell.workload.clients") {
		t.Errorf("error %v", err)
	}
}

// Every cell of the built-in grid that can run has an expectation: none is
// skipped for the lack of one, none only observed.
func TestGridExpectsEveryCellThatRuns(t *testing.T) {
	t.Chdir(t.TempDir()) // from any directory: the lua lock's script is the bundled one
	g, err := LoadGrid()
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Plan(PlanOptions{Grid: &g, Catalogue: []Scenario{}, Validate: runner.Validate})
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, c := range cells {
		switch {
		case c.Skip == "":
			ran++
			if c.Expect.Verdict == "" {
				t.Errorf("%s runs without an expectation", c.Name)
			}
		case c.Skip != StatusNA:
			t.Errorf("%s is %s: %s", c.Name, c.Skip, c.Why)
		}
	}
	if ran < 150 {
		t.Errorf("only %d grid cells run", ran)
	}
	if g.Expect["reentrant-watchdog"]["none"] != checker.Safe || g.Expect["reentrant-watchdog"]["slow-hold"] != checker.Safe || g.Expect["fenced"]["crash-restart"] != checker.Violation {
		t.Errorf("merged expectations: %v", g.Expect["reentrant-watchdog"])
	}
}

// --scenario takes a file, or a built-in scenario's name from any
// directory; an unknown name lists the built-in ones.
func TestLoadByNameOrFile(t *testing.T) {
	onDisk, err := LoadFile("pause-past-ttl-token-lua.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Load("pause-past-ttl-token-lua.yaml"); err != nil || s.File != "pause-past-ttl-token-lua.yaml" {
		t.Errorf("a file in the working directory: %s, %v", s.File, err)
	}
	t.Chdir(t.TempDir())
	for _, arg := range []string{"pause-past-ttl-token-lua", "pause-past-ttl-token-lua.yaml"} {
		s, err := Load(arg)
		if err != nil || s.Name != "pause-past-ttl-token-lua" || s.File != "scenarios/pause-past-ttl-token-lua.yaml" || s.Config.Lock != onDisk.Config.Lock || s.Expect != onDisk.Expect {
			t.Errorf("Load(%q) = %s (%s), %v; want the built-in scenario", arg, s.Name, s.File, err)
		}
	}
	file := filepath.Join(t.TempDir(), "pause-past-ttl-token-lua.yaml")
	if err := os.WriteFile(file, []byte("shows: mine\nexpect:\n  verdict: safe\nlock:\n  name: set-nx-px\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(file); err != nil || s.Shows != "mine" {
		t.Errorf("a file named like a built-in scenario: %q, %v; want the file", s.Shows, err)
	}
	for arg, want := range map[string]string{
		"no-such-scenario": `scenario "no-such-scenario": no such file, and no built-in scenario has that name; built-in: `,
		"grid":             "no built-in scenario has that name",
		"scenarios/pause-past-ttl-token-lua.yaml": "(the built-in scenario of that name is --scenario pause-past-ttl-token-lua)",
	} {
		_, err := Load(arg)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%q): %v, want %q", arg, err, want)
		}
		if strings.Contains(want, "built-in: ") && !strings.Contains(err.Error(), "pause-past-ttl-token-lua, ") {
			t.Errorf("Load(%q): %v, want the built-in names listed", arg, err)
		}
	}
}

// A grid cell's liveness: available unless it says +stuck (a key must get
// stuck) or +stuck? (it may or may not, as the run falls: not judged).
func TestGridLivenessSuffixes(t *testing.T) {
	g, err := ParseGrid("grid.yaml", []byte("cell:\n  duration: 2s\nexpect:\n  token-lua:\n    none: safe\n    reset-peer: safe+stuck\n    crash-restart: safe+stuck?\n"))
	if err != nil {
		t.Fatal(err)
	}
	for nem, want := range map[string]string{"none": LivenessAvailable, "reset-peer": LivenessStuck, "crash-restart": ""} {
		if got := g.Liveness["token-lua"][nem]; got != want || g.Expect["token-lua"][nem] != checker.Safe {
			t.Errorf("%s: liveness %q, verdict %q; want %q, safe", nem, got, g.Expect["token-lua"][nem], want)
		}
	}
}

// A grid cell marked "n/a: REASON" is a fault that cannot reach the lock
// under the grid's workload: it does not run, and says why; "n/a:" without
// a reason is refused like any other bad expectation.
func TestAGridCellMarkedNotApplicableSaysWhy(t *testing.T) {
	g, err := ParseGrid("grid.yaml", []byte("cell:\n  workload:\n    clients: 2\nexpect:\n  token-lua:\n    none: safe\n    pause-client: \"n/a: no pause can be aimed here\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Plan(PlanOptions{Grid: &g, Catalogue: []Scenario{}, Validate: runner.Validate, Filter: "token-lua+*"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Cell{}
	for _, c := range cells {
		got[c.Name] = c
	}
	if c := got["token-lua+pause-client"]; c.Skip != StatusNA || c.Why != "no pause can be aimed here (grid.yaml)" {
		t.Errorf("token-lua+pause-client: %s, %q", c.Skip, c.Why)
	}
	if c := got["token-lua+none"]; c.Skip != "" || c.Expect.Verdict != checker.Safe {
		t.Errorf("token-lua+none: %s, %q, %v", c.Skip, c.Why, c.Expect)
	}
	_, err = ParseGrid("grid.yaml", []byte("cell:\n  workload:\n    clients: 2\nexpect:\n  token-lua:\n    none: \"n/a:\"\n"))
	if err == nil || !strings.Contains(err.Error(), "n/a: REASON") {
		t.Errorf("n/a without a reason: %v", err)
	}
}
