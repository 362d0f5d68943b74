package compare

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/report/palette"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
)

// The comparison's page is one self-contained file: inline CSS and inline
// SVG, no script, nothing fetched. Its four plots are drawn svgWidth units
// wide and at least that many CSS pixels (narrower windows scroll them
// sideways), so that their text, svgFont units, renders at 11 px or more
// in an 800 px window; wider windows scale them up to svgMaxPx.
const (
	svgWidth = 760.0
	svgMaxPx = 1000.0
	svgFont  = 11.0
	// charW estimates the width of a character of svgFont text, to wrap
	// legends and clip labels.
	charW = 6.6
)

// Colours of a run's link, by its outcome: saturated, with white text,
// so that a row of seeds reads at a glance.
const (
	colorRunViolation  = "#e03131"
	colorRunSafe       = "#2f9e44"
	colorRunNoEvidence = "#adb5bd"
	colorRunError      = "#343a40"
)

// lockColors tell the locks apart in the plots; none is the red or green
// of an outcome.
var lockColors = []string{"#4c6ef5", "#f08c00", "#7950f2", "#1098ad", "#ae3ec9", "#5c940d", "#364fc7", "#c2255c", "#087f5b", "#e8590c"}

// WriteIndex writes dir/index.html: the comparison as a self-contained page.
func WriteIndex(dir string, c Comparison) (string, error) {
	v := newView(c)
	d := pageData{
		C:         c,
		Title:     title(c),
		Facts:     facts(c),
		HowTo:     howTo(c),
		Counts:    counts(c),
		Styles:    pageStyles,
		Generated: time.Now().Format(time.RFC3339),
		Columns:   tableColumns,
	}
	for _, r := range c.Rows {
		d.Rows = append(d.Rows, rowView(r))
	}
	d.Detection = v.detectionPlot()
	d.TTFV = v.ttfvPlot()
	d.Throughput, d.ThroughputCaption = v.throughputPlot()
	d.Availability = v.availabilityPlot()
	d.Settings = v.settingsNote()
	for _, f := range []struct {
		name string
		ok   *bool
	}{{JSONFile, &d.HasJSON}, {CSVFile, &d.HasCSV}} {
		_, err := os.Stat(filepath.Join(dir, f.name))
		*f.ok = err == nil
	}
	var buf bytes.Buffer
	if err := indexPage.Execute(&buf, d); err != nil {
		return "", fmt.Errorf("render the comparison's page: %w", err)
	}
	page := filepath.Join(dir, IndexFile)
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write the comparison's page: %w", err)
	}
	return page, nil
}

type pageData struct {
	C                 Comparison
	Title             string
	Facts             [][2]string
	HowTo             string
	Counts            string
	Styles            template.CSS
	Rows              []tableRow
	Columns           int
	Detection         template.HTML
	TTFV              template.HTML
	Throughput        template.HTML
	ThroughputCaption string
	Availability      template.HTML
	// Settings says, when the cells ran under different settings, which:
	// the throughput and availability plots then compare unlike with like.
	Settings        string
	HasJSON, HasCSV bool
	Generated       string
}

// tableColumns is how many columns the table has: the lock, the fault and
// the figures. The figures of a cell that ran have a line under them with
// a link per seed; an n/a or error cell has its reason in their place.
const tableColumns = 15

// tableRow is a row of the table, its figures formatted.
type tableRow struct {
	Row
	Ran bool
	// Class colours the row (s-STATUS) and DetClass the detection rate's
	// cell by what the seeds showed.
	Class, DetClass                  string
	Seeds, Violations, Detection, CI string
	Landed, TTFV, AcquireOK, FaultOK string
	Latency, Holds, Lost, Stale, Inc string
	TTL                              string
	Links                            []runLink
	// Shrink is the command that shrinks the cell's first violating run,
	// from the comparison's folder ("" without one).
	Shrink string
	// Span is how many columns the figures take.
	Span int
}

// runLink is a seed's link to its run's page.
type runLink struct {
	Seed    int64
	Href    string
	Outcome string
	Title   string
}

func rowView(r Row) tableRow {
	t := tableRow{Row: r, Ran: r.Status == StatusRan, Class: "s-" + statusClass(r.Status), Span: tableColumns - 2}
	if !t.Ran {
		return t
	}
	t.Seeds = fmt.Sprintf("%d/%d", r.Seeds, r.SeedsPlanned)
	t.Violations = fmt.Sprint(r.Violations)
	t.Detection = pct(r.DetectionRate)
	if r.CILow != nil && r.CIHigh != nil {
		t.CI = fmt.Sprintf("[%s – %s]", pct(r.CILow), pct(r.CIHigh))
	}
	switch {
	case r.Violations > 0:
		t.DetClass = "d-violation"
	case r.Safe > 0:
		t.DetClass = "d-safe"
	default:
		t.DetClass = "d-none"
		t.Detection = noRate(r)
	}
	if r.FaultsLanded != nil {
		t.Landed = fmt.Sprintf("%d/%d", *r.FaultsLanded, r.Seeds)
	} else {
		t.Landed = "no faults"
	}
	t.TTFV = "–"
	if r.TTFVMedianTTL != nil && r.TTFVP90TTL != nil {
		t.TTFV = fmt.Sprintf("%s / %s", ttl(*r.TTFVMedianTTL), ttl(*r.TTFVP90TTL))
	}
	t.AcquireOK = pct(r.AcquireOKRate)
	t.FaultOK = pct(r.FaultAcquireOKRate)
	if r.FaultAcquireOKRate == nil {
		t.FaultOK = "no fault window"
	}
	t.Latency = fmt.Sprintf("%s / %s", fms(r.AcquireP50ms), fms(r.AcquireP99ms))
	t.Holds = fmt.Sprintf("%.1f", r.HoldsPerS)
	t.Lost, t.Stale, t.Inc = fmt.Sprint(r.LostUpdatesTotal), fmt.Sprint(r.StaleAcceptedTotal), fmt.Sprint(r.Inconclusive)
	t.TTL = fmt.Sprintf("%.0f", r.TTLms)
	for _, x := range r.Runs {
		l := runLink{Seed: x.Seed, Href: path.Join(x.Dir, rundir.ReportFile), Outcome: x.Outcome}
		l.Title = fmt.Sprintf("seed %d: %s", x.Seed, x.Outcome)
		l.Title += attempts(x)
		if x.TTFVTTL != nil {
			l.Title += fmt.Sprintf(", first overlap after %s TTL", ttl(*x.TTFVTTL))
		}
		if x.Why != "" {
			l.Title += " — " + x.Why
		}
		t.Links = append(t.Links, l)
		if x.Outcome == OutcomeViolation && t.Shrink == "" {
			t.Shrink = rundir.Program() + " shrink " + shellwords.Quote(x.Dir)
		}
	}
	return t
}

func statusClass(s string) string {
	switch s {
	case StatusRan:
		return "ran"
	case SkipNA:
		return "na"
	}
	return "error"
}

// noRate says why a cell has no detection rate.
func noRate(r Row) string {
	switch {
	case r.Status == SkipNA:
		return "n/a"
	case r.Status != StatusRan:
		return "error"
	case r.Seeds == 0:
		return "no seed ran"
	}
	return "no evidence"
}

func pct(v *float64) string {
	if v == nil {
		return "–"
	}
	return pctf(*v)
}

func pctf(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// pctAxis labels a tick of a rate axis.
func pctAxis(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }

func fms(v float64) string { return fmt.Sprintf("%.1f", v) }

func ttl(v float64) string { return fmt.Sprintf("%.2f", v) }

func title(c Comparison) string {
	return fmt.Sprintf("lockchaos compare: %s × %s, %s",
		plural(len(c.Spec.Locks), "lock", "locks"), plural(len(c.Spec.Nemeses), "fault", "faults"), plural(c.Spec.Seeds, "seed", "seeds"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// facts are the header's table: what was compared, when, where, how.
func facts(c Comparison) [][2]string {
	s := c.Spec
	f := [][2]string{
		{"locks", strings.Join(s.Locks, ", ")},
		{"faults (nemeses)", strings.Join(s.Nemeses, ", ")},
		{"seeds planned", fmt.Sprintf("%d per cell, seeds %d to %d", s.Seeds, s.FirstSeed, s.FirstSeed+int64(max(s.Seeds, 1))-1)},
	}
	if s.EarlyStop {
		f = append(f, [2]string{"early stop", fmt.Sprintf("on: a cell stops once its interval excludes 0 (it violated) and at least %d of its seeds ran", s.MinSeeds)})
	} else {
		f = append(f, [2]string{"early stop", "off: every cell ran all its seeds"})
	}
	var work []string
	for _, o := range []struct{ name, v string }{{"scenario", s.Scenario}, {"TTL", s.TTL}, {"hold", s.Hold}, {"duration", s.Duration}, {"backend", s.Backend}, {"image", s.Image}} {
		if o.v != "" {
			work = append(work, o.name+" "+o.v)
		}
	}
	if s.Clients > 0 {
		work = append(work, fmt.Sprintf("%d clients", s.Clients))
	}
	if s.Keys > 0 {
		work = append(work, plural(s.Keys, "key", "keys"))
	}
	if len(work) > 0 {
		f = append(f, [2]string{"settings", strings.Join(work, ", ")})
	}
	when := c.Started
	if t, err := time.Parse(time.RFC3339, c.Started); err == nil {
		when = t.Format("2006-01-02 15:04:05 MST")
	}
	f = append(f, [2]string{"started", when})
	took := duration(c.Seconds)
	if s.Parallel > 0 {
		took += fmt.Sprintf(", %d runs at a time", s.Parallel)
	}
	if c.Interrupted {
		took += " — interrupted before every run was done"
	}
	f = append(f, [2]string{"took", took})
	if c.Host != "" {
		f = append(f, [2]string{"host", c.Host})
	}
	if c.Version != "" {
		f = append(f, [2]string{"lockchaos", c.Version})
	}
	return f
}

func duration(secs float64) string {
	d := time.Duration(secs * float64(time.Second)).Round(time.Second)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%d h %02d min", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%d min %02d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d s", int(d.Seconds()))
}

// counts sums the cells and runs up in a line.
func counts(c Comparison) string {
	var ran, na, errs, runs, viol int
	for _, r := range c.Rows {
		switch r.Status {
		case StatusRan:
			ran++
		case SkipNA:
			na++
		default:
			errs++
		}
		runs += len(r.Runs)
		if r.Violations > 0 {
			viol++
		}
	}
	parts := []string{plural(len(c.Rows), "cell", "cells") + ": " + fmt.Sprintf("%d ran", ran)}
	if na > 0 {
		parts = append(parts, fmt.Sprintf("%d n/a (the fault does not apply)", na))
	}
	if errs > 0 {
		parts = append(parts, fmt.Sprintf("%d could not run", errs))
	}
	return fmt.Sprintf("%s; %s in all; %s violated mutual exclusion in at least one seed.",
		strings.Join(parts, ", "), plural(runs, "run", "runs"), plural(viol, "cell", "cells"))
}

// howTo is the paragraph that says how to read the figures.
func howTo(c Comparison) string {
	s := "Each cell runs one lock against one fault for several seeds, each seed its own run, checked from its recorded history. " +
		"The detection rate is the share of seeds that violated mutual exclusion among the seeds that were evidence either way " +
		"(violations / (violations + safe)), with its 95 % Wilson score interval in brackets"
	if c.Spec.Seeds > 0 {
		_, hi := Wilson(0, c.Spec.Seeds)
		s += fmt.Sprintf(": with %s and no violation, the interval still reaches %s", plural(c.Spec.Seeds, "seed", "seeds"), pctf(hi))
	}
	s += ". Inconclusive seeds — the checker could not decide, the faults never landed, only a stall of the harness made the overlap, " +
		"or the run failed — are left out of the rate and counted apart. " +
		"TTFV is the time from the start of the fault to the first overlap (from the run's start when no fault caused it), in TTLs " +
		"(lease lengths), over the violating seeds. Acquires granted is the share of all acquires that got the lock: the rest were refused " +
		"(the lock was held, and a try-once acquire that finds it held is refused by design, so a low share under contention is no failure) " +
		"or unknown (timed out or errored). Granted during faults is the same share of the acquires invoked while a fault was active. " +
		"A cell marked n/a is a fault that does not apply to that lock."
	if c.Spec.EarlyStop {
		s += " A cell that stopped early ran fewer seeds: its interval is wider, and its rate leans high, since it stopped right after a violation."
	}
	return s
}

// view indexes the rows for the plots.
type view struct {
	c       Comparison
	locks   []string
	nemeses []string
	cells   map[[2]string]*Row
	color   map[string]string
}

func newView(c Comparison) view {
	v := view{c: c, cells: map[[2]string]*Row{}, color: map[string]string{}}
	seenL, seenN := map[string]bool{}, map[string]bool{}
	addL := func(l string) {
		if !seenL[l] {
			seenL[l] = true
			v.locks = append(v.locks, l)
			v.color[l] = lockColors[(len(v.locks)-1)%len(lockColors)]
		}
	}
	addN := func(n string) {
		if !seenN[n] {
			seenN[n] = true
			v.nemeses = append(v.nemeses, n)
		}
	}
	for _, l := range c.Spec.Locks {
		addL(l)
	}
	for _, n := range c.Spec.Nemeses {
		addN(n)
	}
	for i := range c.Rows {
		r := &c.Rows[i]
		addL(r.Lock)
		addN(r.Nemesis)
		v.cells[[2]string{r.Lock, r.Nemesis}] = r
	}
	return v
}

// hasData says the row ran and at least one of its seeds was recorded.
func hasData(r *Row) bool {
	if r == nil || r.Status != StatusRan || r.Seeds == 0 {
		return false
	}
	errs := 0
	for _, x := range r.Runs {
		if x.Outcome == OutcomeError {
			errs++
		}
	}
	return errs < r.Seeds
}

// svgPlot accumulates one plot's SVG: its axes and grid, drawn first
// (behind), and its marks.
type svgPlot struct{ grid, b strings.Builder }

func (p *svgPlot) f(format string, a ...any) { fmt.Fprintf(&p.b, format, a...) }

// text draws text; extra are further attributes, already escaped.
func (p *svgPlot) text(x, y float64, anchor, fill, s, extra string) {
	p.f(`<text x="%.1f" y="%.1f" font-size="%.0f" text-anchor="%s" fill="%s"%s>%s</text>`, x, y, svgFont, anchor, fill, extra, esc(s))
}

func (p *svgPlot) line(x1, y1, x2, y2 float64, stroke string, extra string) {
	p.f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"%s/>`, x1, y1, x2, y2, stroke, extra)
}

// html wraps the marks drawn in the plot's svg element, height units tall.
func (p *svgPlot) html(id, label string, height float64) template.HTML {
	return template.HTML(fmt.Sprintf(`<div class="plot-scroll"><svg id="%s" class="cmp-plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="100%%" style="min-width:%.0fpx;max-width:%.0fpx" role="img" aria-label="%s"><rect class="bg" x="0" y="0" width="100%%" height="100%%" fill="#fff"/>%s%s</svg></div>`,
		id, svgWidth, height, svgWidth, svgMaxPx, esc(label), p.grid.String(), p.b.String()))
}

// legendItem is an entry of a plot's legend: a mark and what it means.
type legendItem struct {
	// Mark is dot, ring, bar, pale, tick, dash or interval.
	Mark, Color, Label string
}

// legend draws items in lines from y; it returns the y below them.
func (p *svgPlot) legend(items []legendItem, y float64) float64 {
	x := 8.0
	for _, it := range items {
		w := 26 + float64(utf8.RuneCountInString(it.Label))*charW + 14
		if x > 8 && x+w > svgWidth-8 {
			x, y = 8, y+17
		}
		cy := y - 4
		switch it.Mark {
		case "dot":
			p.f(`<circle class="legend" cx="%.1f" cy="%.1f" r="4.5" fill="%s"/>`, x+9, cy, it.Color)
		case "ring":
			p.f(`<circle class="legend" cx="%.1f" cy="%.1f" r="4" fill="#fff" stroke="%s" stroke-width="1.5"/>`, x+9, cy, it.Color)
		case "bar":
			p.f(`<rect class="legend" x="%.1f" y="%.1f" width="18" height="9" fill="%s"/>`, x, cy-4.5, it.Color)
		case "pale":
			p.f(`<rect class="legend" x="%.1f" y="%.1f" width="18" height="9" fill="%s" fill-opacity="0.4"/>`, x, cy-4.5, it.Color)
		case "tick":
			p.line(x+9, cy-6, x+9, cy+6, it.Color, ` class="legend" stroke-width="2"`)
		case "dash":
			p.line(x+9, cy-6, x+9, cy+6, it.Color, ` class="legend" stroke-width="1.5" stroke-dasharray="3 2"`)
		case "interval":
			p.line(x, cy, x+18, cy, it.Color, ` class="legend" stroke-width="2"`)
			p.line(x, cy-4, x, cy+4, it.Color, ` class="legend" stroke-width="1.5"`)
			p.line(x+18, cy-4, x+18, cy+4, it.Color, ` class="legend" stroke-width="1.5"`)
		}
		p.text(x+24, y, "start", "#343a40", it.Label, ` class="legend"`)
		x += w
	}
	return y + 20
}

// lockLegend is a legend entry per lock, in its colour.
func (v view) lockLegend(mark string) []legendItem {
	var items []legendItem
	for _, l := range v.locks {
		items = append(items, legendItem{mark, v.color[l], l})
	}
	return items
}

// rateAxis draws the vertical grid of a rate axis from 0 to 100 % between
// x0 and x1, from y0 to y1, with its labels and title below.
func (p *svgPlot) rateAxis(x0, x1, y0, y1 float64, title string) {
	var g svgPlot // behind the marks
	for i := 0; i <= 4; i++ {
		v := float64(i) / 4
		x := x0 + v*(x1-x0)
		g.line(x, y0, x, y1, "#e9ecef", "")
		g.text(x, y1+14, "middle", "#495057", pctAxis(v), ` class="tick"`)
	}
	g.line(x0, y1, x1, y1, "#adb5bd", ` class="axis"`)
	g.line(x0, y0, x0, y1, "#adb5bd", ` class="axis"`)
	g.text((x0+x1)/2, y1+30, "middle", "#212529", title, ` class="axis-title"`)
	p.grid.WriteString(g.b.String())
}

// valueAxis draws a linear axis from 0 to top between x0 and x1, like
// rateAxis; unit follows each label.
func (p *svgPlot) valueAxis(x0, x1, y0, y1, lo, top float64, unit, title string) {
	var g svgPlot // behind the marks
	step := niceStep(top - lo)
	for v := lo; v <= top+step*1e-6; v += step {
		x := x0 + (v-lo)/(top-lo)*(x1-x0)
		g.line(x, y0, x, y1, "#e9ecef", "")
		g.text(x, y1+14, "middle", "#495057", trim(v)+unit, ` class="tick"`)
	}
	g.line(x0, y1, x1, y1, "#adb5bd", ` class="axis"`)
	g.line(x0, y0, x0, y1, "#adb5bd", ` class="axis"`)
	g.text((x0+x1)/2, y1+30, "middle", "#212529", title, ` class="axis-title"`)
	p.grid.WriteString(g.b.String())
}

// grouped lays out the lock × nemesis plots: a header line per nemesis
// and a line per lock under it; draw draws one line's mark at its centre
// y. It returns the y below the last group.
func (v view) grouped(p *svgPlot, nemeses []string, y, labelRight float64, draw func(r *Row, lock string, y float64)) float64 {
	for _, n := range nemeses {
		y += 15
		p.text(8, y, "start", "#212529", n, ` class="group" font-weight="600"`)
		y += 3
		for _, l := range v.locks {
			r := v.cells[[2]string{l, n}]
			if r == nil {
				continue
			}
			y += 16
			p.text(labelRight, y-4, "end", v.color[l], clip(l, fit(labelRight-24)), ` class="lock-label"`)
			draw(r, l, y-8)
		}
		y += 6
	}
	return y
}

// detectionPlot draws each cell's detection rate with its interval,
// grouped by fault.
func (v view) detectionPlot() template.HTML {
	var p svgPlot
	const left, right = 150.0, 64.0
	x0, x1 := left+10, svgWidth-right
	x := func(r float64) float64 { return x0 + r*(x1-x0) }
	y := p.legend(append(v.lockLegend("dot"), legendItem{"interval", "#495057", "95 % Wilson interval"}), 18)
	top := y - 4
	p.text(svgWidth-6, top+8, "end", "#495057", "violated/evidence", ` class="note"`)
	bottom := v.grouped(&p, v.nemeses, top+4, left, func(r *Row, lock string, cy float64) {
		col := v.color[lock]
		attrs := fmt.Sprintf(` data-lock="%s" data-nemesis="%s"`, esc(r.Lock), esc(r.Nemesis))
		if r.DetectionRate == nil {
			why := noRate(*r)
			p.text(x0+6, cy+4, "start", "#868e96", why, ` class="det-none" font-style="italic"`+attrs)
			return
		}
		lo, hi := *r.DetectionRate, *r.DetectionRate
		if r.CILow != nil && r.CIHigh != nil {
			lo, hi = *r.CILow, *r.CIHigh
		}
		n := r.Violations + r.Safe
		tip := esc(fmt.Sprintf("%s + %s: %d of %d seeds that were evidence violated: %s [%s – %s]", r.Lock, r.Nemesis, r.Violations, n, pctf(*r.DetectionRate), pctf(lo), pctf(hi)))
		p.f(`<g class="det-cell"%s><title>%s</title>`, attrs, tip)
		p.line(x(lo), cy, x(hi), cy, col, ` class="det-ci" stroke-width="2"`)
		p.line(x(lo), cy-4, x(lo), cy+4, col, ` stroke-width="1.5"`)
		p.line(x(hi), cy-4, x(hi), cy+4, col, ` stroke-width="1.5"`)
		p.f(`<circle class="det-point" cx="%.1f" cy="%.1f" r="4.5" fill="%s" stroke="#fff" stroke-width="1" data-rate="%.4f"/>`, x(*r.DetectionRate), cy, col, *r.DetectionRate)
		p.f(`</g>`)
		p.text(svgWidth-6, cy+4, "end", "#495057", fmt.Sprintf("%d/%d", r.Violations, n), ` class="det-count"`)
	})
	if len(v.c.Rows) == 0 {
		bottom = top + 30
		p.text(x0+6, top+20, "start", "#868e96", "no cells", "")
	}
	p.rateAxis(x0, x1, top, bottom, "detection rate: seeds that violated / seeds that were evidence")
	return p.html("plot-detection", "detection rate with its 95 % Wilson interval per lock and fault", bottom+40)
}

// ttfvPlot draws the times to the first violation of each cell that
// violated, a dot per violating seed, with the median and p90.
func (v view) ttfvPlot() template.HTML {
	var p svgPlot
	var rows []*Row
	lo, hi := 0.0, 1.0
	for i := range v.c.Rows {
		r := &v.c.Rows[i]
		if len(r.TTFV) == 0 {
			continue
		}
		rows = append(rows, r)
		for _, t := range r.TTFV {
			lo, hi = math.Min(lo, t), math.Max(hi, t)
		}
	}
	if len(rows) == 0 {
		p.text(12, 26, "start", "#868e96", "No cell violated: there is no time to a first violation to show.", ` class="ttfv-empty"`)
		return p.html("plot-ttfv", "time to the first violation: none", 42)
	}
	const left, right = 230.0, 44.0
	x0, x1 := left+10, svgWidth-right
	top := niceCeil(hi * 1.02)
	if lo < 0 {
		lo = -niceCeil(-lo)
	}
	x := func(t float64) float64 { return x0 + (t-lo)/(top-lo)*(x1-x0) }
	y := p.legend(append(v.lockLegend("dot"), legendItem{"tick", "#212529", "median"}, legendItem{"dash", "#212529", "p90"},
		legendItem{"dash", "#e8590c", "1 TTL: the lease"}), 18)
	y0 := y - 4
	const lineH = 22.0
	bottom := y0 + 6 + lineH*float64(len(rows))
	for i := 1; i < len(rows); i += 2 {
		p.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f8f9fa"/>`, x0, y0+6+lineH*float64(i), x1-x0, lineH)
	}
	if x(1) <= x1 {
		p.line(x(1), y0, x(1), bottom, "#e8590c", ` class="ttl-line" stroke-dasharray="4 3"`)
	}
	for i, r := range rows {
		cy := y0 + 6 + lineH*float64(i) + lineH/2
		col := v.color[r.Lock]
		label := r.Lock + " + " + r.Nemesis
		p.f(`<g class="ttfv-cell" data-lock="%s" data-nemesis="%s">`, esc(r.Lock), esc(r.Nemesis))
		p.f(`<text x="%.1f" y="%.1f" font-size="%.0f" text-anchor="end" fill="#212529" class="cell-label"><title>%s</title>%s</text>`,
			left, cy+4, svgFont, esc(label), esc(clip(label, fit(left-8))))
		for j, t := range r.TTFV {
			jitter := float64(j%5-2) * 2
			p.f(`<circle class="ttfv-point" cx="%.1f" cy="%.1f" r="3.5" fill="%s" fill-opacity="0.75" data-ttl="%.3f"><title>%s</title></circle>`,
				x(t), cy+jitter, col, t, esc(fmt.Sprintf("%s: a seed's first overlap %s TTL after the fault's start", label, ttl(t))))
		}
		if r.TTFVMedianTTL != nil {
			p.line(x(*r.TTFVMedianTTL), cy-8, x(*r.TTFVMedianTTL), cy+8, "#212529", ` class="ttfv-median" stroke-width="2"`)
		}
		if r.TTFVP90TTL != nil {
			p.line(x(*r.TTFVP90TTL), cy-8, x(*r.TTFVP90TTL), cy+8, "#212529", ` class="ttfv-p90" stroke-width="1.5" stroke-dasharray="3 2"`)
		}
		p.text(svgWidth-6, cy+4, "end", "#495057", fmt.Sprintf("n=%d", len(r.TTFV)), ` class="ttfv-count"`)
		p.f(`</g>`)
	}
	p.valueAxis(x0, x1, y0, bottom, lo, top, "", "time from the fault's start to the first overlap, in TTLs")
	return p.html("plot-ttfv", "time to the first violation per cell, in TTLs", bottom+40)
}

// perf is a lock's throughput and latency, from its cell without faults
// or averaged over its cells.
type perf struct {
	lock               string
	holds, p50, p99    float64
	fromNone, averaged bool
	cells              int
}

func (v view) perfs() []perf {
	var out []perf
	for _, l := range v.locks {
		p := perf{lock: l}
		if r := v.cells[[2]string{l, scenarios.NoFault}]; hasData(r) {
			p.holds, p.p50, p.p99, p.fromNone, p.cells = r.HoldsPerS, r.AcquireP50ms, r.AcquireP99ms, true, 1
		} else {
			for _, n := range v.nemeses {
				if r := v.cells[[2]string{l, n}]; hasData(r) {
					p.holds += r.HoldsPerS
					p.p50 += r.AcquireP50ms
					p.p99 += r.AcquireP99ms
					p.cells++
				}
			}
			if p.cells > 0 {
				f := float64(p.cells)
				p.holds, p.p50, p.p99, p.averaged = p.holds/f, p.p50/f, p.p99/f, true
			}
		}
		out = append(out, p)
	}
	return out
}

// throughputPlot draws each lock's holds per second and its acquire
// latency; it returns the plot and its caption, which says where the
// figures come from.
func (v view) throughputPlot() (template.HTML, string) {
	var p svgPlot
	ps := v.perfs()
	differ := v.settingsNote() != ""
	var none, avg []string
	peakH, peakL := 0.0, 0.0
	for _, x := range ps {
		switch {
		case x.fromNone:
			none = append(none, x.lock)
		case x.averaged:
			avg = append(avg, x.lock)
		}
		peakH, peakL = math.Max(peakH, x.holds), math.Max(peakL, math.Max(x.p99, x.p50))
	}
	caption := "Throughput (completed holds per second of workload) and acquire latency (the median over the seeds of each run's p50 and p99 of successful acquires) per lock, "
	switch {
	case len(none) > 0 && len(avg) == 0:
		caption += "from each lock's cell without faults (none)."
	case len(none) == 0 && len(avg) > 0:
		caption += "averaged over each lock's cells that ran (no cell without faults was compared)."
	case len(none) > 0:
		caption += fmt.Sprintf("from the cell without faults (none) for %s; averaged over the lock's cells that ran for %s (marked †).", strings.Join(none, ", "), strings.Join(avg, ", "))
	default:
		caption += "— but no cell has recorded runs."
	}
	const left, right = 150.0, 96.0
	x0, x1 := left+10, svgWidth-right
	y := p.legend(append(v.lockLegend("bar"), legendItem{"pale", "#495057", "p99 (pale) behind p50"}), 18)
	mark := func(x perf) string {
		if x.averaged && len(none) > 0 {
			return " †"
		}
		return ""
	}
	src := func(x perf) string {
		switch {
		case x.fromNone:
			return "from the cell without faults"
		case x.cells == 0:
			return "no recorded run"
		}
		return fmt.Sprintf("averaged over %s", plural(x.cells, "cell", "cells"))
	}
	// label writes a lock's row label (or that it has no run) and returns
	// the attributes its marks carry, and whether it has figures.
	label := func(x perf, yy float64) (string, bool) {
		p.text(left, yy-6, "end", v.color[x.lock], clip(x.lock, fit(left-24))+mark(x), ` class="lock-label"`)
		attrs := fmt.Sprintf(` data-lock="%s" data-source="%s"`, esc(x.lock), esc(src(x)))
		if x.cells == 0 {
			p.text(x0+6, yy-6, "start", "#868e96", "no recorded run", ` class="perf-none" font-style="italic"`+attrs)
			return attrs, false
		}
		return attrs, true
	}
	// Panel 1: holds per second.
	topH := niceCeil(math.Max(peakH, 1) * 1.02)
	xh := func(val float64) float64 { return x0 + val/topH*(x1-x0) }
	y += 4
	p.text(8, y+6, "start", "#212529", "holds per second", ` class="panel-title" font-weight="600"`)
	y0 := y + 12
	yy := y0
	for _, x := range ps {
		yy += 20
		attrs, ran := label(x, yy)
		if !ran {
			continue
		}
		p.f(`<rect class="holds-bar" x="%.1f" y="%.1f" width="%.1f" height="12" fill="%s"%s><title>%s</title></rect>`,
			x0, yy-16, math.Max(xh(x.holds)-x0, 1), v.color[x.lock], attrs, esc(fmt.Sprintf("%s: %.1f holds/s, %s", x.lock, x.holds, src(x))))
		value := fmt.Sprintf("%.1f/s", x.holds)
		if differ {
			value += " (" + v.settingsOf(x.lock) + ")"
		}
		p.text(xh(x.holds)+4, yy-6, "start", "#212529", value, ` class="value"`)
	}
	yy += 6
	p.valueAxis(x0, x1, y0, yy, 0, topH, "", "holds per second")
	// Panel 2: acquire latency.
	y = yy + 48
	topL := niceCeil(math.Max(peakL, 0.1) * 1.02)
	xl := func(val float64) float64 { return x0 + val/topL*(x1-x0) }
	p.text(8, y+6, "start", "#212529", "acquire latency", ` class="panel-title" font-weight="600"`)
	y0 = y + 12
	yy = y0
	for _, x := range ps {
		yy += 20
		attrs, ran := label(x, yy)
		if !ran {
			continue
		}
		p.f(`<rect class="p99-bar" x="%.1f" y="%.1f" width="%.1f" height="14" fill="%s" fill-opacity="0.4"%s><title>%s</title></rect>`,
			x0, yy-17, math.Max(xl(x.p99)-x0, 1), v.color[x.lock], attrs, esc(fmt.Sprintf("%s: acquire p99 %s ms, %s", x.lock, fms(x.p99), src(x))))
		p.f(`<rect class="p50-bar" x="%.1f" y="%.1f" width="%.1f" height="8" fill="%s"%s><title>%s</title></rect>`,
			x0, yy-14, math.Max(xl(x.p50)-x0, 1), v.color[x.lock], attrs, esc(fmt.Sprintf("%s: acquire p50 %s ms, %s", x.lock, fms(x.p50), src(x))))
		p.text(xl(math.Max(x.p99, x.p50))+4, yy-6, "start", "#212529", fmt.Sprintf("%s / %s ms", fms(x.p50), fms(x.p99)), ` class="value"`)
	}
	yy += 6
	p.valueAxis(x0, x1, y0, yy, 0, topL, "", "acquire latency, ms: p50 / p99")
	return p.html("plot-throughput", "throughput and acquire latency per lock", yy+40), caption
}

// setting is what a cell ran with that bears on its throughput and
// availability: the lease and the hold.
type setting struct{ ttl, hold float64 }

func (x setting) String() string { return fmt.Sprintf("TTL %.0f ms, hold %.0f ms", x.ttl, x.hold) }

// settingsOf lists the settings a lock's cells that ran were run with.
func (v view) settingsOf(lock string) string {
	var out []string
	for _, n := range v.nemeses {
		if r := v.cells[[2]string{lock, n}]; hasData(r) {
			if s := (setting{r.TTLms, r.HoldMs}).String(); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return strings.Join(out, "; ")
}

// settingsNote says, when the locks' cells ran under different settings,
// which, and why that matters; "" when they all ran under one.
func (v view) settingsNote() string {
	seen := map[setting]bool{}
	var per []string
	for _, l := range v.locks {
		if s := v.settingsOf(l); s != "" {
			per = append(per, l+": "+s)
		}
		for _, n := range v.nemeses {
			if r := v.cells[[2]string{l, n}]; hasData(r) {
				seen[setting{r.TTLms, r.HoldMs}] = true
			}
		}
	}
	if len(seen) < 2 {
		return ""
	}
	return "The cells ran under different settings (" + strings.Join(per, "; ") + "), so these figures compare unlike with like: " +
		"a client that holds for longer makes fewer holds a second, and a longer lease keeps more acquires waiting or refused. " +
		"Compare locks within one setting, or run them again with the same --ttl and --hold."
}

// availabilityPlot draws, per fault and lock, the share of acquires made
// during the fault that got the lock, against all the cell's acquires.
func (v view) availabilityPlot() template.HTML {
	var p svgPlot
	var nemeses []string
	for _, n := range v.nemeses {
		if n != scenarios.NoFault {
			nemeses = append(nemeses, n)
		}
	}
	if len(nemeses) == 0 {
		p.text(12, 26, "start", "#868e96", "Only the cell without faults was compared: there is no fault window to show.", ` class="avail-empty"`)
		return p.html("plot-availability", "availability during faults: no fault compared", 42)
	}
	const left, right = 150.0, 64.0
	x0, x1 := left+10, svgWidth-right
	x := func(r float64) float64 { return x0 + r*(x1-x0) }
	y := p.legend(append(v.lockLegend("bar"), legendItem{"tick", "#212529", "all the cell's acquires"}), 18)
	top := y - 4
	bottom := v.grouped(&p, nemeses, top+4, left, func(r *Row, lock string, cy float64) {
		attrs := fmt.Sprintf(` data-lock="%s" data-nemesis="%s"`, esc(r.Lock), esc(r.Nemesis))
		if r.FaultAcquireOKRate == nil {
			why := noRate(*r)
			if why == "no evidence" {
				why = "no fault window"
			}
			p.text(x0+6, cy+4, "start", "#868e96", why, ` class="avail-none" font-style="italic"`+attrs)
			return
		}
		rate := *r.FaultAcquireOKRate
		tip := fmt.Sprintf("%s + %s: %s of the acquires made during a fault got the lock", r.Lock, r.Nemesis, pctf(rate))
		if r.AcquireOKRate != nil {
			tip += fmt.Sprintf(" (%s of all its acquires)", pctf(*r.AcquireOKRate))
		}
		p.f(`<rect class="avail-bar" x="%.1f" y="%.1f" width="%.1f" height="11" fill="%s" data-rate="%.4f"%s><title>%s</title></rect>`,
			x0, cy-5.5, math.Max(x(rate)-x0, 1), v.color[lock], rate, attrs, esc(tip))
		if r.AcquireOKRate != nil {
			p.line(x(*r.AcquireOKRate), cy-7, x(*r.AcquireOKRate), cy+7, "#212529", ` class="avail-all" stroke-width="2"`)
		}
		p.text(svgWidth-6, cy+4, "end", "#495057", pctf(rate), ` class="value"`)
	})
	p.rateAxis(x0, x1, top, bottom, "acquires made while a fault was active that got the lock")
	return p.html("plot-availability", "availability during faults per lock and fault", bottom+40)
}

// niceStep is a round step giving about four to eight ticks over span.
func niceStep(span float64) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func trim(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// clip shortens s to n characters, with an ellipsis.
func clip(s string, n int) string {
	if n < 2 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func esc(s string) string { return template.HTMLEscapeString(s) }

var pageStyles = template.CSS(`
:root { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #212529; }
body { margin: 0 auto; max-width: 1400px; padding: 16px 24px 48px; line-height: 1.45; }
h1 { font-size: 1.5em; margin: 0.2em 0; }
h2 { font-size: 1.15em; margin: 1.6em 0 0.5em; border-bottom: 1px solid #dee2e6; padding-bottom: 3px; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 0.92em; }
table { border-collapse: collapse; margin: 0.4em 0; }
th, td { border: 1px solid #dee2e6; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f5; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
header.summary { padding: 10px 16px; border-radius: 6px; margin-bottom: 8px; background: #f1f3f5; }
header.summary.interrupted { background: ` + palette.Inconclusive + `; }
table.facts th { white-space: nowrap; }
p.howto { max-width: 62em; }
.muted { color: #6c757d; }
pre.cmd { background: #f1f3f5; padding: 8px 10px; border-radius: 4px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
.table-scroll, .plot-scroll { overflow-x: auto; }
table.cells { font-size: 0.85em; }
table.cells th, table.cells td { padding: 2px 6px; }
table.cells th { vertical-align: bottom; font-size: 0.92em; hyphens: manual; }
table.cells td.lock { position: sticky; left: 0; background: #fff; font-weight: 600; white-space: nowrap; }
table.cells td.nem { white-space: nowrap; }
table.cells td.d-violation { background: ` + palette.Violation + `; }
table.cells td.d-safe { background: ` + palette.Safe + `; }
table.cells td.d-none { background: ` + palette.Inconclusive + `; }
table.cells tr.s-na td.why { background: ` + palette.NA + `; color: #495057; }
table.cells tr.s-error td.why { background: ` + palette.Error + `; }
td.why .status { font-weight: 700; margin-right: 6px; }
td .ci { display: block; color: #495057; font-size: 0.9em; }
td .note { display: block; color: #6c757d; font-size: 0.85em; }
tr.runs-row td.runs { border-top: none; padding-bottom: 5px; }
tr.cell-row.s-ran td { border-bottom: none; }
tr.cell-row.s-ran td.lock, tr.cell-row.s-ran td.nem { border-bottom: 1px solid #dee2e6; }
a.run { display: inline-block; box-sizing: border-box; min-width: 1.9em; padding: 0 3px; margin: 1px 0; border-radius: 3px; font-size: 0.85em;
  text-align: center; text-decoration: none; color: #fff; font-variant-numeric: tabular-nums; }
a.run:hover { text-decoration: underline; }
a.run.o-violation, .swatch.o-violation { background: ` + colorRunViolation + `; }
a.run.o-safe, .swatch.o-safe { background: ` + colorRunSafe + `; }
a.run.o-no-evidence, .swatch.o-no-evidence { background: ` + colorRunNoEvidence + `; color: #212529; }
a.run.o-error, .swatch.o-error { background: ` + colorRunError + `; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 22px; height: 12px; vertical-align: middle; margin-right: 4px; border-radius: 2px; }
figure { margin: 1.2em 0; }
figcaption { color: #495057; margin-bottom: 4px; }
svg.cmp-plot { box-sizing: border-box; border: 1px solid #dee2e6; border-radius: 4px; display: block; margin: 4px 0 10px; }
footer { margin-top: 2.5em; font-size: 0.85em; color: #6c757d; }
@media (max-width: 900px) { body { padding: 10px 12px 32px; } th, td { padding: 2px 5px; } }
`)

var indexPage = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{.Styles}}</style>
</head>
<body>
<header class="summary{{if .C.Interrupted}} interrupted{{end}}">
<h1 id="title">{{.Title}}</h1>
<p id="counts">{{.Counts}}{{if .C.Interrupted}} <b>Interrupted: the runs left out are missing from the figures.</b>{{end}}</p>
</header>
<table class="facts" id="facts">
{{range .Facts}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>
{{if .C.Command}}<p>Repeat it:</p>
<pre class="cmd" id="command">{{.C.Command}}</pre>{{end}}
<h2 id="how-to-read">How to read this</h2>
<p class="howto">{{.HowTo}}</p>

<h2 id="cells">The cells</h2>
<p class="legend muted">Under each cell's figures, a link per seed to its run's report:
<span><span class="swatch o-violation"></span>violation</span>
<span><span class="swatch o-safe"></span>safe</span>
<span><span class="swatch o-no-evidence"></span>no evidence</span>
<span><span class="swatch o-error"></span>error</span></p>
<div class="table-scroll">
<table class="cells" id="cells-table">
<thead><tr><th>lock</th><th>nemesis</th><th>seeds<br>run / planned</th><th>violations</th><th>detection rate<br>[95 % CI]</th><th>faults<br>landed</th><th>TTFV, TTL<br>median / p90</th><th title="acquires that got the lock, of all acquires; the rest were refused (the lock was held: a try-once acquire is refused by design) or unknown">acquires<br>granted</th><th title="acquires made while a fault was active that got the lock">granted<br>during faults</th><th>acquire ms<br>p50 / p99</th><th>holds/s</th><th>lost<br>updates</th><th>stale<br>accepted</th><th>incon&shy;clusive</th><th>TTL ms</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="cell-row {{.Class}}" data-lock="{{.Lock}}" data-nemesis="{{.Nemesis}}" data-status="{{.Status}}">
<td class="lock"{{if .Ran}} rowspan="2"{{end}}>{{.Lock}}</td><td class="nem"{{if .Ran}} rowspan="2"{{end}}>{{.Nemesis}}</td>
{{if .Ran}}<td class="num">{{.Seeds}}{{if .StoppedEarly}}<span class="note">stopped early</span>{{end}}</td>
<td class="num">{{.Violations}}</td>
<td class="num det {{.DetClass}}">{{.Detection}}{{if .CI}}<span class="ci">{{.CI}}</span>{{end}}</td>
<td class="num">{{.Landed}}</td>
<td class="num">{{.TTFV}}</td>
<td class="num">{{.AcquireOK}}</td>
<td class="num">{{.FaultOK}}</td>
<td class="num">{{.Latency}}</td>
<td class="num">{{.Holds}}</td>
<td class="num">{{.Lost}}</td>
<td class="num">{{.Stale}}</td>
<td class="num">{{.Inc}}</td>
<td class="num">{{.TTL}}</td>
</tr>
<tr class="runs-row" data-lock="{{.Lock}}" data-nemesis="{{.Nemesis}}"><td class="runs" colspan="{{.Span}}"><span class="muted">runs:</span> {{range .Links}}<a class="run o-{{.Outcome}}" href="{{.Href}}" title="{{.Title}}" data-seed="{{.Seed}}" data-outcome="{{.Outcome}}">{{.Seed}}</a> {{else}}<span class="muted">none</span>{{end}}{{if .Shrink}} <span class="muted">· its minimal counterexample, from this folder:</span> <code class="shrink">{{.Shrink}}</code>{{end}}</td>
{{else}}<td class="why" colspan="{{.Span}}"><span class="status">{{.Status}}</span>{{.Why}}</td>
{{end}}</tr>
{{else}}<tr><td colspan="{{.Columns}}" class="muted">No cell was planned.</td></tr>
{{end}}</tbody>
</table>
</div>

<h2 id="plots">Plots</h2>
<figure>
<figcaption>Detection rate per lock and fault: a dot per cell at the share of its seeds that violated, a bar across its 95 % Wilson interval; a cell with no seed that was evidence says so instead of showing 0.</figcaption>
{{.Detection}}
</figure>
<figure>
<figcaption>Time to the first violation, in TTLs, of each cell that violated: a dot per violating seed, a tick at the median and a dashed one at the p90.</figcaption>
{{.TTFV}}
</figure>
<figure>
<figcaption>{{.ThroughputCaption}}{{if .Settings}} <strong class="settings-note">{{.Settings}}</strong>{{end}}</figcaption>
{{.Throughput}}
</figure>
<figure>
<figcaption>Availability during faults: per fault and lock, the share of the acquires made while a fault was active that got the lock (a tick marks the share over all the cell's acquires); the rest were refused, which is what a lock that is held does to a try-once acquire, or got no answer. The column without faults has no fault window and is left out.{{if .Settings}} <strong class="settings-note">{{.Settings}}</strong>{{end}}</figcaption>
{{.Availability}}
</figure>

<footer>{{if .HasJSON}}Figures: <a href="compare.json">compare.json</a>{{if .HasCSV}}, <a href="compare.csv">compare.csv</a>{{end}}. {{end}}This page is derived from compare.json alone. Rendered {{.Generated}}.</footer>
</body>
</html>
`))

// fit is how many characters of svgFont text fit in w units.
func fit(w float64) int { return int(w / charW) }
