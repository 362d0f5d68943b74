package scenarios

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/settings"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		i, n int
		err  string
	}{
		{"1/3", 1, 3, ""}, {"3/3", 3, 3, ""}, {"1/1", 1, 1, ""}, {" 2 / 5 ", 2, 5, ""},
		{"0/3", 0, 0, "counts from 1 to 3"}, {"4/3", 0, 0, "counts from 1 to 3"}, {"-1/3", 0, 0, "counts from 1 to 3"},
		{"x", 0, 0, "want I/N"}, {"1", 0, 0, "want I/N"}, {"1/x", 0, 0, "want I/N"}, {"", 0, 0, "want I/N"},
		{"1/0", 0, 0, "at least 1 shard"},
	} {
		i, n, err := ParseShard(tc.in)
		if tc.err == "" && (err != nil || i != tc.i || n != tc.n) {
			t.Errorf("ParseShard(%q) = %d, %d, %v; want %d/%d", tc.in, i, n, err, tc.i, tc.n)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n")) {
			t.Errorf("ParseShard(%q): error %v, want one line saying %q", tc.in, err, tc.err)
		}
	}
}

// planLike is a matrix shaped like the real one: a catalogue, then a grid
// with cells that run, n/a cells and skipped cells.
func planLike() []Cell {
	var cells []Cell
	for i := 0; i < 21; i++ {
		cells = append(cells, fakeCell(fmt.Sprintf("scenario-%02d", i), checker.Violation, time.Duration(i%4+1)*time.Second))
	}
	for _, l := range []string{"set-nx-px", "token-lua", "redlock", "fenced", "lua"} {
		for j, n := range []string{"none", "pause-client", "crash-restart", "failover", "latency", "clock-jump"} {
			c := Cell{Name: GridName(l, n), Kind: KindGrid, Lock: l, Nemesis: n, Expect: Expectation{Verdict: checker.Safe}}
			switch {
			case j == 3 && l != "redlock":
				c.Skip = StatusNA
			case l == "lua" && j == 5:
				c.Skip, c.Reason = StatusSkipped, SkipMissingFile
			}
			cells = append(cells, c)
		}
	}
	return cells
}

func TestShardOfPartitionsTheMatrixByName(t *testing.T) {
	cells := planLike()
	for n := 1; n <= 7; n++ {
		owner := map[string]int{}
		var sizes []int
		for i := 1; i <= n; i++ {
			part := ShardOf(cells, i, n)
			sizes = append(sizes, len(part))
			last := -1
			for _, c := range part {
				if prev, ok := owner[c.Name]; ok {
					t.Fatalf("%d shards: %s is in shards %d and %d", n, c.Name, prev, i)
				}
				owner[c.Name] = i
				idx := indexOf(cells, c.Name)
				if idx < last {
					t.Errorf("%d shards: shard %d is not in the matrix's order", n, i)
				}
				last = idx
			}
		}
		if len(owner) != len(cells) {
			t.Errorf("%d shards hold %d of %d cells", n, len(owner), len(cells))
		}
		// Balanced: every group (catalogue, grid runs, cells that do not
		// run) is dealt out in turn, so no shard has more than one extra
		// of each.
		for i := 1; i <= n; i++ {
			cat, run := 0, 0
			for _, c := range ShardOf(cells, i, n) {
				if c.Kind == KindCatalogue {
					cat++
				} else if c.Skip == "" {
					run++
				}
			}
			if cat < 21/n || cat > 21/n+1 {
				t.Errorf("%d shards: shard %d has %d catalogue cells of 21", n, i, cat)
			}
		}
		t.Logf("%d shards: sizes %v", n, sizes)
	}
	// Deterministic and by name only: the same cells given in another
	// order (another machine's plan, a reordered catalogue) fall in the
	// same shards.
	reversed := append([]Cell(nil), cells...)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	for i := 1; i <= 3; i++ {
		a, b := names(ShardOf(cells, i, 3)), names(ShardOf(reversed, i, 3))
		if !sameSet(a, b) {
			t.Errorf("shard %d/3 depends on the cells' order: %v vs %v", i, a, b)
		}
		if again := names(ShardOf(cells, i, 3)); !reflect.DeepEqual(a, again) {
			t.Errorf("shard %d/3 differs from one call to the next", i)
		}
	}
	if got := ShardOf(cells, 1, 1); len(got) != len(cells) {
		t.Errorf("1/1 holds %d of %d cells", len(got), len(cells))
	}
}

func indexOf(cells []Cell, name string) int {
	for i, c := range cells {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func names(cells []Cell) []string { return Names(cells) }

// sameSet says whether a and b hold the same strings, counted.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// fakeRun decides each cell's verdict from its name, as a real run's
// would be decided by its lock and faults.
func fakeRun(_ context.Context, cfg settings.Run) (checker.Result, error) {
	name := filepath.Base(cfg.Out)
	switch {
	case strings.HasSuffix(name, "3"), strings.HasSuffix(name, "latency"):
		return evidence(checker.Safe, 0, 0, nil), nil // a mismatch where a violation is expected
	case strings.HasSuffix(name, "7"):
		return checker.Result{Verdict: checker.Inconclusive, Summary: "checker timed out"}, nil
	}
	return evidence(checker.Violation, 0, 0, map[string]int{checker.CauseNone: 1}), nil
}

func comparable(s Summary) Summary {
	st := s.Stable()
	return st
}

func TestMergeOfShardsEqualsTheUnshardedMatrix(t *testing.T) {
	cells := planLike()
	whole := Execute(context.Background(), cells, ExecOptions{Out: t.TempDir(), Parallel: 4, Run: fakeRun})
	var sums []Summary
	var dirs []string
	for i := 1; i <= 3; i++ {
		sh := &Shard{Index: i, Count: 3}
		s := Execute(context.Background(), ShardOf(cells, i, 3), ExecOptions{Out: t.TempDir(), Parallel: 2, Run: fakeRun, Shard: sh, Matrix: cells})
		if s.Plan != whole.Plan || s.Shard == nil || len(s.Shard.Planned) != len(cells) || !reflect.DeepEqual(s.Locks, whole.Locks) {
			t.Fatalf("shard %d: plan %s (whole %s), shard %+v", i, s.Plan, whole.Plan, s.Shard)
		}
		// Round-trip through the file, as merge reads it.
		dir := t.TempDir()
		if err := s.Write(dir); err != nil {
			t.Fatal(err)
		}
		back, err := ReadSummary(dir)
		if err != nil {
			t.Fatal(err)
		}
		sums, dirs = append(sums, back), append(dirs, fmt.Sprintf("shard%d", i))
	}
	// Any order of the folders.
	merged, missing, err := Merge([]string{dirs[2], dirs[0], dirs[1]}, []Summary{sums[2], sums[0], sums[1]})
	if err != nil || len(missing) != 0 {
		t.Fatalf("merge: %v, missing %v", err, missing)
	}
	if got, want := comparable(merged), comparable(whole); !reflect.DeepEqual(got, want) {
		t.Errorf("the merged summary differs from the unsharded one:\n%+v\n%+v", got, want)
	}
	if merged.Outcome != OutcomeMismatch || merged.Shard != nil || merged.Plan != whole.Plan {
		t.Errorf("merged: outcome %s, shard %v, plan %s", merged.Outcome, merged.Shard, merged.Plan)
	}

	// A missing shard: its cells are not run, and the matrix incomplete.
	part, missing, err := Merge(dirs[:2], sums[:2])
	if err != nil || !reflect.DeepEqual(missing, []string{"3/3"}) || len(part.Cells) != len(cells) {
		t.Fatalf("merge of 2 of 3 shards: %v, missing %v, %d cells", err, missing, len(part.Cells))
	}
	if part.Counts[StatusNotRun] != len(sums[2].Cells) {
		t.Errorf("%d cells not run, want shard 3's %d", part.Counts[StatusNotRun], len(sums[2].Cells))
	}
	for _, c := range part.Cells {
		if c.Status == StatusNotRun && (c.Kind == KindGrid) != strings.Contains(c.Name, "+") {
			t.Errorf("%s: kind %s", c.Name, c.Kind)
		}
	}

	// What merge refuses, each in one line.
	quick := sums[1]
	quick.Quick, quick.Plan = true, "0123456789abcdef"
	other := sums[1]
	other.Shard = &Shard{Index: 2, Count: 4, Planned: other.Shard.Planned}
	stray := sums[1]
	stray.Cells = append(append([]CellResult(nil), stray.Cells...), CellResult{Name: "not-in-plan", Status: StatusMatch})
	dup := sums[1]
	dup.Shard = &Shard{Index: 3, Count: 3, Planned: dup.Shard.Planned} // claims shard 3, holds shard 2's cells
	for _, tc := range []struct {
		name string
		sums []Summary
		want string
	}{
		{"same shard twice", []Summary{sums[0], sums[0]}, "both hold shard 1/3"},
		{"overlapping cells", []Summary{sums[1], dup}, "the shards overlap"},
		{"different flags", []Summary{sums[0], quick}, "different configurations"},
		{"different shard counts", []Summary{sums[0], other}, "different configurations"},
		{"a cell not in the plan", []Summary{sums[0], stray}, "not in the shards' plan"},
		{"an old summary", []Summary{{Cells: sums[0].Cells}}, "no plan fingerprint"},
	} {
		_, _, err := Merge([]string{"a", "b"}, tc.sums)
		var me MergeError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a MergeError saying %q", tc.name, err, tc.want)
		}
	}
}

// The fingerprint tells matrices apart by what decides their outcomes.
func TestFingerprint(t *testing.T) {
	cells := planLike()
	base := Fingerprint(cells, false, false)
	if Fingerprint(planLike(), false, false) != base {
		t.Error("the same plan has two fingerprints")
	}
	longer := planLike()
	longer[0].Config.Duration++
	expect := planLike()
	expect[30].Expect.Verdict = checker.Violation
	for name, fp := range map[string]string{
		"quick": Fingerprint(cells, true, false), "allow-inconclusive": Fingerprint(cells, false, true),
		"fewer cells": Fingerprint(cells[1:], false, false), "duration": Fingerprint(longer, false, false),
		"expectation": Fingerprint(expect, false, false),
	} {
		if fp == base {
			t.Errorf("a different %s has the same fingerprint", name)
		}
	}
}

// junitDoc is what the tests read back of the XML.
type junitDoc struct {
	XMLName   xml.Name `xml:"testsuites"`
	Tests     int      `xml:"tests,attr"`
	Failures  int      `xml:"failures,attr"`
	Errors    int      `xml:"errors,attr"`
	Skipped   int      `xml:"skipped,attr"`
	Time      float64  `xml:"time,attr"`
	Timestamp string   `xml:"timestamp,attr"`
	Suites    []struct {
		Name      string  `xml:"name,attr"`
		Tests     int     `xml:"tests,attr"`
		Failures  int     `xml:"failures,attr"`
		Errors    int     `xml:"errors,attr"`
		Skipped   int     `xml:"skipped,attr"`
		Time      float64 `xml:"time,attr"`
		Timestamp string  `xml:"timestamp,attr"`
		Hostname  string  `xml:"hostname,attr"`
		Cases     []struct {
			Name    string  `xml:"name,attr"`
			Time    float64 `xml:"time,attr"`
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Error *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitSaysWhatDifferedAndSkipsWhatHasNoExpectation(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(sec float64) string {
		return t0.Add(time.Duration(sec * float64(time.Second))).Format(time.RFC3339Nano)
	}
	// Four runs of 10 s each, two at a time: 20 s of wall time, not 40.
	s := Summary{Started: t0.Format(time.RFC3339), Seconds: 21, Host: "ci-runner-7", Cells: []CellResult{
		{Name: "wrongly-safe", Kind: KindCatalogue, Lock: "token-lua", Expect: "violation", Verdict: "safe", Got: "safe", Status: StatusMismatch,
			Detail: "the pause landed and the lease survived", Dir: "wrongly-safe", Seconds: 10, Began: at(0)},
		{Name: "ok", Kind: KindCatalogue, Lock: "token-lua", Expect: "safe", Verdict: "safe", Got: "safe", Status: StatusMatch, Dir: "ok", Seconds: 10, Began: at(0)},
		{Name: "observed", Kind: KindCatalogue, Lock: "token-lua", Verdict: "violation", Got: "violation", Status: StatusMatch, Dir: "observed", Seconds: 10, Began: at(10)},
		{Name: "unsure", Kind: KindCatalogue, Lock: "token-lua", Expect: "safe", Verdict: "inconclusive", Got: "inconclusive", Status: StatusInconclusive, Detail: "none of the 2 faults landed", Dir: "unsure", Seconds: 10, Began: at(10)},
		{Name: "later", Kind: KindCatalogue, Status: StatusSkipped, SkipReason: SkipMissingFeature, Detail: "lock chubby not available"},
		{Name: "named", Kind: KindCatalogue, Status: StatusSkipped, SkipReason: SkipMissingFeature, Asked: true, Detail: "lock chubby not available"},
		{Name: "x+failover", Kind: KindGrid, Lock: "x", Nemesis: "failover", Status: StatusNA, Detail: "needs replicas"},
		{Name: "x+none", Kind: KindGrid, Lock: "x", Nemesis: "none", Status: StatusSkipped, SkipReason: SkipNoExpectation, Detail: "no expectation for this cell"},
	}}
	s.tally()
	path := filepath.Join(t.TempDir(), "j", "junit.xml")
	if err := s.JUnit(path, "results/m"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var doc junitDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, b)
	}
	if doc.Tests != 8 || doc.Failures != 2 || doc.Errors != 1 || doc.Skipped != 4 || doc.Time != 21 || doc.Timestamp != t0.Format(time.RFC3339) {
		t.Errorf("testsuites: %d tests, %d failures, %d errors, %d skipped, time %v, timestamp %q", doc.Tests, doc.Failures, doc.Errors, doc.Skipped, doc.Time, doc.Timestamp)
	}
	if len(doc.Suites) != 2 {
		t.Fatalf("%d suites", len(doc.Suites))
	}
	cat := doc.Suites[0]
	if cat.Name != "lockchaos.catalogue" || cat.Time != 20 || cat.Hostname != "ci-runner-7" || cat.Timestamp != t0.Format(time.RFC3339) {
		t.Errorf("catalogue suite: time %v (want the wall time 20, not the sum 40), host %q, timestamp %q", cat.Time, cat.Hostname, cat.Timestamp)
	}
	cases := map[string]int{}
	for i, c := range cat.Cases {
		cases[c.Name] = i
	}
	c := cat.Cases[cases["wrongly-safe"]]
	if c.Failure == nil || c.Failure.Type != "mismatch" || c.Failure.Message != "expected violation, got safe: the pause landed and the lease survived" {
		t.Errorf("mismatch: %+v", c.Failure)
	}
	if !strings.Contains(c.SystemOut, "\n[[ATTACHMENT|results/m/wrongly-safe/report.html]]") {
		t.Errorf("the report is not attached on a line of its own:\n%s", c.SystemOut)
	}
	if c := cat.Cases[cases["ok"]]; c.Failure != nil || c.Error != nil || c.Skipped != nil || c.Time != 10 {
		t.Errorf("a match with an expectation passes: %+v", c)
	}
	if c := cat.Cases[cases["observed"]]; c.Skipped == nil || !strings.Contains(c.Skipped.Message, "no expectation") {
		t.Errorf("a cell without an expectation must be skipped, not passing: %+v", c)
	}
	if c := cat.Cases[cases["unsure"]]; c.Failure == nil || c.Failure.Type != "inconclusive" || !strings.Contains(c.Failure.Message, "none of the 2 faults landed") {
		t.Errorf("inconclusive: %+v", c.Failure)
	}
	if c := cat.Cases[cases["later"]]; c.Skipped == nil || !strings.Contains(c.Skipped.Message, "chubby") {
		t.Errorf("a cell this build cannot run is skipped: %+v", c)
	}
	if c := cat.Cases[cases["named"]]; c.Error == nil || !strings.Contains(c.Error.Message, "asked for") {
		t.Errorf("a cell asked for by name and skipped is an error: %+v", c)
	}
	grid := doc.Suites[1]
	if grid.Skipped != 2 || grid.Tests != 2 || grid.Time != 0 || grid.Timestamp != s.Started {
		t.Errorf("grid suite %+v", grid)
	}

	// Inconclusive allowed: skipped, not failed.
	s.AllowInconclusive = true
	s.tally()
	if err := s.JUnit(path, ""); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	doc = junitDoc{}
	xml.Unmarshal(b, &doc)
	if doc.Failures != 1 || doc.Skipped != 5 || !strings.Contains(string(b), "[[ATTACHMENT|ok/report.html]]") {
		t.Errorf("allowed: %d failures, %d skipped\n%s", doc.Failures, doc.Skipped, b)
	}
}

func TestOutcomeSaysWhyTheMatrixFailed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cells []CellResult
		allow bool
		want  Outcome
	}{
		{"all match", []CellResult{{Status: StatusMatch}, {Status: StatusNA}}, false, OutcomePassed},
		{"a feature missing", []CellResult{{Status: StatusMatch}, {Status: StatusSkipped, SkipReason: SkipMissingFeature}}, false, OutcomePassed},
		{"no expectation", []CellResult{{Status: StatusMatch}, {Status: StatusSkipped, SkipReason: SkipNoExpectation}}, false, OutcomePassed},
		{"a file missing", []CellResult{{Status: StatusMatch}, {Status: StatusSkipped, SkipReason: SkipMissingFile}}, false, OutcomeIncomplete},
		{"named and skipped", []CellResult{{Status: StatusMatch}, {Status: StatusSkipped, SkipReason: SkipMissingFeature, Asked: true}}, false, OutcomeIncomplete},
		{"inconclusive", []CellResult{{Status: StatusMatch}, {Status: StatusInconclusive}}, false, OutcomeIncomplete},
		{"inconclusive allowed", []CellResult{{Status: StatusMatch}, {Status: StatusInconclusive}}, true, OutcomePassed},
		{"not run", []CellResult{{Status: StatusMatch}, {Status: StatusNotRun}}, false, OutcomeIncomplete},
		{"nothing ran", []CellResult{{Status: StatusNA}}, false, OutcomeIncomplete},
		{"error", []CellResult{{Status: StatusError}, {Status: StatusInconclusive}}, false, OutcomeError},
		{"mismatch wins", []CellResult{{Status: StatusError}, {Status: StatusMismatch}, {Status: StatusInconclusive}}, false, OutcomeMismatch},
	} {
		s := Summary{Cells: tc.cells, AllowInconclusive: tc.allow}
		s.tally()
		if s.Outcome != tc.want || s.Passed != (tc.want == OutcomePassed) {
			t.Errorf("%s: %s (passed %v), want %s", tc.name, s.Outcome, s.Passed, tc.want)
		}
	}
	// A shard with nothing to run is no failure: the merge judges the matrix.
	s := Summary{Shard: &Shard{Index: 3, Count: 3}, Cells: []CellResult{{Status: StatusNA}}}
	s.tally()
	if s.Outcome != OutcomePassed {
		t.Errorf("an empty shard: %s", s.Outcome)
	}
}
