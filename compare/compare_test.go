package compare

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

func TestWilsonMatchesPublishedValues(t *testing.T) {
	// Values from Wilson (1927) as tabulated by Newcombe (1998), method 3.
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 20, 0, 0.1611},
		{1, 20, 0.0089, 0.2361},
		{10, 20, 0.2993, 0.7007},
		{20, 20, 0.8389, 1},
		{81, 263, 0.2553, 0.3662},
		{1, 1, 0.2065, 1},
	} {
		lo, hi := Wilson(c.k, c.n)
		if math.Abs(lo-c.lo) > 5e-4 || math.Abs(hi-c.hi) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
	if lo, hi := Wilson(0, 0); lo != 0 || hi != 1 {
		t.Errorf("no trials: [%v, %v], want [0, 1]", lo, hi)
	}
}

func TestQuantileInterpolates(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if q := Quantile(s, 0.5); q != 5.5 {
		t.Errorf("median %v", q)
	}
	if q := Quantile(s, 0.9); math.Abs(q-9.1) > 1e-9 {
		t.Errorf("p90 %v", q)
	}
	if q := Quantile([]float64{3}, 0.9); q != 3 {
		t.Errorf("one value: %v", q)
	}
	if q := Quantile(nil, 0.5); q != 0 {
		t.Errorf("none: %v", q)
	}
}

// fakeResult is what a run of lock × seed returns in the pure-logic tests:
// "broken" violates every seed, "sound" never does, "flaky" has faults that
// do not land at the first attempt of each seed.
func fakeResult(cfg settings.Run, attempt int) checker.Result {
	fault := 150.0
	res := checker.Result{Verdict: checker.Safe, Nemesis: []string{"pause-client"},
		Evidence: checker.Evidence{Faults: 1, Landed: 1, Overlaps: map[string]int{}},
		Acquire:  checker.AcquireStats{Attempted: 10, OK: 8, P50ms: 1, P99ms: 4, DuringFaults: checker.Availability{Attempted: 4, OK: 1}},
		Mutex:    checker.MutexResult{Holds: 8}, WorkloadMs: 2000}
	switch {
	case cfg.Lock == "broken":
		res.Verdict = checker.Violation
		res.Mutex.OverlapCount = 1
		res.Evidence.Overlaps[checker.CauseFault] = 1
		res.Evidence.LandedFaultOverlaps = 1
		v := fault * float64(cfg.Seed)
		res.FirstViolationMs = &v
		res.Resource.LostUpdates = 1
	case cfg.Lock == "flaky" && attempt == 1:
		res.Evidence.Landed = 0
	}
	return res
}

func fakeCells(locks ...string) []Cell {
	var cells []Cell
	for _, l := range locks {
		cells = append(cells, Cell{Lock: l, Nemesis: "pause-client", Config: settings.Run{Lock: l, Nemeses: []string{"pause-client"}, Seed: 1, Workload: workload.Workload{TTL: 300 * time.Millisecond}}})
	}
	return cells
}

// TestEarlyStopEndsABrokenCellOnly: a cell that violates stops once it has
// run MinSeeds seeds; a sound one runs them all; a seed whose faults did
// not land runs again with the same seed.
func TestEarlyStopEndsABrokenCellOnly(t *testing.T) {
	var mu sync.Mutex
	attempts := map[string]int{}
	run := func(_ context.Context, cfg settings.Run) (checker.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		key := fmt.Sprint(cfg.Lock, cfg.Seed)
		attempts[key]++
		return fakeResult(cfg, attempts[key]), nil
	}
	spec := Spec{Locks: []string{"broken", "sound", "flaky"}, Nemeses: []string{"pause-client"}, Seeds: 8, FirstSeed: 1, EarlyStop: true, MinSeeds: 3, Parallel: 1}
	var progress bytes.Buffer
	c := Execute(context.Background(), spec, fakeCells("broken", "sound", "flaky"), Options{Out: t.TempDir(), Run: run, Progress: &progress})
	broken, sound, flaky := c.Rows[0], c.Rows[1], c.Rows[2]
	if broken.Seeds != 3 || !broken.StoppedEarly || broken.Violations != 3 {
		t.Errorf("broken: %d seeds, stopped early %v, %d violations; want 3, true, 3", broken.Seeds, broken.StoppedEarly, broken.Violations)
	}
	if sound.Seeds != 8 || sound.StoppedEarly || sound.Violations != 0 || sound.Safe != 8 {
		t.Errorf("sound: %d seeds (%d safe), stopped early %v; want 8 safe, false", sound.Seeds, sound.Safe, sound.StoppedEarly)
	}
	if flaky.Safe != 8 || flaky.Inconclusive != 0 || flaky.Runs[0].Attempts != 2 || flaky.Runs[0].Dir != "flaky+pause-client/seed1.attempt2" {
		t.Errorf("flaky: %d safe, %d inconclusive, first run %+v; want 8 safe after a second attempt each", flaky.Safe, flaky.Inconclusive, flaky.Runs[0])
	}
	if r := flaky.Runs[0]; len(r.Retried) != 1 || r.Retried[0] != "none of the 1 faults landed" ||
		!strings.Contains(progress.String(), "after 2 attempts (1 earlier attempt was no evidence, so it ran again; the first: none of the 1 faults landed)") {
		t.Errorf("the retried attempt is not explained: %+v\n%s", r, progress.String())
	}
	if *broken.DetectionRate != 1 || *broken.CILow <= 0 || *sound.DetectionRate != 0 || *sound.CIHigh >= 0.5 {
		t.Errorf("rates: broken %v [%v, %v], sound %v [%v, %v]", *broken.DetectionRate, *broken.CILow, *broken.CIHigh, *sound.DetectionRate, *sound.CILow, *sound.CIHigh)
	}
	// TTFV of seed s is 150·s ms at a 300 ms TTL: 0.5, 1.0, 1.5 TTLs.
	if *broken.TTFVMedianTTL != 1 || math.Abs(*broken.TTFVP90TTL-1.4) > 1e-9 {
		t.Errorf("ttfv median %v, p90 %v; want 1, 1.4", *broken.TTFVMedianTTL, *broken.TTFVP90TTL)
	}
	if *sound.AcquireOKRate != 0.8 || *sound.FaultAcquireOKRate != 0.25 || sound.HoldsPerS != 4 || *sound.FaultsLanded != 8 {
		t.Errorf("sound: ok rate %v, during faults %v, holds/s %v, faults landed %v", *sound.AcquireOKRate, *sound.FaultAcquireOKRate, sound.HoldsPerS, *sound.FaultsLanded)
	}
	if broken.LostUpdatesTotal != 3 {
		t.Errorf("lost updates %d, want 3", broken.LostUpdatesTotal)
	}
	if !strings.Contains(progress.String(), "stops early") || !strings.Contains(progress.String(), "[cell 3/3, ") {
		t.Errorf("progress does not say a cell stopped early, or which cell of how many:\n%s", progress.String())
	}
}

func TestCSVHasTheColumnsAndLeavesMissingFiguresEmpty(t *testing.T) {
	spec := Spec{Seeds: 2, FirstSeed: 1, Parallel: 1, MinSeeds: 1}
	run := func(_ context.Context, cfg settings.Run) (checker.Result, error) { return fakeResult(cfg, 2), nil }
	cells := append(fakeCells("broken", "sound"), Cell{Lock: "x", Nemesis: "failover", Skip: SkipNA, Why: "needs --replicas"})
	c := Execute(context.Background(), spec, cells, Options{Out: t.TempDir(), Run: run})
	var b bytes.Buffer
	if err := WriteCSV(&b, c.Rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := "lock,nemesis,seeds,violations,detection_rate,ci_low,ci_high,faults_landed,ttfv_median_ttl,ttfv_p90_ttl,acquire_ok_rate,acquire_p50_ms,acquire_p99_ms,holds_per_s,lost_updates_total,stale_accepted_total,inconclusive"
	if got := strings.Join(recs[0][:17], ","); got != want {
		t.Errorf("header\n%s\nwant it to start with\n%s", got, want)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want a header and 3 rows", len(recs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	if r := recs[2]; r[col["ttfv_median_ttl"]] != "" || r[col["detection_rate"]] != "0.0000" {
		t.Errorf("sound row: ttfv %q (want empty: no violation), rate %q", r[col["ttfv_median_ttl"]], r[col["detection_rate"]])
	}
	if r := recs[3]; r[col["status"]] != "n/a" || r[col["seeds"]] != "" || r[col["detection_rate"]] != "" {
		t.Errorf("n/a row: %v", r)
	}
}

// A fault column NEMESIS:KEY=VALUE runs the grid's cell of that nemesis
// with the options set on top of the grid's (the others kept) and the key
// persistence as the lock nodes' persistence; a misspelt option or a bad
// value is the user's to fix, named before anything runs.
func TestFaultColumnsSetTheirOptionsOnTheGrids(t *testing.T) {
	g, err := scenarios.LoadGrid()
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Locks: []string{"token-lua"}, Nemeses: []string{"pause-client", "pause-client:phase=acquire", "crash-restart:persistence=always,delay=1.5ttl"},
		Seeds: 1, MinSeeds: 1, Parallel: 1}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	cells := Plan(spec, g, nil, scenarios.Variant{}, func(settings.Run) error { return nil })
	if len(cells) != 3 {
		t.Fatalf("%d cells, want 3", len(cells))
	}
	plain, acquire, crash := cells[0].Config, cells[1].Config, cells[2].Config
	for _, c := range cells {
		if c.Skip != "" {
			t.Errorf("%s: %s %s", c.Name(), c.Skip, c.Why)
		}
	}
	if got := acquire.NemesisOptions["pause-client"]; got["phase"] != "acquire" || got["duration"] != plain.NemesisOptions["pause-client"]["duration"] || got["duration"] == "" {
		t.Errorf("pause-client:phase=acquire options %v; want phase=acquire and the grid's duration %q", got, plain.NemesisOptions["pause-client"]["duration"])
	}
	if plain.NemesisOptions["pause-client"]["phase"] != "" {
		t.Errorf("the plain column took the variant's phase: %v", plain.NemesisOptions["pause-client"])
	}
	if crash.Persistence != "always" || crash.NemesisOptions["crash-restart"]["delay"] != "1.5ttl" || crash.NemesisOptions["crash-restart"]["votes"] != "spare" {
		t.Errorf("crash-restart:persistence=always,delay=1.5ttl: persistence %q, options %v; want always, delay 1.5ttl and the grid's votes=spare", crash.Persistence, crash.NemesisOptions["crash-restart"])
	}
	if got := cells[1].Name(); got != "token-lua+pause-client.phase=acquire" {
		t.Errorf("cell name %q", got)
	}
	for nem, says := range map[string]string{
		"pause-client:phse=acquire":     `pause-client has no option "phse" (did you mean phase?)`,
		"crash-restart:persistence=aof": `persistence "aof": want none, everysec or always`,
		"pause-client:":                 "want NEMESIS:KEY=VALUE",
		"pause-client:phase":            `"phase" is not KEY=VALUE`,
		"pause-clinet:phase=acquire":    "pause-clinet",
	} {
		spec.Nemeses = []string{nem}
		if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("--nemeses %s: %v; want it to say %q", nem, err, says)
		}
	}
}

// TestASeedWhoseServersDidNotStartRunsAgain: compare runs a seed again when
// its store did not start (settings.StartError), as the matrix does; any
// other error ends the seed as an error at once.
func TestASeedWhoseServersDidNotStartRunsAgain(t *testing.T) {
	var mu sync.Mutex
	attempts := map[string]int{}
	run := func(_ context.Context, cfg settings.Run) (checker.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		attempts[cfg.Lock]++
		switch {
		case cfg.Lock == "broken" && attempts[cfg.Lock] == 1:
			return checker.Result{}, settings.StartError{Err: fmt.Errorf("start the etcd ensemble: did not answer")}
		case cfg.Lock == "sound":
			return checker.Result{}, fmt.Errorf("adapter exited")
		}
		return fakeResult(cfg, 2), nil
	}
	spec := Spec{Seeds: 1, FirstSeed: 1, Parallel: 1, MinSeeds: 1}
	c := Execute(context.Background(), spec, fakeCells("broken", "sound"), Options{Out: t.TempDir(), Run: run})
	if r := c.Rows[0].Runs[0]; r.Outcome != OutcomeViolation || r.Attempts != 2 {
		t.Errorf("a seed whose servers did not start at first: %s after %d attempts, want a violation after 2", r.Outcome, r.Attempts)
	}
	if r := c.Rows[1].Runs[0]; r.Outcome != OutcomeError || r.Attempts != 1 {
		t.Errorf("a seed that failed otherwise: %s after %d attempts, want an error after 1", r.Outcome, r.Attempts)
	}
}
