package report

import (
	"fmt"
	"html/template"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/scenarios"
)

// IndexFile is the matrix's page in its folder.
const IndexFile = "index.html"

// WriteIndex renders dir/index.html for the matrix s, whose runs are in
// dir. It returns the path of the page.
func WriteIndex(dir string, s scenarios.Summary) (string, error) {
	d := indexData{Summary: s, Generated: time.Now().Format(time.RFC3339)}
	byName := map[string]scenarios.CellResult{}
	for _, c := range s.Cells {
		byName[c.Name] = c
		if c.Kind == scenarios.KindCatalogue {
			d.Catalogue = append(d.Catalogue, cellView(c, dir, s.AllowInconclusive))
		}
		if c.Status.Fails(s.AllowInconclusive) {
			d.Problems = append(d.Problems, cellView(c, dir, s.AllowInconclusive))
		}
	}
	for _, l := range s.Locks {
		row := matrixRow{Lock: l}
		for _, n := range s.Nemeses {
			c, ok := byName[scenarios.GridName(l, n)]
			if !ok {
				c = scenarios.CellResult{Name: scenarios.GridName(l, n), Lock: l, Nemesis: n, Status: scenarios.StatusNotRun, Detail: "not in this matrix"}
			}
			row.Cells = append(row.Cells, cellView(c, dir, s.AllowInconclusive))
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
	Problems    []cellData
	Matrix      []matrixRow
	Catalogue   []cellData
	SummaryLink string
	Generated   string
}

type matrixRow struct {
	Lock  string
	Cells []cellData
}

type cellData struct {
	scenarios.CellResult
	// Class colours the cell: v-<verdict> and s-<status>.
	Class string
	// Text is what the cell says; Mark how it compares with the expectation.
	Text string
	Mark string
	// Link is the run's page, relative to the index; "" when it did not run.
	Link string
	// OK is false when the cell fails the matrix.
	OK bool
}

func cellView(c scenarios.CellResult, dir string, allowInconclusive bool) cellData {
	v := c.Verdict
	d := cellData{CellResult: c, Text: c.Got, OK: !c.Status.Fails(allowInconclusive)}
	switch c.Status {
	case scenarios.StatusMatch:
		d.Mark = "✓"
	case scenarios.StatusMismatch:
		d.Mark = "✗ expected " + c.Expect
	case scenarios.StatusInconclusive:
		d.Mark = "inconclusive"
	case scenarios.StatusError:
		d.Text, d.Mark = "error", ""
	case scenarios.StatusNA:
		d.Text = "n/a"
	case scenarios.StatusSkipped:
		d.Text = "skipped"
	case scenarios.StatusNotRun:
		d.Text = "not run"
	}
	status := strings.ReplaceAll(string(c.Status), "/", "")
	d.Class = "cell s-" + status
	if v != "" {
		d.Class += " v-" + v
	}
	if c.Dir != "" {
		if _, err := os.Stat(filepath.Join(dir, c.Dir, RunFile)); err == nil {
			d.Link = path.Join(filepath.ToSlash(c.Dir), RunFile)
		}
	}
	return d
}

var indexPage = template.Must(template.New("index").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockchaos chaos: {{if .Passed}}passed{{else}}FAILED{{end}}</title>
<style>{{styles}}</style>
</head>
<body>
<header class="verdict {{if .Passed}}v-safe{{else}}v-violation{{end}}">
<h1 id="outcome">lockchaos chaos: {{if .Passed}}every verdict as expected{{else}}some verdicts differ from their expectation{{end}}</h1>
<p>{{.Counts}}{{if .Quick}} — quick run{{end}}{{if .Started}}; started {{.Started}}, took {{printf "%.0f" .Seconds}} s{{end}}{{if .AllowInconclusive}}; inconclusive cells allowed{{end}}.</p>
</header>

{{if .Problems}}<h2>What failed</h2>
<ul class="problems">{{range .Problems}}<li><b>{{if .Link}}<a href="{{.Link}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</b>: {{.Status}}{{if .Expect}} — expected {{.Expect}}{{end}}{{if .Got}}, got {{.Got}}{{end}}{{if .Detail}}. {{.Detail}}{{end}}</li>
{{end}}</ul>{{end}}

{{if .Matrix}}<h2 id="grid">Locks × faults</h2>
<p class="legend muted">
<span><span class="swatch v-safe"></span>safe</span>
<span><span class="swatch v-violation"></span>violation</span>
<span><span class="swatch v-inconclusive"></span>inconclusive</span>
<span><span class="swatch v-error"></span>error</span>
<span><span class="swatch" style="background:` + ColorNA + `"></span>n/a: the fault does not apply</span>
<span><span class="swatch" style="border:2px dashed #ced4da"></span>skipped: not in this build</span>
<span><span class="swatch" style="border:3px solid ` + ColorMismatch + `"></span>differs from the expectation</span>
</p>
<table class="matrix" id="matrix">
<tr><th>lock \ fault</th>{{range .Nemeses}}<th class="nem">{{.}}</th>{{end}}</tr>
{{range .Matrix}}<tr><th>{{.Lock}}</th>{{range .Cells}}<td class="{{.Class}}" data-lock="{{.Lock}}" data-nemesis="{{.Nemesis}}" data-verdict="{{.Verdict}}" data-status="{{.Status}}" title="{{.Name}}: {{.Detail}}">{{if .Link}}<a href="{{.Link}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}{{if .Mark}}<span class="mark">{{.Mark}}</span>{{end}}</td>{{end}}</tr>
{{end}}</table>
<p class="muted">Each cell is a short run of the lock against the fault with the grid's workload (scenarios/grid.yaml), linked to its report; every cell has an expectation there. A cell matches only for the right reason: a violation caused by a fault that landed (hit a live lease), safe after at least one fault landed. A cell whose runs were no evidence either way (the faults never landed, or a stall of the harness made the overlap) is inconclusive, and fails the matrix.</p>
{{end}}

{{if .Catalogue}}<h2 id="catalogue">The catalogue of known failure modes</h2>
<table id="catalogue-table">
<tr><th>scenario</th><th>what it shows</th><th>lock</th><th>faults</th><th>source</th><th>expected</th><th>got</th><th>status</th></tr>
{{range .Catalogue}}<tr data-scenario="{{.Name}}" data-status="{{.Status}}">
<td>{{if .Link}}<a href="{{.Link}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</td><td>{{.Shows}}</td><td>{{.Lock}}</td><td>{{.Nemesis}}</td><td class="muted">{{.Source}}</td>
<td>{{.Expect}}</td><td class="v-{{.Verdict}}">{{.Got}}</td><td class="{{if .OK}}status-ok{{else}}status-fail{{end}}" title="{{.Detail}}">{{.Status}}{{if or (eq .Status "skipped") (eq .Status "n/a") (eq .Status "error")}}: {{.Detail}}{{end}}</td></tr>
{{end}}</table>{{end}}

<footer>{{if .SummaryLink}}<a href="{{.SummaryLink}}">summary.json</a> holds every cell's expectation and outcome. {{end}}<code>lockchaos report DIR</code> renders these pages again. Rendered {{.Generated}}.</footer>
</body>
</html>
`))
