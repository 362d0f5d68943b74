package scenarios

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/rundir"
)

// SummaryFile is the name of a matrix's summary in its folder.
const SummaryFile = "summary.json"

// Summary is what summary.json holds: every cell of one matrix, its
// expectation and its outcome.
type Summary struct {
	Started           string  `json:"started,omitempty"`
	Seconds           float64 `json:"seconds,omitempty"`
	Quick             bool    `json:"quick"`
	AllowInconclusive bool    `json:"allow_inconclusive"`
	// Passed is true when at least one cell ran and no cell fails the
	// matrix: a matrix whose every cell was skipped proves nothing.
	Passed bool `json:"passed"`
	// Outcome says why the matrix passed or failed (and so chaos's exit
	// code): passed, mismatch, error or incomplete.
	Outcome Outcome `json:"outcome"`
	// Host is the machine that ran the cells (the machines, joined, for a
	// merge of shards).
	Host string `json:"host,omitempty"`
	// Plan identifies the matrix's configuration (Fingerprint); Shard, when
	// set, says the summary holds one shard of it.
	Plan  string `json:"plan,omitempty"`
	Shard *Shard `json:"shard,omitempty"`
	// Counts is the number of cells of each status.
	Counts map[Status]int `json:"counts"`
	// Locks and Nemeses are the grid's rows and columns.
	Locks   []string     `json:"locks"`
	Nemeses []string     `json:"nemeses"`
	Cells   []CellResult `json:"cells"`
}

// CellResult is one cell's expectation and outcome.
type CellResult struct {
	Name    string `json:"name"`
	Kind    Kind   `json:"kind"`
	Lock    string `json:"lock"`
	Nemesis string `json:"nemesis"`
	Shows   string `json:"shows,omitempty"`
	Source  string `json:"source,omitempty"`
	File    string `json:"file,omitempty"`
	Seed    int64  `json:"seed,omitempty"`
	// Expect is the expected verdict ("" when only observed), with
	// "+deadlock" when a deadlocked key is expected too.
	Expect string `json:"expect,omitempty"`
	// Verdict is the run's verdict ("" when it did not run or failed).
	Verdict string `json:"verdict,omitempty"`
	// Got is the outcome in the terms of Expect: the verdict, "+deadlock"
	// when a key was left deadlocked, the resource's state when Expect
	// looks at it; "error" when the run failed.
	Got    string `json:"got,omitempty"`
	Status Status `json:"status"`
	// SkipReason says what a skipped cell lacks; Asked, that it was asked
	// for by name (so skipping it fails the matrix as incomplete).
	SkipReason SkipReason `json:"skip_reason,omitempty"`
	Asked      bool       `json:"asked,omitempty"`
	// Detail is the run's one-sentence summary, or why it did not run.
	Detail string `json:"detail,omitempty"`
	// Dir is the folder of the run that decided the outcome, relative to
	// the summary.
	Dir string `json:"dir,omitempty"`
	// Attempts is how many runs the cell took (seeds, and runs again of a
	// seed whose run was no evidence); SeedsRun how many seeds.
	Attempts int     `json:"attempts,omitempty"`
	SeedsRun int     `json:"seeds_run,omitempty"`
	Seconds  float64 `json:"seconds,omitempty"`
	// Began is when the cell's first run started (RFC 3339).
	Began       string `json:"began,omitempty"`
	ReportError string `json:"report_error,omitempty"`
}

// Outcome is a matrix's result as a whole.
type Outcome string

const (
	OutcomePassed Outcome = "passed" // every cell that ran matched, and nothing asked for was skipped
	// OutcomeMismatch: some verdict differed from its expectation.
	OutcomeMismatch Outcome = "mismatch"
	// OutcomeError: some run could not be set up or recorded (and no
	// verdict differed).
	OutcomeError Outcome = "error"
	// OutcomeIncomplete: evidence is missing (and no verdict differed): a
	// cell was inconclusive (unless allowed) or not run, a cell asked for
	// by name or needing a missing file was skipped, or no cell ran.
	OutcomeIncomplete Outcome = "incomplete"
)

// HidesRequest says a skipped cell hides something the user asked for: it
// was named, or it lacks a file (the matrix runs from the wrong folder).
// A cell skipped because this build lacks a feature, or because the grid
// has no expectation for it, is reported but fails nothing.
func (c CellResult) HidesRequest() bool {
	return c.Status == StatusSkipped && (c.Asked || c.SkipReason == SkipMissingFile || c.SkipReason == SkipMissingToolchain)
}

// Fails says whether c makes the matrix fail.
func (s Summary) Fails(c CellResult) bool {
	return c.Status.Fails(s.AllowInconclusive) || c.HidesRequest()
}

func (s *Summary) tally() {
	s.Counts = map[Status]int{}
	var mismatch, errored, incomplete bool
	for _, c := range s.Cells {
		s.Counts[c.Status]++
		switch {
		case c.Status == StatusMismatch:
			mismatch = true
		case c.Status == StatusError:
			errored = true
		case s.Fails(c):
			incomplete = true
		}
	}
	switch {
	case mismatch:
		s.Outcome = OutcomeMismatch
	case errored:
		s.Outcome = OutcomeError
	case incomplete || s.Ran() == 0 && s.Shard == nil:
		s.Outcome = OutcomeIncomplete
	default:
		s.Outcome = OutcomePassed
	}
	s.Passed = s.Outcome == OutcomePassed
}

// Skipped returns the cells skipped (not n/a) and, by reason, how many.
func (s Summary) Skipped() ([]CellResult, map[SkipReason]int) {
	var out []CellResult
	by := map[SkipReason]int{}
	for _, c := range s.Cells {
		if c.Status == StatusSkipped {
			out = append(out, c)
			by[c.SkipReason]++
		}
	}
	return out, by
}

// Ran is the number of cells that ran to an outcome (not skipped, n/a or
// left unrun).
func (s Summary) Ran() int {
	n := 0
	for _, c := range s.Cells {
		switch c.Status {
		case StatusMatch, StatusMismatch, StatusInconclusive, StatusError:
			n++
		}
	}
	return n
}

// Failed returns the cells that make the matrix fail.
func (s Summary) Failed() []CellResult {
	var out []CellResult
	for _, c := range s.Cells {
		if s.Fails(c) {
			out = append(out, c)
		}
	}
	return out
}

// Cell returns the cell named name.
func (s Summary) Cell(name string) (CellResult, bool) {
	for _, c := range s.Cells {
		if c.Name == name {
			return c, true
		}
	}
	return CellResult{}, false
}

// Write writes s as dir/summary.json.
func (s Summary) Write(dir string) error {
	return rundir.WriteJSON(filepath.Join(dir, SummaryFile), s)
}

// ReadSummary reads a summary.json (or a folder holding one).
func ReadSummary(path string) (Summary, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, SummaryFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Summary{}, fmt.Errorf("read matrix summary: %w", err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return Summary{}, fmt.Errorf("read matrix summary %s: %w", path, err)
	}
	return s, nil
}

// Stable returns s without what changes from one run to the next (times,
// folders, the numbers in each run's summary), for a baseline committed to
// the repository: a diff of it shows only changed outcomes.
func (s Summary) Stable() Summary {
	out := Summary{Quick: s.Quick, AllowInconclusive: s.AllowInconclusive, Passed: s.Passed, Outcome: s.Outcome, Counts: s.Counts, Locks: s.Locks, Nemeses: s.Nemeses}
	for _, c := range s.Cells {
		out.Cells = append(out.Cells, CellResult{
			Name: c.Name, Kind: c.Kind, Lock: c.Lock, Nemesis: c.Nemesis, Seed: c.Seed,
			Expect: c.Expect, Verdict: c.Verdict, Got: c.Got, Status: c.Status,
		})
	}
	return out
}

// WriteBaseline writes the Stable form of s to path, one cell per line, so
// that a diff of the file shows one line per changed outcome.
func (s Summary) WriteBaseline(path string) error {
	st := s.Stable()
	cells := st.Cells
	st.Cells = nil
	head, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("[\n")
	for i, c := range cells {
		line, err := json.Marshal(c)
		if err != nil {
			return err
		}
		b.WriteString("    ")
		b.Write(line)
		if i < len(cells)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  ]")
	out := strings.Replace(string(head), `"cells": null`, `"cells": `+b.String(), 1)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create folder for %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(out+"\n"), 0o644); err != nil {
		return fmt.Errorf("write baseline: %w", err)
	}
	return nil
}

// Changes lists the cells whose outcome differs from base, one line each;
// cells of s missing from base are new, cells of base not run now are not
// mentioned (a partial matrix is no change).
func (s Summary) Changes(base Summary) []string {
	var out []string
	for _, c := range s.Cells {
		b, ok := base.Cell(c.Name)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: new (%s, %s)", c.Name, orDash(c.Got), c.Status))
		case b.Got != c.Got || b.Status != c.Status:
			out = append(out, fmt.Sprintf("%s: %s (%s) → %s (%s)", c.Name, orDash(b.Got), b.Status, orDash(c.Got), c.Status))
		}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// JUnit writes the matrix as JUnit XML, one test case per cell in its
// kind's suite (catalogue, grid, or an audit's faults), for CI systems that show test results. dir
// is the matrix's folder as the CI job sees it (relative to the project's
// folder for GitLab, absolute for Jenkins): each case's report is attached
// as [[ATTACHMENT|dir/<run>/report.html]] in its system-out, the form
// GitLab and Jenkins' junit-attachments read.
//
// A mismatch is a failure ("expected violation, got safe: …"); an
// inconclusive cell a failure too, unless allowed; a cell that could not
// run, was interrupted, or was skipped although asked for, an error; a
// cell with no firm expectation (n/a, skipped, only observed, or
// inconclusive and allowed) is skipped, never passing. Times are wall
// times: a suite's time runs from its first cell's start to its last
// cell's end, not the sum of runs that went in parallel.
func (s Summary) JUnit(path, dir string) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Error     *failure `xml:"error,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type testsuite struct {
		Name      string     `xml:"name,attr"`
		Tests     int        `xml:"tests,attr"`
		Failures  int        `xml:"failures,attr"`
		Errors    int        `xml:"errors,attr"`
		Skipped   int        `xml:"skipped,attr"`
		Time      string     `xml:"time,attr"`
		Timestamp string     `xml:"timestamp,attr,omitempty"`
		Hostname  string     `xml:"hostname,attr,omitempty"`
		Cases     []testcase `xml:"testcase"`
	}
	type testsuites struct {
		XMLName   xml.Name    `xml:"testsuites"`
		Name      string      `xml:"name,attr"`
		Tests     int         `xml:"tests,attr"`
		Failures  int         `xml:"failures,attr"`
		Errors    int         `xml:"errors,attr"`
		Skipped   int         `xml:"skipped,attr"`
		Time      string      `xml:"time,attr"`
		Timestamp string      `xml:"timestamp,attr,omitempty"`
		Suites    []testsuite `xml:"testsuite"`
	}
	suites := map[Kind]*testsuite{
		KindCatalogue: {Name: "lockchaos.catalogue"},
		KindGrid:      {Name: "lockchaos.grid"},
		KindAudit:     {Name: "lockchaos.audit"},
		KindRun:       {Name: "lockchaos.run"},
	}
	spans := map[Kind]*wallSpan{KindCatalogue: {}, KindGrid: {}, KindAudit: {}, KindRun: {}}
	for _, c := range s.Cells {
		ts := suites[c.Kind]
		if ts == nil {
			continue
		}
		spans[c.Kind].add(c)
		tc := testcase{Name: c.Name, Classname: ts.Name, Time: fmt.Sprintf("%.3f", c.Seconds)}
		if c.Kind == KindGrid || c.Kind == KindAudit || c.Kind == KindRun {
			tc.Classname = ts.Name + "." + c.Lock
		}
		var out []string
		if c.Shows != "" {
			out = append(out, "shows: "+c.Shows)
		}
		out = append(out, fmt.Sprintf("expected: %s; got: %s; status: %s", orDash(c.Expect), orDash(c.Got), c.Status))
		if c.Detail != "" {
			out = append(out, c.Detail)
		}
		if c.Dir != "" {
			// On a line of its own: junit-attachments wants nothing
			// before or after it.
			out = append(out, "[[ATTACHMENT|"+filepath.Join(dir, c.Dir, rundir.ReportFile)+"]]")
		}
		tc.SystemOut = strings.Join(out, "\n")
		switch {
		case c.Status == StatusMismatch:
			tc.Failure = &failure{Type: "mismatch", Message: fmt.Sprintf("expected %s, got %s: %s", orDash(c.Expect), orDash(c.Got), c.Detail), Text: c.Detail}
			ts.Failures++
		case c.Status == StatusInconclusive && !s.AllowInconclusive:
			tc.Failure = &failure{Type: "inconclusive", Message: fmt.Sprintf("expected %s, got no evidence either way: %s", orDash(c.Expect), c.Detail), Text: c.Detail}
			ts.Failures++
		case c.Status == StatusInconclusive:
			tc.Skipped = &skipped{Message: "inconclusive (allowed): " + c.Detail}
			ts.Skipped++
		case c.Status == StatusError, c.Status == StatusNotRun:
			tc.Error = &failure{Type: string(c.Status), Message: string(c.Status) + ": " + c.Detail, Text: c.Detail}
			ts.Errors++
		case c.HidesRequest():
			tc.Error = &failure{Type: "skipped", Message: "skipped, but asked for: " + c.Detail, Text: c.Detail}
			ts.Errors++
		case c.Status == StatusNA, c.Status == StatusSkipped:
			tc.Skipped = &skipped{Message: string(c.Status) + ": " + c.Detail}
			ts.Skipped++
		case c.Expect == "":
			tc.Skipped = &skipped{Message: "no expectation, only observed: got " + orDash(c.Got)}
			ts.Skipped++
		}
		ts.Cases = append(ts.Cases, tc)
		ts.Tests++
	}
	host := s.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	name := "lockchaos chaos"
	for _, c := range s.Cells {
		if c.Kind == KindAudit || c.Kind == KindRun {
			name = "lockchaos " + string(c.Kind)
		}
	}
	doc := testsuites{Name: name, Time: fmt.Sprintf("%.3f", s.Seconds), Timestamp: s.Started}
	for _, k := range []Kind{KindCatalogue, KindGrid, KindAudit, KindRun} {
		ts := suites[k]
		if ts.Tests == 0 {
			continue
		}
		ts.Time, ts.Timestamp, ts.Hostname = fmt.Sprintf("%.3f", spans[k].seconds()), spans[k].timestamp(), host
		if ts.Timestamp == "" {
			ts.Timestamp = s.Started
		}
		doc.Tests += ts.Tests
		doc.Failures += ts.Failures
		doc.Errors += ts.Errors
		doc.Skipped += ts.Skipped
		doc.Suites = append(doc.Suites, *ts)
	}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create folder for %s: %w", path, err)
		}
	}
	if err := os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644); err != nil {
		return fmt.Errorf("write JUnit XML: %w", err)
	}
	return nil
}

// wallSpan is the wall time of a set of cells: from the first start to the
// last end.
type wallSpan struct{ first, last time.Time }

func (w *wallSpan) add(c CellResult) {
	t, err := time.Parse(time.RFC3339Nano, c.Began)
	if err != nil {
		return
	}
	end := t.Add(time.Duration(c.Seconds * float64(time.Second)))
	if w.first.IsZero() || t.Before(w.first) {
		w.first = t
	}
	if end.After(w.last) {
		w.last = end
	}
}

func (w *wallSpan) seconds() float64 { return w.last.Sub(w.first).Seconds() }

func (w *wallSpan) timestamp() string {
	if w.first.IsZero() {
		return ""
	}
	return w.first.Format(time.RFC3339)
}
