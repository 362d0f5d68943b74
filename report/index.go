package report

import (
	"fmt"
	"html/template"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/report/palette"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
)

// IndexFile is the matrix's page in its folder.
const IndexFile = "index.html"

// Colours of the matrix's cells. A cell is coloured by how it compares with
// its expectation first: one that matched is pale, whatever its verdict,
// and one that fails the matrix is painted in full (a mismatch red, missing
// evidence orange, an error violet), so the real failures stand out among
// sixty expected violations. The verdict comes second, as a bar along the
// cell's foot in the verdict's colour (and in words).
const (
	ColorCellMatch   = "#f8f9fa" // matched its expectation
	ColorCellMissing = "#e8590c" // no evidence: inconclusive, not run, or skipped although asked for
	ColorCellError   = "#7048e8" // the run could not be set up
	ColorCellAllowed = "#fff3bf" // inconclusive, allowed by --allow-inconclusive
	// A mismatch is palette.Mismatch, n/a palette.NA and skipped palette.Skipped.
)

// indexStyles are the index's own, on top of the shared styles.
var indexStyles = template.CSS(`
table.matrix td.cell { border: 2px solid #fff; }
table.matrix td.cell.m-match { background: ` + ColorCellMatch + `; color: #495057; }
table.matrix td.cell.m-mismatch { background: ` + palette.Mismatch + `; color: #fff; font-weight: 700; }
table.matrix td.cell.m-missing { background: ` + ColorCellMissing + `; color: #fff; font-weight: 700; }
table.matrix td.cell.m-error { background: ` + ColorCellError + `; color: #fff; font-weight: 700; }
table.matrix td.cell.m-allowed { background: ` + ColorCellAllowed + `; }
table.matrix td.cell.m-na { background: ` + palette.NA + `; color: #adb5bd; }
table.matrix td.cell.m-skipped { background: ` + palette.Skipped + `; color: #868e96; border: 2px dashed #adb5bd; }
table.matrix td.cell.m-notrun { background: #fff; color: #868e96; }
table.matrix td.cell.b-safe { box-shadow: inset 0 -5px 0 ` + palette.Safe + `; }
table.matrix td.cell.b-violation { box-shadow: inset 0 -5px 0 ` + palette.Violation + `; }
table.matrix td.cell.b-inconclusive { box-shadow: inset 0 -5px 0 ` + palette.Inconclusive + `; }
.swatch.bar-safe { background: ` + ColorCellMatch + `; box-shadow: inset 0 -5px 0 ` + palette.Safe + `; }
.swatch.bar-violation { background: ` + ColorCellMatch + `; box-shadow: inset 0 -5px 0 ` + palette.Violation + `; }
header.o-passed { background: ` + palette.Safe + `; }
header.o-mismatch { background: ` + palette.Mismatch + `; color: #fff; }
header.o-incomplete { background: ` + ColorCellMissing + `; color: #fff; }
header.o-error { background: ` + ColorCellError + `; color: #fff; }
#catalogue-table td.got.b-safe { box-shadow: inset 5px 0 0 ` + palette.Safe + `; }
#catalogue-table td.got.b-violation { box-shadow: inset 5px 0 0 ` + palette.Violation + `; }
#catalogue-table td.got.b-inconclusive { box-shadow: inset 5px 0 0 ` + palette.Inconclusive + `; }
#catalogue-table td.st.m-mismatch { background: ` + palette.Mismatch + `; color: #fff; font-weight: 700; }
#catalogue-table td.st.m-missing { background: ` + ColorCellMissing + `; color: #fff; font-weight: 700; }
#catalogue-table td.st.m-error { background: ` + ColorCellError + `; color: #fff; font-weight: 700; }
#catalogue-table td.st.m-allowed { background: ` + ColorCellAllowed + `; }
#catalogue-table td.st.m-skipped, #catalogue-table td.st.m-na { color: #868e96; }
`)

// WriteIndex renders dir/index.html for the matrix s, whose runs are in
// dir. It returns the path of the page.
func WriteIndex(dir string, s scenarios.Summary) (string, error) {
	d := indexData{Summary: s, Generated: time.Now().Format(time.RFC3339)}
	byName := map[string]scenarios.CellResult{}
	for _, c := range s.Cells {
		byName[c.Name] = c
		if c.Kind == scenarios.KindCatalogue {
			d.Catalogue = append(d.Catalogue, cellView(c, dir, s))
		}
		if v := cellView(c, dir, s); v.Shrink != "" {
			d.Shrinkable = append(d.Shrinkable, v)
		}
		if s.Fails(c) {
			d.Problems = append(d.Problems, cellView(c, dir, s))
		} else if c.Status == scenarios.StatusSkipped {
			d.Skipped = append(d.Skipped, cellView(c, dir, s))
		}
	}
	d.Headline, d.IndexStyles = headline(s), indexStyles
	for _, l := range s.Locks {
		row := matrixRow{Lock: l}
		for _, n := range s.Nemeses {
			c, ok := byName[scenarios.GridName(l, n)]
			if !ok {
				c = scenarios.CellResult{Name: scenarios.GridName(l, n), Lock: l, Nemesis: n, Status: scenarios.StatusNotRun, Detail: "not in this matrix"}
			}
			row.Cells = append(row.Cells, cellView(c, dir, s))
		}
		d.Matrix = append(d.Matrix, row)
	}
	var parts []string
	for _, st := range []scenarios.Status{scenarios.StatusMatch, scenarios.StatusMismatch, scenarios.StatusInconclusive,
		scenarios.StatusError, scenarios.StatusNA, scenarios.StatusSkipped, scenarios.StatusNotRun} {
		if n := s.Counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	d.Counts = strings.Join(parts, ", ")
	if _, err := os.Stat(filepath.Join(dir, scenarios.SummaryFile)); err == nil {
		d.SummaryLink = scenarios.SummaryFile
	}
	page := filepath.Join(dir, IndexFile)
	f, err := os.Create(page)
	if err != nil {
		return "", fmt.Errorf("write index: %w", err)
	}
	if err := indexPage.Execute(f, d); err != nil {
		f.Close()
		return "", fmt.Errorf("render %s: %w", page, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write index: %w", err)
	}
	return page, nil
}

type indexData struct {
	scenarios.Summary
	Counts      string
	Headline    string
	IndexStyles template.CSS
	Problems    []cellData
	Skipped     []cellData
	Matrix      []matrixRow
	Catalogue   []cellData
	Shrinkable  []cellData // the violation cells, with the command that shrinks each
	SummaryLink string
	Generated   string
}

type matrixRow struct {
	Lock  string
	Cells []cellData
}

type cellData struct {
	scenarios.CellResult
	// Class colours the cell: m-<how it compares with the expectation>
	// fills it, b-<verdict> draws the verdict's bar.
	Class string
	// Match is how it compares with its expectation: match, mismatch,
	// missing (no evidence), allowed, error, na, skipped, notrun.
	Match string
	// Text is what the cell says; Mark how it compares with the expectation.
	Text string
	Mark string
	// Link is the run's page, relative to the index; "" when it did not run.
	Link string
	// OK is false when the cell fails the matrix.
	OK bool
	// Shrink is the command that shrinks a violation cell's run
	// (lockchaos shrink); Shrunk and Witness link its minimal.yaml and
	// witness.md once it is shrunk (chaos --shrink), relative to the index.
	Shrink, Shrunk, Witness string
}

func cellView(c scenarios.CellResult, dir string, s scenarios.Summary) cellData {
	d := cellData{CellResult: c, Text: c.Got, OK: !s.Fails(c)}
	match := "match"
	switch c.Status {
	case scenarios.StatusMatch:
		d.Mark = "✓"
		if c.Expect == "" {
			d.Mark = "observed"
		}
	case scenarios.StatusMismatch:
		match, d.Mark = "mismatch", "✗ expected "+c.Expect
	case scenarios.StatusInconclusive:
		match, d.Mark = "missing", "no evidence"
		if s.AllowInconclusive {
			match, d.Mark = "allowed", "no evidence (allowed)"
		}
	case scenarios.StatusError:
		match, d.Text, d.Mark = "error", "error", ""
	case scenarios.StatusNA:
		match, d.Text = "na", "n/a"
	case scenarios.StatusSkipped:
		match, d.Text = "skipped", "skipped"
		if c.HidesRequest() {
			match, d.Mark = "missing", "asked for"
			if c.SkipReason == scenarios.SkipMissingFile {
				d.Mark = "file missing"
			}
		}
	case scenarios.StatusNotRun:
		match, d.Text = "notrun", "not run"
		if !d.OK {
			match = "missing"
		}
	}
	d.Match = match
	d.Class = "cell m-" + match
	if c.Verdict != "" && c.Verdict != "error" {
		d.Class += " b-" + c.Verdict
	}
	if c.Dir != "" {
		if _, err := os.Stat(filepath.Join(dir, c.Dir, rundir.ReportFile)); err == nil {
			d.Link = path.Join(filepath.ToSlash(c.Dir), rundir.ReportFile)
		}
	}
	if c.Dir != "" && c.Verdict == string(checker.Violation) {
		run := filepath.Join(dir, c.Dir)
		d.Shrink = rundir.Program() + " shrink " + shellwords.Quote(run)
		if _, err := os.Stat(filepath.Join(rundir.ShrinkDir(run), rundir.ShrinkScenarioFile)); err == nil {
			if rel, err := filepath.Rel(dir, rundir.ShrinkDir(run)); err == nil {
				d.Shrunk, d.Witness = path.Join(filepath.ToSlash(rel), rundir.ShrinkScenarioFile), path.Join(filepath.ToSlash(rel), rundir.ShrinkWitnessFile)
			}
		}
	}
	return d
}

// headline is the page's title: the outcome, and what is behind it.
func headline(s scenarios.Summary) string {
	n := func(st scenarios.Status) int { return s.Counts[st] }
	skipped := ""
	if k := n(scenarios.StatusSkipped); k > 0 {
		skipped = fmt.Sprintf(" (%d skipped)", k)
	}
	switch s.Outcome {
	case scenarios.OutcomeMismatch:
		if n(scenarios.StatusMismatch) == 1 {
			return "FAILED: 1 verdict differs from its expectation" + skipped
		}
		return fmt.Sprintf("FAILED: %d verdicts differ from their expectation%s", n(scenarios.StatusMismatch), skipped)
	case scenarios.OutcomeError:
		return "FAILED: a run could not be set up or recorded" + skipped
	case scenarios.OutcomeIncomplete:
		return "INCOMPLETE: evidence is missing; no verdict differed" + skipped
	case scenarios.OutcomePassed:
		if skipped != "" {
			return "PASSED: every verdict that ran as expected" + skipped
		}
		return "PASSED: every verdict as expected"
	}
	// A summary from before outcomes were recorded.
	if s.Passed {
		return "PASSED: every verdict as expected"
	}
	return "FAILED: some verdicts differ from their expectation"
}

var indexPage = template.Must(template.New("index").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockchaos chaos: {{.Headline}}</title>
<style>{{styles}}{{.IndexStyles}}</style>
</head>
<body>
<header class="verdict o-{{.Outcome}}" data-outcome="{{.Outcome}}">
<h1 id="outcome">{{.Headline}}</h1>
<p>{{.Counts}}{{if .Quick}} — quick run{{end}}{{if .Started}}; started {{.Started}}, took {{printf "%.0f" .Seconds}} s{{end}}{{if .Host}} on {{.Host}}{{end}}{{if .AllowInconclusive}}; inconclusive cells allowed{{end}}{{if .Shard}}; shard {{.Shard}} of the matrix{{end}}.</p>
</header>

{{if .Problems}}<h2 id="problems">What failed</h2>
<ul class="problems">{{range .Problems}}<li data-cell="{{.Name}}"><b>{{if .Link}}<a href="{{.Link}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</b>: {{if eq .Status "mismatch"}}expected {{.Expect}}, got {{.Got}}{{else}}{{.Status}}{{if .Expect}} — expected {{.Expect}}{{end}}{{if .Got}}, got {{.Got}}{{end}}{{end}}{{if .Detail}}. {{.Detail}}{{end}}{{if .Shrunk}} Shrunk: <a href="{{.Shrunk}}">minimal.yaml</a>, <a href="{{.Witness}}">witness</a>.{{else if .Shrink}} Shrink it: <code>{{.Shrink}}</code>{{end}}</li>
{{end}}</ul>{{end}}
{{if .Skipped}}<h2 id="skipped">Skipped</h2>
<ul class="skipped">{{range .Skipped}}<li data-cell="{{.Name}}"><b>{{.Name}}</b>{{if .SkipReason}} ({{.SkipReason}}){{end}}: {{.Detail}}</li>
{{end}}</ul>{{end}}

{{if .Matrix}}<h2 id="grid">Locks × faults</h2>
<p class="legend muted">
<span><span class="swatch" style="background:` + palette.Mismatch + `"></span><b>differs from the expectation</b></span>
<span><span class="swatch" style="background:` + ColorCellMissing + `"></span><b>no evidence</b> (inconclusive, not run, or skipped although asked for)</span>
<span><span class="swatch" style="background:` + ColorCellError + `"></span><b>error</b></span>
<span><span class="swatch" style="background:` + ColorCellMatch + `;border:1px solid #dee2e6"></span>as expected</span>
<span><span class="swatch" style="background:` + palette.NA + `"></span>n/a: the fault does not apply</span>
<span><span class="swatch" style="border:2px dashed #adb5bd"></span>skipped</span>
<span>verdict, the bar at the foot: <span class="swatch bar-safe"></span>safe <span class="swatch bar-violation"></span>violation</span>
</p>
<table class="matrix" id="matrix">
<tr><th>lock \ fault</th>{{range .Nemeses}}<th class="nem">{{.}}</th>{{end}}</tr>
{{range .Matrix}}<tr><th>{{.Lock}}</th>{{range .Cells}}<td class="{{.Class}}" data-lock="{{.Lock}}" data-nemesis="{{.Nemesis}}" data-verdict="{{.Verdict}}" data-status="{{.Status}}" title="{{.Name}}: {{.Detail}}">{{if .Link}}<a href="{{.Link}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}{{if .Mark}}<span class="mark">{{.Mark}}</span>{{end}}</td>{{end}}</tr>
{{end}}</table>
<p class="muted">Each cell is a short run of the lock against the fault with the grid's workload (scenarios/grid.yaml), linked to its report; every cell has an expectation there. A cell matches only for the right reason: a violation caused by a fault that landed (hit a live lease), safe after at least one fault landed. A cell whose runs were no evidence either way (the faults never landed, or a stall of the harness made the overlap or the unavailability) is inconclusive, and fails the matrix.</p>
{{end}}

{{if .Catalogue}}<h2 id="catalogue">The catalogue of known failure modes</h2>
<table id="catalogue-table">
<tr><th>scenario</th><th>what it shows</th><th>lock</th><th>faults</th><th>source</th><th>expected</th><th>got</th><th>status</th></tr>
{{range .Catalogue}}<tr data-scenario="{{.Name}}" data-status="{{.Status}}">
<td>{{if .Link}}<a href="{{.Link}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</td><td>{{.Shows}}</td><td>{{.Lock}}</td><td>{{.Nemesis}}</td><td class="muted">{{.Source}}</td>
<td>{{.Expect}}</td><td class="got b-{{.Verdict}}">{{.Got}}</td><td class="st m-{{.Match}} {{if .OK}}status-ok{{else}}status-fail{{end}}" title="{{.Detail}}">{{.Status}}{{if or (eq .Status "skipped") (eq .Status "n/a") (eq .Status "error")}}: {{.Detail}}{{end}}</td></tr>
{{end}}</table>{{end}}

{{if .Shrinkable}}<details id="shrink"><summary>Shrink a violation: the smallest run that still violates ({{len .Shrinkable}} {{if eq (len .Shrinkable) 1}}cell{{else}}cells{{end}} violated)</summary>
<p class="muted">Each command searches for fewer faults, clients and keys, a shorter run and hold that still violate, and writes a scenario that reproduces it (minimal.yaml) and its witness; <code>chaos --shrink</code> shrinks every mismatch by itself.</p>
<ul>{{range .Shrinkable}}<li data-cell="{{.Name}}"><b>{{.Name}}</b>: <code>{{.Shrink}}</code>{{if .Shrunk}} — shrunk: <a href="{{.Shrunk}}">minimal.yaml</a>, <a href="{{.Witness}}">witness</a>{{end}}</li>
{{end}}</ul></details>{{end}}

<footer>{{if .SummaryLink}}<a href="{{.SummaryLink}}">summary.json</a> holds every cell's expectation and outcome. {{end}}<code>lockchaos report DIR</code> renders these pages again. Rendered {{.Generated}}.</footer>
</body>
</html>
`))
