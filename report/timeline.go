package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
)

// Geometry of a timeline, in SVG user units (the SVG scales to the page).
const (
	tlWidth  = 1000.0
	tlLabel  = 70.0 // lane labels
	tlPad    = 10.0
	tlAxis   = 18.0
	tlLane   = 20.0
	tlBar    = 14.0
	tlFaultH = 18.0
)

// keyColors tell the keys of a multi-key run apart; none of them is the red
// of an overlap or the amber of a fault.
var keyColors = []string{"#4c6ef5", "#12b886", "#7950f2", "#1098ad", "#5c940d", "#ae3ec9", "#364fc7", "#087f5b"}

// timeline draws [from, to] ms of the run as inline SVG: a lane of fault
// windows, then one lane per client with its holds as bars; fault windows
// are shaded across the lanes (darker on the clients a fault acted on) and
// every listed overlap is drawn in red on both clients' lanes. Each shape
// carries a <title> for a tooltip and data- attributes for tools.
func (r *Run) timeline(from, to float64, id string) template.HTML {
	if to <= from {
		to = from + 1
	}
	plot := tlWidth - tlLabel - tlPad
	x := func(t float64) float64 {
		t = math.Max(from, math.Min(to, t))
		return tlLabel + (t-from)/(to-from)*plot
	}
	visible := func(a, b float64) bool { return b >= from && a <= to }
	lane := map[int]int{}
	for i, c := range r.Clients {
		lane[c] = i
	}
	keyColor := map[string]string{}
	for i, k := range r.Keys {
		keyColor[k] = keyColors[i%len(keyColors)]
	}
	faultTop := tlAxis + 4
	lanesTop := faultTop + tlFaultH + 6
	height := lanesTop + float64(len(r.Clients))*tlLane + 4
	laneY := func(c int) float64 { return lanesTop + float64(lane[c])*tlLane }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="100%%" role="img" aria-label="timeline of holds and faults">`,
		id, tlWidth, height)
	b.WriteString(`<rect x="0" y="0" width="100%" height="100%" fill="#fff"/>`)

	// Axis and grid lines.
	step := tickStep(to - from)
	for t := math.Ceil(from/step) * step; t <= to+1e-9; t += step {
		xx := x(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, xx, tlAxis, xx, height)
		fmt.Fprintf(&b, `<text x="%.1f" y="12" font-size="10" text-anchor="middle" fill="#555">%s</text>`, xx, tickLabel(t, step))
	}

	// Lanes.
	fmt.Fprintf(&b, `<text x="4" y="%.1f" font-size="11" fill="#8a6d00">faults</text>`, faultTop+13)
	for _, c := range r.Clients {
		y := laneY(c)
		if lane[c]%2 == 1 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f8f9fa"/>`, tlLabel, y, plot, tlLane)
		}
		fmt.Fprintf(&b, `<text class="lane-label" x="4" y="%.1f" font-size="11" fill="#333" data-client="%d">client %d</text>`, y+14, c, c)
	}

	// Fault windows: shaded across every lane, darker on the clients hit.
	for _, f := range r.Result.Faults {
		end := to
		if f.EndMs != nil {
			end = *f.EndMs
		}
		if !visible(f.StartMs, end) {
			continue
		}
		x1, x2 := x(f.StartMs), math.Max(x(end), x(f.StartMs)+1.5)
		title := esc(fmt.Sprintf("fault %d: %s on %s from t=%s to %s %s", f.ID, f.Name, f.Target, checker.Seconds(f.StartMs), endText(f.EndMs), "("+checker.Pairs(f.Params)+")"))
		fmt.Fprintf(&b, `<rect class="fault-shade" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fbe7a6" fill-opacity="0.55"><title>%s</title></rect>`,
			x1, lanesTop, x2-x1, height-lanesTop-4, title)
		fmt.Fprintf(&b, `<rect class="fault" data-fault="%d" data-name="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f2c14e" rx="2"><title>%s</title></rect>`,
			f.ID, esc(f.Name), x1, faultTop, x2-x1, tlFaultH, title)
		if x2-x1 > 40 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#5c4400">%s</text>`, x1+3, faultTop+13, esc(f.Label()))
		}
		for _, c := range f.Clients {
			if _, ok := lane[c]; ok {
				fmt.Fprintf(&b, `<rect class="fault-target" data-client="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f2c14e" fill-opacity="0.6"><title>%s</title></rect>`,
					c, x1, laneY(c), x2-x1, tlLane, title)
			}
		}
	}

	// Holds.
	for _, h := range r.Holds {
		if !visible(h.StartMs, h.EndMs) {
			continue
		}
		x1, x2 := x(h.StartMs), math.Max(x(h.EndMs), x(h.StartMs)+1)
		stroke := `stroke="none"`
		switch h.End {
		case checker.EndReleaseNotHeld:
			stroke = `stroke="#d9480f" stroke-width="2"`
		case checker.EndLost:
			stroke = `stroke="#495057" stroke-width="1.5" stroke-dasharray="3 2"`
		case checker.EndExit:
			stroke = `stroke="#000" stroke-width="1.5"`
		}
		fmt.Fprintf(&b, `<rect class="hold" data-client="%d" data-key="%s" data-end="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.85" %s rx="1.5"><title>%s</title></rect>`,
			h.Client, esc(h.Key), esc(string(h.End)), x1, laneY(h.Client)+(tlLane-tlBar)/2, x2-x1, tlBar, keyColor[h.Key], stroke,
			esc(fmt.Sprintf("client %d held %s from t=%s for %s (ended: %s)", h.Client, h.Key, checker.Seconds(h.StartMs), checker.Millis(h.EndMs-h.StartMs), h.End)))
	}

	// Overlaps, on top of everything.
	for _, o := range r.Result.Mutex.Overlaps {
		if !visible(o.StartMs, o.EndMs) {
			continue
		}
		x1, x2 := x(o.StartMs), math.Max(x(o.EndMs), x(o.StartMs)+2)
		title := esc(fmt.Sprintf("overlap: clients %d and %d both held %s from t=%s for %s", o.Clients[0], o.Clients[1], o.Key, checker.Seconds(o.StartMs), checker.Millis(o.EndMs-o.StartMs)))
		for _, c := range o.Clients {
			if _, ok := lane[c]; !ok {
				continue
			}
			fmt.Fprintf(&b, `<rect class="overlap" data-clients="%d,%d" data-key="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e03131" fill-opacity="0.9" stroke="#a51111"><title>%s</title></rect>`,
				o.Clients[0], o.Clients[1], esc(o.Key), x1, laneY(c)+(tlLane-tlBar)/2-2, x2-x1, tlBar+4, title)
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="4" fill="#e03131"/>`, x1, tlAxis, x2-x1)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func endText(end *float64) string {
	if end == nil {
		return "the end (never healed)"
	}
	return "t=" + checker.Seconds(*end)
}

// tickStep picks a round step that gives at most about ten ticks.
func tickStep(span float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 20000, 30000, 60000} {
		if span/s <= 10 {
			return s
		}
	}
	return 120000
}

func tickLabel(t, step float64) string {
	if step >= 1000 {
		return fmt.Sprintf("%.0f s", t/1000)
	}
	if math.Mod(step, 100) == 0 {
		return fmt.Sprintf("%.1f s", t/1000)
	}
	if step >= 100 {
		return fmt.Sprintf("%.2f s", t/1000)
	}
	return fmt.Sprintf("%.0f ms", t)
}

func esc(s string) string { return template.HTMLEscapeString(s) }
