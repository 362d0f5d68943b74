package report

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// What a long run's page draws, beyond its windows.
const (
	// maxFaultShapes: with more faults than this, the plots and the
	// overview shade bands of faults, not each fault.
	maxFaultShapes = 200
	// maxWindowMarks bounds the refused and unknown acquires marked in one
	// window (nearby marks are one), and MaxWindowBytes the SVG of the
	// windows drawn in all: windows past it are listed, not drawn.
	maxWindowMarks = 1000
	MaxWindowBytes = 2_500_000
	// Geometry of the overview.
	ovHoldsH = 70.0
)

// boundedData fills the page of a long run: an overview of the whole run,
// its windows in detail, the summary plots, and what was left out.
func (r *Run) boundedData(d *runData, span float64) {
	d.Timeline = r.overview(span)
	d.RatePlot = r.ratePlot(r.seriesRate(), r.series.WidthMs, span)
	d.LatencyPlot = r.quantilePlot(span)
	// The windows of incidents are drawn first, then those of faults, while
	// they fit in MaxWindowBytes; the page shows them in time order.
	used := 0
	var notDrawn []string
	ws := slices.Clone(r.windows)
	slices.SortStableFunc(ws, func(a, b *window) int { return cmp.Compare(min(len(b.incidents), 1), min(len(a.incidents), 1)) })
	for _, w := range ws {
		if used >= MaxWindowBytes {
			notDrawn = append(notDrawn, w.Caption)
			continue
		}
		lanes := max(len(r.Clients), 1)
		px := math.Ceil(float64(lanes) * (tlWidth - tlLabel - tlPad) / maxWindowMarks)
		svg := r.timeline(detail{holds: w.holds, attempts: w.attempts, markPx: px}, w.FromMs, w.ToMs, w.ID+"-svg")
		used += len(svg)
		d.Windows = append(d.Windows, windowPanel{zoomPanel: zoomPanel{ID: w.ID, Caption: w.Caption, SVG: svg}, incidents: w.incidents, from: w.FromMs})
	}
	slices.SortStableFunc(d.Windows, func(a, b windowPanel) int { return cmp.Compare(a.from, b.from) })
	d.Omitted = append(d.Omitted, fmt.Sprintf("The history has %d events (%d operations on the lock, %d holds): too many to draw whole. "+
		"The timeline above sums the whole run up; %d %s of it %s drawn in detail below, every hold and acquire in %s.",
		r.Events, r.Result.Mutex.Ops, r.Result.Mutex.Holds, len(d.Windows), plural(len(d.Windows), "window", "windows"),
		plural(len(d.Windows), "is", "are"), plural(len(d.Windows), "it", "them")))
	if r.omittedIncidents > 0 {
		d.Omitted = append(d.Omitted, fmt.Sprintf("%d %s not drawn in detail (the first %d are).", r.omittedIncidents,
			plural(r.omittedIncidents, "incident is", "incidents are"), MaxIncidentWindows))
	}
	if r.omittedFaults > 0 {
		d.Omitted = append(d.Omitted, fmt.Sprintf("%d of the %d faults %s not drawn in detail (those the incidents name, then those that landed, come first).",
			r.omittedFaults, len(r.Result.Faults), plural(r.omittedFaults, "is", "are")))
	}
	if len(notDrawn) > 0 {
		d.Omitted = append(d.Omitted, fmt.Sprintf("%d %s left out to keep this page small: %s.", len(notDrawn),
			plural(len(notDrawn), "window was", "windows were"), strings.Join(notDrawn, "; ")))
	}
	d.Omitted = append(d.Omitted, "history.jsonl holds every event; result.json lists every fault and the first 100 incidents and overlapping pairs. "+
		"To see a stretch of the run, select its events by their time (CLOCK_MONOTONIC ns, t=0 is the run-start's), "+
		"e.g. jq -c 'select(.time >= A and .time <= B)' history.jsonl.")
}

// seriesRate is the long run's rate plot's buckets.
func (r *Run) seriesRate() []checker.RateBucket {
	out := make([]checker.RateBucket, len(r.series.Buckets))
	for i, b := range r.series.Buckets {
		out[i] = b.RateBucket
	}
	return out
}

// band is faults of one lane or action that touch at a plot's resolution,
// drawn as one shape.
type band struct {
	action   history.Action
	x1, x2   float64
	from, to float64 // ms
	n        int
	first    int // the first fault's ID
}

func (b band) title() string {
	if b.n == 1 {
		return fmt.Sprintf("fault %d (%s) from t=%s to t=%s", b.first, b.action, checker.Seconds(b.from), checker.Seconds(b.to))
	}
	return fmt.Sprintf("%d faults (%s) from t=%s to t=%s", b.n, cmp.Or(string(b.action), "unrecorded"), checker.Seconds(b.from), checker.Seconds(b.to))
}

// faultBands merges the faults of each group (by group) whose shapes, at
// the x mapping given, touch or overlap: at most a band per pixel per
// group, however many faults.
func faultBands(faults []checker.FaultWindow, group func(checker.FaultWindow) string, x func(float64) float64, span float64) []band {
	open := map[string]*band{}
	var out []band
	fs := slices.Clone(faults)
	slices.SortStableFunc(fs, func(a, b checker.FaultWindow) int { return cmp.Compare(a.StartMs, b.StartMs) })
	var order []string
	for _, f := range fs {
		end := span
		if f.EndMs != nil {
			end = *f.EndMs
		}
		x1, x2 := x(f.StartMs), math.Max(x(end), x(f.StartMs)+2)
		g := group(f)
		if b := open[g]; b != nil && x1 <= b.x2+1 {
			b.x2, b.to, b.n = math.Max(b.x2, x2), math.Max(b.to, end), b.n+1
			continue
		}
		if b := open[g]; b != nil {
			out = append(out, *b)
		} else {
			order = append(order, g)
		}
		open[g] = &band{action: f.Action, x1: x1, x2: x2, from: f.StartMs, to: end, n: 1, first: f.ID}
	}
	for _, g := range order {
		out = append(out, *open[g])
	}
	return out
}

// overview sums a long run up on one time axis: a lane per nemesis with
// its faults (bands of them where they touch), the holds that began per
// second, the incidents (red ticks) and the windows drawn in detail (links
// to them).
func (r *Run) overview(span float64) template.HTML {
	plot := tlWidth - tlLabel - tlPad
	x := func(t float64) float64 { return tlLabel + math.Max(0, math.Min(span, t))/span*plot }
	faults := r.faultLanes()
	faultTop := tlAxis + 6
	holdsTop := faultTop + float64(len(faults))*(tlFaultH+2) + 4
	incTop := holdsTop + ovHoldsH + 6
	winTop := incTop + tlLane
	height := winTop + tlLane + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<div class="tl-scroll"><svg id="timeline" class="timeline overview" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" style="min-width:%.0fpx" width="100%%" role="img" aria-label="overview of the whole run, t=0 to t=%s" data-from="0" data-to="%.1f">`,
		tlWidth, height, tlWidth, checker.Seconds(span), span)
	b.WriteString(`<rect x="0" y="0" width="100%" height="100%" fill="#fff"/>`)
	step := tickStep(span)
	for t := 0.0; t <= span+1e-9; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, x(t), tlAxis, x(t), height)
		fmt.Fprintf(&b, `<text x="%.1f" y="13" font-size="%.0f" text-anchor="middle" fill="#555">%s</text>`, x(t), tlFont+1, tickLabel(t, step))
	}
	// Faults: one lane per nemesis.
	for i, n := range faults {
		y := faultTop + float64(i)*(tlFaultH+2)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fff9e6"/>`, tlLabel, y, plot, tlFaultH)
		fmt.Fprintf(&b, `<text class="lane-label fault-lane" x="4" y="%.1f" font-size="%.0f" fill="#5c4400" data-nemesis="%s">%s</text>`, y+13, tlFont+1, esc(n), esc(clip(n, 15)))
	}
	lane := map[string]int{}
	for i, n := range faults {
		lane[n] = i
	}
	for _, bd := range faultBands(r.Result.Faults, func(f checker.FaultWindow) string { return f.Name }, x, span) {
		name := ""
		for _, f := range r.Result.Faults {
			if f.ID == bd.first {
				name = f.Name
				break
			}
		}
		y := faultTop + float64(lane[name])*(tlFaultH+2)
		fmt.Fprintf(&b, `<rect class="fault-band" data-name="%s" data-count="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#00000033"><title>%s</title></rect>`,
			esc(name), bd.n, bd.x1, y, bd.x2-bd.x1, tlFaultH, actionColor(bd.action), esc(name+": "+bd.title()))
	}
	// Holds begun per second.
	fmt.Fprintf(&b, `<text class="lane-label" x="4" y="%.1f" font-size="%.0f" fill="#333">holds/s</text>`, holdsTop+13, tlFont+1)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f8f9fa"/>`, tlLabel, holdsTop, plot, ovHoldsH)
	peak := 1.0
	for _, k := range r.series.Buckets {
		peak = math.Max(peak, float64(k.Holds))
	}
	perSec := 1000 / r.series.WidthMs
	top := niceCeil(peak * perSec)
	fmt.Fprintf(&b, `<text x="4" y="%.1f" font-size="%.0f" fill="#555">max %s</text>`, holdsTop+27, tlFont, trimFloat(top))
	keyColor := keyColors[0]
	for _, k := range r.series.Buckets {
		if k.Holds == 0 {
			continue
		}
		v := float64(k.Holds) * perSec
		h := v / top * (ovHoldsH - 4)
		x1, x2 := x(k.StartMs), x(k.StartMs+r.series.WidthMs)
		fmt.Fprintf(&b, `<rect class="holds-rate" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.8"><title>%s</title></rect>`,
			x1, holdsTop+ovHoldsH-h, math.Max(x2-x1-0.4, 0.6), h, keyColor,
			esc(fmt.Sprintf("t=%s–%s: %d holds began (%s/s)", checker.Seconds(k.StartMs), checker.Seconds(k.StartMs+r.series.WidthMs), k.Holds, trimFloat(v))))
	}
	// Incidents.
	fmt.Fprintf(&b, `<text class="lane-label" x="4" y="%.1f" font-size="%.0f" fill="#333">incidents</text>`, incTop+14, tlFont+1)
	for i, in := range r.Result.Mutex.Incidents {
		x1, x2 := x(in.StartMs), math.Max(x(in.EndMs), x(in.StartMs)+2)
		fmt.Fprintf(&b, `<rect class="incident-mark" data-incident="%d" data-key="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
			i+1, esc(in.Key), x1, incTop+2, x2-x1, tlLane-4, colorOverlap,
			esc(fmt.Sprintf("incident %d: %s held by clients %s at once, t=%s to t=%s", i+1, in.Key, intList(in.Clients), checker.Seconds(in.StartMs), checker.Seconds(in.EndMs))))
	}
	if n := r.Result.Mutex.IncidentCount - len(r.Result.Mutex.Incidents); n > 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="%.0f" text-anchor="end" fill="#a51111">+%d more, not listed in result.json</text>`, tlWidth-tlPad-2, incTop+14, tlFont, n)
	}
	// Windows drawn in detail.
	fmt.Fprintf(&b, `<text class="lane-label" x="4" y="%.1f" font-size="%.0f" fill="#333">in detail</text>`, winTop+14, tlFont+1)
	labelEnd := 0.0
	for i, w := range r.windows {
		x1, x2 := x(w.FromMs), math.Max(x(w.ToMs), x(w.FromMs)+3)
		fmt.Fprintf(&b, `<a href="#%s"><rect class="window-mark" data-window="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#495057" fill-opacity="0.7"><title>%s</title></rect>`,
			w.ID, w.ID, x1, winTop+3, x2-x1, tlLane-6, esc(fmt.Sprintf("window %d: %s", i+1, w.Caption)))
		if label := fmt.Sprint(i + 1); x2+2 >= labelEnd {
			// Labels that would overlap the one before are left out.
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="%.0f" fill="#212529">%s</text>`, x2+2, winTop+13, tlFont, label)
			labelEnd = x2 + 4 + 6*float64(len(label))
		}
		b.WriteString(`</a>`)
	}
	b.WriteString(`</svg></div>`)
	return template.HTML(b.String())
}

func intList(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// quantilePlot draws, per bucket of a long run, the median, the 99th
// percentile and the maximum of the latencies of the acquires that
// completed in it (log scale), with the fault windows shaded: the latency
// plot of a run too long to draw each acquire.
func (r *Run) quantilePlot(span float64) template.HTML {
	var b strings.Builder
	x := r.plotFrame(&b, "latency-plot", "acquire latency quantiles over time", span)
	bottom := plHeight - plBottom
	lo, hi := math.Inf(1), 0.0
	for i := range r.series.Buckets {
		k := &r.series.Buckets[i]
		if k.Completed() > 0 {
			lo, hi = math.Min(lo, k.Quantile(0.5)), math.Max(hi, k.MaxMs)
		}
	}
	if hi == 0 || lo <= 0 || math.IsInf(lo, 1) {
		lo, hi = 0.1, 1
	}
	y := latencyAxis(&b, lo, hi, bottom)
	w := r.series.WidthMs
	for _, q := range []struct {
		class, color, what string
		q                  float64
	}{{"lat-max", "#e8590c", "max", 1}, {"lat-p99", "#7048e8", "p99", 0.99}, {"lat-p50", colorOK, "p50", 0.5}} {
		var pts []string
		for i := range r.series.Buckets {
			k := &r.series.Buckets[i]
			if k.Completed() == 0 {
				continue
			}
			v := k.MaxMs
			if q.q < 1 {
				v = k.Quantile(q.q)
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(k.StartMs+w/2), y(v)))
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline class="%s" points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, q.class, strings.Join(pts, " "), q.color)
		}
	}
	// Per bucket, a transparent column whose tooltip gives its figures.
	for i := range r.series.Buckets {
		k := &r.series.Buckets[i]
		n := k.Completed()
		if n == 0 {
			continue
		}
		fmt.Fprintf(&b, `<rect class="lat-bucket" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#000" fill-opacity="0"><title>%s</title></rect>`,
			x(k.StartMs), plTop, math.Max(x(k.StartMs+w)-x(k.StartMs), 0.5), bottom-plTop,
			esc(fmt.Sprintf("t=%s–%s: %d acquires completed; p50 %s, p99 %s, max %s", checker.Seconds(k.StartMs), checker.Seconds(k.StartMs+w), n,
				checker.Millis(k.Quantile(0.5)), checker.Millis(k.Quantile(0.99)), checker.Millis(k.MaxMs))))
	}
	b.WriteString(`</svg></div>`)
	return template.HTML(b.String())
}
