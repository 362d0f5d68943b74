package report

import (
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"math"
	"slices"
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
	// plMaxPoints bounds the points of the latency plot, plSpot the size
	// of the spot in which acquires of one outcome are one point (see
	// latencyPoints).
	plMaxPoints = 1500
	plSpot      = 2.0
	// plBandGap separates the rate plot's two bands.
	plBandGap = 12.0
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

// ratePlot draws the acquires completed per second over the run, by
// outcome (Jepsen's rate plot), with the fault windows shaded: granted
// acquires in a band of their own above the refused and unknown ones, each
// band on its own scale, since a lock that refuses hundreds of tries a
// second grants only a few and one scale would flatten the grants to
// nothing.
func (r *Run) ratePlot(buckets []checker.RateBucket, width, span float64) template.HTML {
	var b strings.Builder
	x := r.plotFrame(&b, "rate-plot", "acquires per second over time", span)
	bottom := plHeight - plBottom
	band := (bottom - plTop - plBandGap) / 2
	perSec := 1000 / width
	type part struct {
		n            func(checker.RateBucket) int
		class, color string
		what         string
	}
	bands := []struct {
		label string
		top   float64
		parts []part
	}{
		{"granted", plTop, []part{{func(k checker.RateBucket) int { return k.OK }, "rate-ok", colorOK, "succeeded"}}},
		{"refused", plTop + band + plBandGap, []part{{func(k checker.RateBucket) int { return k.Failed }, "rate-fail", colorFailed, "refused"},
			{func(k checker.RateBucket) int { return k.Unknown }, "rate-unknown", colorUnknown, "unknown"}}},
	}
	for _, bd := range bands {
		peak := 1.0
		for _, k := range buckets {
			n := 0
			for _, p := range bd.parts {
				n += p.n(k)
			}
			peak = math.Max(peak, float64(n))
		}
		top := niceCeil(peak * perSec)
		low := bd.top + band
		y := func(v float64) float64 { return low - v/top*band }
		for _, v := range []float64{0, top} {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s/s</text>`, plLeft-6, y(v)+4, trimFloat(v))
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f1f3f5"/>`, plLeft, y(v), plWidth-tlPad, y(v))
		}
		fmt.Fprintf(&b, `<text x="4" y="%.1f" font-size="11" fill="%s">%s</text>`, bd.top+band/2+4, bd.parts[0].color, bd.label)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#adb5bd"/>`, plLeft, low, plWidth-tlPad, low)
		for _, k := range buckets {
			x1, x2 := x(k.StartMs), x(k.StartMs+width)
			w := math.Max(x2-x1-0.6, 0.8)
			base := 0.0
			for _, p := range bd.parts {
				n := p.n(k)
				if n == 0 {
					continue
				}
				v := float64(n) * perSec
				fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
					p.class, x1, y(base+v), w, math.Max(y(base)-y(base+v), 1), p.color,
					esc(fmt.Sprintf("t=%s–%s: %d %s (%s/s)", checker.Seconds(k.StartMs), checker.Seconds(k.StartMs+width), n, p.what, trimFloat(v))))
				base += v
			}
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
	points, thinned := latencyPoints(r.attempts, x, y)
	for _, p := range points {
		color, class := colorOK, "lat-ok"
		switch p.first.Outcome {
		case checker.AttemptFailed:
			color, class = colorFailed, "lat-fail"
		case checker.AttemptUnknown:
			color, class = colorUnknown, "lat-unknown"
		}
		fmt.Fprintf(&b, `<circle class="lat-point %s" data-outcome="%s" data-count="%d" cx="%.1f" cy="%.1f" r="1.8" fill="%s" fill-opacity="0.7"><title>%s</title></circle>`,
			class, esc(p.first.Outcome), p.n, p.x, p.y, color, esc(p.title()))
	}
	b.WriteString(`</svg></div>`)
	// Say how the points were drawn when they are not one per acquire.
	if len(points) < len(r.attempts) {
		fmt.Fprintf(&b, `<p class="muted" id="latency-drawn">%d acquires drawn as %d points: acquires of one outcome that fall on the same spot (%.0f×%.0f units) are one point, whose tooltip counts them`,
			len(r.attempts), len(points), plSpot, plSpot)
		if thinned > 0 {
			fmt.Fprintf(&b, `; beyond %d points, the points of the most common outcomes were thinned evenly, each outcome keeping an even share (a rarer one all its points): %d acquires are not drawn`, plMaxPoints, thinned)
		}
		b.WriteString(`. The rate plot above counts every acquire.</p>`)
	}
	return template.HTML(b.String())
}

// latPoint is one point of the latency plot: n acquires of one outcome
// that fall on the same spot, the first of them named.
type latPoint struct {
	x, y  float64
	n     int
	first checker.Attempt
	last  checker.Attempt
}

func (p latPoint) title() string {
	a := p.first
	if p.n > 1 {
		return fmt.Sprintf("%d acquires (%s) invoked from t=%s to t=%s, %s after about %s", p.n, a.Outcome,
			checker.Seconds(a.InvokeMs), checker.Seconds(p.last.InvokeMs), a.Outcome, checker.Millis(a.LatencyMs))
	}
	if !a.Completed {
		return fmt.Sprintf("client %d's acquire of %s at t=%s never completed", a.Client, a.Key, checker.Seconds(a.InvokeMs))
	}
	return fmt.Sprintf("client %d's acquire of %s at t=%s: %s after %s", a.Client, a.Key, checker.Seconds(a.InvokeMs), a.Outcome, checker.Millis(a.LatencyMs))
}

// latencyPoints places every acquire on the latency plot (those that never
// completed at its top), merges those of one outcome on one spot of
// plSpot×plSpot units, and, past plMaxPoints, thins the points of the
// commonest outcomes evenly; thinned counts the acquires of the points
// left out.
func latencyPoints(attempts []checker.Attempt, x, y func(float64) float64) (points []latPoint, thinned int) {
	spot := map[[3]int]int{}
	for _, a := range attempts {
		xx, yy := x(a.InvokeMs), y(a.LatencyMs)
		if !a.Completed {
			yy = plTop + 2
		}
		k := [3]int{int(xx / plSpot), int(yy / plSpot), len(a.Outcome)}
		if i, ok := spot[k]; ok {
			points[i].n++
			points[i].last = a
			continue
		}
		spot[k] = len(points)
		points = append(points, latPoint{x: xx, y: yy, n: 1, first: a, last: a})
	}
	if len(points) <= plMaxPoints {
		return points, 0
	}
	// Each outcome keeps an even share of the room, a smaller one all its
	// points and its unused share going to the others: the few grants
	// among thousands of refusals stay visible.
	count := map[string]int{}
	for _, p := range points {
		count[p.first.Outcome]++
	}
	outcomes := slices.Collect(maps.Keys(count))
	slices.SortFunc(outcomes, func(a, b string) int { return cmp.Or(cmp.Compare(count[a], count[b]), cmp.Compare(a, b)) })
	share, room := map[string]int{}, plMaxPoints
	for i, o := range outcomes {
		share[o] = min(count[o], room/(len(outcomes)-i))
		room -= share[o]
	}
	seen, next := map[string]int{}, map[string]float64{}
	var kept []latPoint
	for _, p := range points {
		o := p.first.Outcome
		if float64(seen[o]) >= next[o] {
			kept = append(kept, p)
			next[o] += float64(count[o]) / float64(share[o])
		} else {
			thinned += p.n
		}
		seen[o]++
	}
	return kept, thinned
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
