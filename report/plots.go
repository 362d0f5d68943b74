package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
)

// Geometry of the plots, in SVG user units; like the timeline they are
// drawn at least plWidth CSS pixels wide.
const (
	plWidth  = tlWidth
	plHeight = 170.0
	plLeft   = tlLabel
	plTop    = 10.0
	plBottom = 24.0
	// plMaxPoints bounds the points of the latency plot: successful
	// acquires are thinned evenly beyond it; failed and unknown ones are
	// all drawn up to it.
	plMaxPoints = 6000
)

// plotFrame opens a plot's SVG, shades the fault windows (by action, with
// their labels as tooltips) and draws the time axis; it returns the x
// mapping of times in [0, span] ms.
func (r *Run) plotFrame(b *strings.Builder, id, label string, span float64) func(float64) float64 {
	plot := plWidth - plLeft - tlPad
	x := func(t float64) float64 { return plLeft + math.Max(0, math.Min(span, t))/span*plot }
	fmt.Fprintf(b, `<div class="tl-scroll"><svg id="%s" class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" style="min-width:%.0fpx" width="100%%" role="img" aria-label="%s">`,
		id, plWidth, plHeight, plWidth, esc(label))
	b.WriteString(`<rect x="0" y="0" width="100%" height="100%" fill="#fff"/>`)
	bottom := plHeight - plBottom
	if len(r.Result.Faults) <= maxFaultShapes {
		for _, f := range r.Result.Faults {
			end := span
			if f.EndMs != nil {
				end = *f.EndMs
			}
			x1, x2 := x(f.StartMs), math.Max(x(end), x(f.StartMs)+2)
			fmt.Fprintf(b, `<rect class="plot-fault" data-fault="%d" data-action="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.3"><title>%s</title></rect>`,
				f.ID, esc(string(f.Action)), x1, plTop, x2-x1, bottom-plTop, actionColor(f.Action), esc(faultTitle(f)))
		}
	} else {
		// Too many to draw one by one: bands of the faults of one action
		// that touch at the plot's resolution.
		for _, band := range faultBands(r.Result.Faults, func(f checker.FaultWindow) string { return string(f.Action) }, x, span) {
			fmt.Fprintf(b, `<rect class="plot-fault-band" data-count="%d" data-action="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.3"><title>%s</title></rect>`,
				band.n, esc(string(band.action)), band.x1, plTop, band.x2-band.x1, bottom-plTop, actionColor(band.action), esc(band.title()))
		}
	}
	step := tickStep(span)
	for t := 0.0; t <= span+1e-9; t += step {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e9ecef"/>`, x(t), plTop, x(t), bottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="#555">%s</text>`, x(t), plHeight-8, tickLabel(t, step))
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#adb5bd"/>`, plLeft, bottom, plLeft+plot, bottom)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#adb5bd"/>`, plLeft, plTop, plLeft, bottom)
	return x
}

// ratePlot draws the acquires completed per second over the run, stacked
// by outcome (Jepsen's rate plot), with the fault windows shaded.
func (r *Run) ratePlot(buckets []checker.RateBucket, width, span float64) template.HTML {
	var b strings.Builder
	x := r.plotFrame(&b, "rate-plot", "acquires per second over time", span)
	bottom := plHeight - plBottom
	peak := 1.0
	for _, k := range buckets {
		peak = math.Max(peak, float64(k.OK+k.Failed+k.Unknown))
	}
	perSec := 1000 / width
	top := niceCeil(peak * perSec)
	y := func(v float64) float64 { return bottom - v/top*(bottom-plTop) }
	for _, v := range []float64{0, top / 2, top} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s/s</text>`, plLeft-6, y(v)+4, trimFloat(v))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f1f3f5"/>`, plLeft, y(v), plWidth-tlPad, y(v))
	}
	fmt.Fprintf(&b, `<text x="4" y="%.1f" font-size="11" fill="#333">acquires</text>`, plTop+12)
	for _, k := range buckets {
		x1, x2 := x(k.StartMs), x(k.StartMs+width)
		w := math.Max(x2-x1-0.6, 0.8)
		base := 0.0
		for _, part := range []struct {
			n            int
			class, color string
			what         string
		}{{k.OK, "rate-ok", colorOK, "succeeded"}, {k.Failed, "rate-fail", colorFailed, "refused"}, {k.Unknown, "rate-unknown", colorUnknown, "unknown"}} {
			if part.n == 0 {
				continue
			}
			v := float64(part.n) * perSec
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
				part.class, x1, y(base+v), w, y(base)-y(base+v), part.color,
				esc(fmt.Sprintf("t=%s–%s: %d %s (%s/s)", checker.Seconds(k.StartMs), checker.Seconds(k.StartMs+width), part.n, part.what, trimFloat(v))))
			base += v
		}
	}
	b.WriteString(`</svg></div>`)
	return template.HTML(b.String())
}

// latencyPlot draws every acquire's latency against the time it was
// invoked, on a log scale, by outcome (Jepsen's latency-raw plot), with the
// fault windows shaded. Acquires that never completed are drawn at the top.
func (r *Run) latencyPlot(span float64) template.HTML {
	var b strings.Builder
	x := r.plotFrame(&b, "latency-plot", "acquire latency over time", span)
	bottom := plHeight - plBottom
	lo, hi := math.Inf(1), 0.0
	for _, a := range r.attempts {
		if a.Completed && a.LatencyMs > 0 {
			lo, hi = math.Min(lo, a.LatencyMs), math.Max(hi, a.LatencyMs)
		}
	}
	if hi == 0 {
		lo, hi = 0.1, 1
	}
	y := latencyAxis(&b, lo, hi, bottom)
	ok := 0
	for _, a := range r.attempts {
		if a.Outcome == checker.AttemptOK {
			ok++
		}
	}
	stride := max(1, (ok+plMaxPoints-1)/plMaxPoints)
	drawn, seenOK := 0, 0
	for _, a := range r.attempts {
		if drawn >= 2*plMaxPoints {
			break
		}
		color, class := colorOK, "lat-ok"
		switch a.Outcome {
		case checker.AttemptOK:
			seenOK++
			if (seenOK-1)%stride != 0 {
				continue
			}
		case checker.AttemptFailed:
			color, class = colorFailed, "lat-fail"
		default:
			color, class = colorUnknown, "lat-unknown"
		}
		drawn++
		yy := y(a.LatencyMs)
		if !a.Completed {
			yy = plTop + 2
		}
		title := fmt.Sprintf("client %d's acquire of %s at t=%s: %s after %s", a.Client, a.Key, checker.Seconds(a.InvokeMs), a.Outcome, checker.Millis(a.LatencyMs))
		if !a.Completed {
			title = fmt.Sprintf("client %d's acquire of %s at t=%s never completed", a.Client, a.Key, checker.Seconds(a.InvokeMs))
		}
		fmt.Fprintf(&b, `<circle class="lat-point %s" data-outcome="%s" cx="%.1f" cy="%.1f" r="1.8" fill="%s" fill-opacity="0.7"><title>%s</title></circle>`,
			class, esc(a.Outcome), x(a.InvokeMs), yy, color, esc(title))
	}
	b.WriteString(`</svg></div>`)
	return template.HTML(b.String())
}

// bucketWidth is a round bucket width giving at most about 120 buckets.
func bucketWidth(span float64) float64 { return roundWidth(span, 120) }

// summaryWidth is the bucket width of a long run's series: at most about
// 300 buckets.
func summaryWidth(span float64) float64 { return roundWidth(span, 300) }

func roundWidth(span float64, n float64) float64 {
	for _, w := range []float64{10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000} {
		if span/w <= n {
			return w
		}
	}
	return 1800000
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// latencyAxis draws the latency plot's logarithmic axis, from the decade
// at or below lo to the one above hi, and returns the y of a latency in ms.
func latencyAxis(b *strings.Builder, lo, hi, bottom float64) func(float64) float64 {
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi*1.01)))
	y := func(v float64) float64 {
		v = math.Max(lo, math.Min(hi, v))
		return bottom - (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(bottom-plTop-8)
	}
	for v := lo; v <= hi*1.0001; v *= 10 {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f1f3f5"/>`, plLeft, y(v), plWidth-tlPad, y(v))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s</text>`, plLeft-6, y(v)+4, checker.Millis(v))
	}
	fmt.Fprintf(b, `<text x="4" y="%.1f" font-size="11" fill="#333">latency</text>`, plTop+12)
	return y
}
