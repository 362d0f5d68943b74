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

// Geometry of a timeline, in SVG user units. A timeline is drawn at least
// tlWidth CSS pixels wide (narrower windows scroll it sideways), so that its
// text, 10 units and up, never renders below 10 px; wider windows scale it
// up.
const (
	tlWidth  = 1000.0
	tlLabel  = 96.0 // lane labels
	tlPad    = 10.0
	tlAxis   = 18.0
	tlLane   = 20.0
	tlBar    = 14.0
	tlFaultH = 18.0
	tlNodeH  = 18.0
	tlFont   = 10.0 // the smallest text drawn
	// tlMaxNodeLanes bounds the node lanes drawn.
	tlMaxNodeLanes = 16
)

// keyColors tell the keys of a multi-key run apart; none of them is the red
// of an overlap or a colour of a fault action.
var keyColors = []string{"#4c6ef5", "#12b886", "#7950f2", "#1098ad", "#5c940d", "#ae3ec9", "#364fc7", "#087f5b"}

// actionColors colour faults by what they did (history.Action), never by
// nemesis.
var actionColors = map[history.Action]string{
	history.ActionPause:    "#f2c14e",
	history.ActionKill:     "#868e96",
	history.ActionCrash:    "#ff8787",
	history.ActionFailover: "#e599f7",
	history.ActionNetwork:  "#74c0fc",
	history.ActionClock:    "#a9e34b",
	history.ActionSlow:     "#ffc078",
	history.ActionCancel:   "#63e6be",
}

// actionOrder is the order of the colour legend.
var actionOrder = []history.Action{history.ActionPause, history.ActionKill, history.ActionCrash, history.ActionFailover,
	history.ActionNetwork, history.ActionClock, history.ActionSlow, history.ActionCancel}

func actionColor(a history.Action) string {
	if c, ok := actionColors[a]; ok {
		return c
	}
	return "#ced4da" // older histories record no action
}

// Colours of the marks on client lanes.
const (
	colorFailed   = "#868e96"
	colorUnknown  = "#7048e8"
	colorLeaseEnd = "#212529"
	colorOverlap  = "#e03131"
	colorOK       = "#2f9e44"
	// markGap: marks of refused or unknown acquires on one lane closer
	// than this (SVG units, about 1 px at the page's width) are one mark.
	markGap = 4.0
)

// faultLanes are the nemeses of the run's faults, one lane each, in order
// of their first fault.
func (r *Run) faultLanes() []string {
	var names []string
	seen := map[string]bool{}
	for _, f := range r.Result.Faults {
		if !seen[f.Name] {
			seen[f.Name] = true
			names = append(names, f.Name)
		}
	}
	return names
}

// nodeLanes are the lock nodes drawn, one lane each: every node of the run
// (one role each recorded at its start), and any node a fault names.
func (r *Run) nodeLanes() []int {
	n := len(r.Info.NodeRoles)
	for _, m := range r.nodeMarks {
		n = max(n, m.Node+1)
	}
	n = min(n, tlMaxNodeLanes)
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// nodeRows places the node marks of one node that overlap in time on rows
// of their own (the first free row), so that none hides another: the row of
// each mark, and how many rows each node needs.
func (r *Run) nodeRows() (rowOf []int, rows map[int]int) {
	rowOf = make([]int, len(r.nodeMarks))
	rows = map[int]int{}
	ends := map[int][]float64{} // per node, the end of each row's last mark
	for i, m := range r.nodeMarks {
		end := math.Inf(1)
		if m.ToMs != nil {
			end = *m.ToMs
		}
		row := -1
		for j, e := range ends[m.Node] {
			if e <= m.FromMs {
				row = j
				break
			}
		}
		if row < 0 {
			row = len(ends[m.Node])
			ends[m.Node] = append(ends[m.Node], 0)
		}
		ends[m.Node][row] = end
		rowOf[i] = row
		rows[m.Node] = max(rows[m.Node], row+1)
	}
	return rowOf, rows
}

// detail is what a timeline draws on the client lanes: the holds and the
// acquires of the whole run or of a window of it. Marks of refused and
// unknown acquires closer than markGap units on a lane, or than markPx
// when it is wider, are drawn as one.
type detail struct {
	holds    []checker.Hold
	attempts []checker.Attempt
	markPx   float64
}

// timeline draws [from, to] ms of the run as inline SVG: a lane per
// nemesis with its fault windows (coloured by action, labelled with whom
// each hit), a lane per lock node with what the faults did to it, then a
// lane per client with its holds as bars, the moment each lease had run out
// on the server while its holder still held, and the acquires that failed
// or got no answer. Fault windows shade the lanes of the clients they hit;
// every listed overlap is drawn in red on both clients' lanes. Each shape
// carries a <title> for a tooltip and data- attributes for tools.
func (r *Run) timeline(d detail, from, to float64, id string) template.HTML {
	g := r.frame(from, to, id)
	var b strings.Builder
	fmt.Fprintf(&b, `<div class="tl-scroll"><svg id="%s" class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" style="min-width:%.0fpx" width="100%%" role="img" aria-label="timeline of holds and faults, t=%s to t=%s" data-from="%.1f" data-to="%.1f">`,
		g.id, tlWidth, g.height, tlWidth, checker.Seconds(g.from), checker.Seconds(g.to), g.from, g.to)
	fmt.Fprintf(&b, `<defs><pattern id="%s-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff" fill-opacity="0.35"/><line x1="0" y1="0" x2="0" y2="6" stroke="%s" stroke-width="2.2"/></pattern></defs>`, g.id, colorLeaseEnd)
	b.WriteString(`<rect x="0" y="0" width="100%" height="100%" fill="#fff"/>`)
	r.tlAxis(&b, g)
	r.tlLabels(&b, g)
	r.tlFaults(&b, g)
	r.tlNodeMarks(&b, g)
	r.tlHolds(&b, g, d)
	r.tlAcquires(&b, g, d)
	r.tlOverlaps(&b, g)
	b.WriteString(`</svg></div>`)
	return template.HTML(b.String())
}

// tlFrame is a timeline's geometry: the span of the run it draws, where
// each lane lies, and the colour of each key.
type tlFrame struct {
	id                     string
	from, to, plot, height float64
	faultTop, lanesTop     float64
	faults                 []string       // the nemeses' lanes, in order
	faultLane              map[string]int // a nemesis's lane
	nodes                  []int          // the lock nodes' lanes, in order
	nodeY                  map[int]float64
	rowOf                  []int       // each node mark's row in its node's lane
	rows                   map[int]int // each node lane's rows
	lane                   map[int]int // a client's lane
	keyColor               map[string]string
}

// frame lays out a timeline of [from, to] ms of the run: its nemeses'
// lanes on top, then its lock nodes', then its clients'.
func (r *Run) frame(from, to float64, id string) *tlFrame {
	if to <= from {
		to = from + 1
	}
	g := &tlFrame{id: id, from: from, to: to, plot: tlWidth - tlLabel - tlPad, lane: map[int]int{}, keyColor: map[string]string{},
		faults: r.faultLanes(), faultLane: map[string]int{}, nodes: r.nodeLanes(), nodeY: map[int]float64{}}
	for i, c := range r.Clients {
		g.lane[c] = i
	}
	for i, k := range r.Keys {
		g.keyColor[k] = keyColors[i%len(keyColors)]
	}
	for i, n := range g.faults {
		g.faultLane[n] = i
	}
	g.rowOf, g.rows = r.nodeRows()
	g.faultTop = tlAxis + 6
	y0 := g.faultTop + float64(len(g.faults))*(tlFaultH+2) + 4
	for _, n := range g.nodes {
		g.nodeY[n] = y0 // the top of the node's lane
		y0 += float64(max(g.rows[n], 1))*tlNodeH + 2
	}
	g.lanesTop = y0 + 4
	g.height = g.lanesTop + float64(len(r.Clients))*tlLane + 4
	return g
}

// x is where time t (ms) lies on the timeline, t clamped to its span.
func (g *tlFrame) x(t float64) float64 {
	t = math.Max(g.from, math.Min(g.to, t))
	return tlLabel + (t-g.from)/(g.to-g.from)*g.plot
}

// visible says whether [a, b] ms meets the timeline's span.
func (g *tlFrame) visible(a, b float64) bool { return b >= g.from && a <= g.to }

// laneY is the top of client c's lane.
func (g *tlFrame) laneY(c int) float64 { return g.lanesTop + float64(g.lane[c])*tlLane }

// tlAxis draws the time axis and its grid lines.
func (r *Run) tlAxis(b *strings.Builder, g *tlFrame) {
	step := tickStep(g.to - g.from)
	for t := math.Ceil(g.from/step) * step; t <= g.to+1e-9; t += step {
		xx := g.x(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`, xx, tlAxis, xx, g.height)
		fmt.Fprintf(b, `<text x="%.1f" y="13" font-size="%.0f" text-anchor="middle" fill="#555">%s</text>`, xx, tlFont+1, tickLabel(t, step))
	}
}

// tlLabels draws each lane's label and background: a lane per nemesis, per
// lock node, per client.
func (r *Run) tlLabels(b *strings.Builder, g *tlFrame) {
	for i, n := range g.faults {
		y := g.faultTop + float64(i)*(tlFaultH+2)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fff9e6"/>`, tlLabel, y, g.plot, tlFaultH)
		fmt.Fprintf(b, `<text class="lane-label fault-lane" x="4" y="%.1f" font-size="%.0f" fill="#5c4400" data-nemesis="%s">%s</text>`, y+13, tlFont+1, esc(n), esc(clip(n, 15)))
	}
	for _, n := range g.nodes {
		y := g.nodeY[n]
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f1f3f5"/>`, tlLabel, y, g.plot, float64(max(g.rows[n], 1))*tlNodeH)
		label, title := fmt.Sprintf("node %d", n), ""
		if n < len(r.Info.NodeRoles) {
			// "n0 primary with 2 replicas": the lane says the role's
			// first word, the tooltip the whole.
			title = r.Info.NodeRoles[n]
			if f := strings.Fields(title); len(f) > 1 {
				label += " " + f[1]
			}
			title = fmt.Sprintf("<title>node %d: %s when the run began (a failover's mark says who took over)</title>", n, esc(title))
		}
		fmt.Fprintf(b, `<text class="lane-label node-lane" x="4" y="%.1f" font-size="%.0f" fill="#343a40" data-node="%d">%s%s</text>`, y+13, tlFont+1, n, title, esc(label))
	}
	for _, c := range r.Clients {
		y := g.laneY(c)
		if g.lane[c]%2 == 1 {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f8f9fa"/>`, tlLabel, y, g.plot, tlLane)
		}
		fmt.Fprintf(b, `<text class="lane-label client-lane" x="4" y="%.1f" font-size="%.0f" fill="#333" data-client="%d">client %d</text>`, y+14, tlFont+1, c, c)
	}
}

// tlFaults draws the fault windows: each in its nemesis's lane, labelled
// with whom it hit; the lanes of the clients it hit are shaded in its
// colour, and a fault that hit no client in particular shades every client
// lane faintly.
func (r *Run) tlFaults(b *strings.Builder, g *tlFrame) {
	for _, f := range r.Result.Faults {
		end := g.to
		if f.EndMs != nil {
			end = *f.EndMs
		}
		if !g.visible(f.StartMs, end) {
			continue
		}
		x1, x2 := g.x(f.StartMs), math.Max(g.x(end), g.x(f.StartMs)+2)
		color := actionColor(f.Action)
		title := esc(faultTitle(f))
		y := g.faultTop + float64(g.faultLane[f.Name])*(tlFaultH+2)
		if len(f.Clients) == 0 {
			fmt.Fprintf(b, `<rect class="fault-shade" data-fault="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.16"><title>%s</title></rect>`,
				f.ID, x1, g.lanesTop, x2-x1, g.height-g.lanesTop-4, color, title)
		}
		fmt.Fprintf(b, `<rect class="fault" data-fault="%d" data-name="%s" data-action="%s" data-where="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#00000033" rx="2"><title>%s</title></rect>`,
			f.ID, esc(f.Name), esc(string(f.Action)), esc(f.Where()), x1, y, x2-x1, tlFaultH, color, title)
		if label := fit(f.Where(), x2-x1-4); label != "" {
			fmt.Fprintf(b, `<text class="fault-label" data-fault="%d" x="%.1f" y="%.1f" font-size="%.0f" fill="#212529">%s</text>`, f.ID, x1+3, y+13, tlFont, esc(label))
		}
		for _, c := range f.Clients {
			if _, ok := g.lane[c]; ok {
				fmt.Fprintf(b, `<rect class="fault-target" data-fault="%d" data-client="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.5"><title>%s</title></rect>`,
					f.ID, c, x1, g.laneY(c), x2-x1, tlLane, color, title)
			}
		}
	}
}

// tlNodeMarks draws the node lanes: what each fault did to the node, as its
// window records it.
func (r *Run) tlNodeMarks(b *strings.Builder, g *tlFrame) {
	for mi, m := range r.nodeMarks {
		top, ok := g.nodeY[m.Node]
		if !ok {
			continue
		}
		end := g.to
		if m.ToMs != nil {
			end = *m.ToMs
		}
		if !g.visible(m.FromMs, end) {
			continue
		}
		y := top + float64(g.rowOf[mi])*tlNodeH
		x1, x2 := g.x(m.FromMs), math.Max(g.x(end), g.x(m.FromMs)+2)
		title := esc(fmt.Sprintf("node %d: %s at t=%s, %s at %s — %s", m.Node, m.Start, checker.Seconds(m.FromMs), m.End, endText(m.ToMs), m.Text))
		fmt.Fprintf(b, `<rect class="node-mark" data-node="%d" data-fault="%d" data-action="%s" data-start="%s" data-end="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.75"><title>%s</title></rect>`,
			m.Node, m.Fault, esc(string(m.Action)), esc(m.Start), esc(m.End), x1, y+1, x2-x1, tlNodeH-2, actionColor(m.Action), title)
		// The two moments the record has: the fault's start and its end.
		if m.FromMs >= g.from {
			fmt.Fprintf(b, `<line class="node-event" data-node="%d" data-event="%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#212529" stroke-width="2"><title>%s</title></line>`,
				m.Node, esc(m.Start), x1, y, x1, y+tlNodeH, title)
		}
		if m.ToMs != nil && *m.ToMs <= g.to {
			fmt.Fprintf(b, `<line class="node-event" data-node="%d" data-event="%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#212529" stroke-width="2" stroke-dasharray="3 2"><title>%s</title></line>`,
				m.Node, esc(m.End), x2, y, x2, y+tlNodeH, title)
		}
		text := m.Start + " → " + m.End
		if fit(text, x2-x1-6) == text {
			fmt.Fprintf(b, `<text class="node-label" x="%.1f" y="%.1f" font-size="%.0f" fill="#212529">%s</text>`, x1+4, y+13, tlFont, esc(text))
		} else if l := fit(m.Start, tlWidth-tlPad-x1-4); l != "" && (x2-x1 > 30 || g.to-g.from < 5000) {
			fmt.Fprintf(b, `<text class="node-label" x="%.1f" y="%.1f" font-size="%.0f" fill="#212529">%s</text>`, x1+4, y+13, tlFont, esc(l))
		}
	}
}

// tlHolds draws the holds, and how long each was held past its lease.
func (r *Run) tlHolds(b *strings.Builder, g *tlFrame, d detail) {
	for _, h := range d.holds {
		if !g.visible(h.StartMs, h.EndMs) {
			continue
		}
		x1, x2 := g.x(h.StartMs), math.Max(g.x(h.EndMs), g.x(h.StartMs)+1)
		y := g.laneY(h.Client) + (tlLane-tlBar)/2
		stroke := `stroke="none"`
		switch h.End {
		case checker.EndReleaseNotHeld:
			stroke = `stroke="#d9480f" stroke-width="2"`
		case checker.EndLost:
			stroke = `stroke="#495057" stroke-width="1.5" stroke-dasharray="3 2"`
		case checker.EndExit:
			stroke = `stroke="#000" stroke-width="1.5"`
		}
		fmt.Fprintf(b, `<rect class="hold" data-client="%d" data-key="%s" data-end="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.85" %s rx="1.5"><title>%s</title></rect>`,
			h.Client, esc(h.Key), esc(string(h.End)), x1, y, x2-x1, tlBar, g.keyColor[h.Key], stroke,
			esc(fmt.Sprintf("client %d held %s from t=%s for %s (ended: %s)", h.Client, h.Key, checker.Seconds(h.StartMs), checker.Millis(h.EndMs-h.StartMs), h.End)))
		if h.LeaseEndMs > 0 && h.LeaseEndMs < h.EndMs && g.visible(h.LeaseEndMs, h.EndMs) {
			lx := g.x(h.LeaseEndMs)
			title := esc(fmt.Sprintf("client %d's lease on %s had run out on the server by t=%s (granted between t=%s and t=%s, lease %s); the client held on until t=%s, %s past it",
				h.Client, h.Key, checker.Seconds(h.LeaseEndMs), checker.Seconds(h.LeaseFromMs-r.leaseMs()), checker.Seconds(h.LeaseEndMs-r.leaseMs()),
				checker.Millis(r.leaseMs()), checker.Seconds(h.EndMs), checker.Millis(h.EndMs-h.LeaseEndMs)))
			fmt.Fprintf(b, `<rect class="past-lease" data-client="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#%s-hatch)"><title>%s</title></rect>`,
				h.Client, lx, y, math.Max(x2-lx, 1), tlBar, g.id, title)
			fmt.Fprintf(b, `<line class="lease-expiry" data-client="%d" data-key="%s" data-t="%.1f" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"><title>%s</title></line>`,
				h.Client, esc(h.Key), h.LeaseEndMs, lx, y-3, lx, y+tlBar+3, colorLeaseEnd, title)
			if x2-lx > 70 || g.to-g.from < 5000 {
				fmt.Fprintf(b, `<text class="lease-label" x="%.1f" y="%.1f" font-size="%.0f" fill="%s" font-weight="600">lease gone</text>`, lx+3, y-1, tlFont, colorLeaseEnd)
			}
		}
	}
}

// tlAcquires draws the acquires that failed or got no answer: small marks
// at the foot of the client's lane, at their completion (unknown ones that
// never completed: at their invocation). Marks of one kind on one lane that
// fall within markGap units of each other are one mark spanning them, its
// tooltip counting them: a client refused every few milliseconds for a
// second is one grey stretch, not a thousand ticks.
func (r *Run) tlAcquires(b *strings.Builder, g *tlFrame, d detail) {
	for _, run := range markRuns(d, g.lane, g.x, g.from, g.to) {
		y := g.laneY(run.client) + tlLane - 3
		title := esc(run.title())
		if run.unknown {
			fmt.Fprintf(b, `<path class="acq-unknown" data-client="%d" data-count="%d" d="M%.1f %.1f l3 3 l-3 3 l-3 -3 z" fill="%s"><title>%s</title></path>`,
				run.client, run.n, run.x1, y-4, colorUnknown, title)
			if run.x2 > run.x1+3 {
				fmt.Fprintf(b, `<rect class="acq-unknown-run" data-client="%d" x="%.1f" y="%.1f" width="%.1f" height="2" fill="%s"><title>%s</title></rect>`,
					run.client, run.x1, y, run.x2-run.x1, colorUnknown, title)
			}
			continue
		}
		fmt.Fprintf(b, `<rect class="acq-fail" data-client="%d" data-count="%d" x="%.1f" y="%.1f" width="%.1f" height="4" fill="%s"><title>%s</title></rect>`,
			run.client, run.n, run.x1-0.75, y-1, run.x2-run.x1+1.5, colorFailed, title)
	}
}

// tlOverlaps draws the overlaps, on top of everything.
func (r *Run) tlOverlaps(b *strings.Builder, g *tlFrame) {
	for _, o := range r.Result.Mutex.Overlaps {
		if !g.visible(o.StartMs, o.EndMs) {
			continue
		}
		x1, x2 := g.x(o.StartMs), math.Max(g.x(o.EndMs), g.x(o.StartMs)+2)
		title := esc(fmt.Sprintf("overlap: clients %d and %d both held %s from t=%s for %s", o.Clients[0], o.Clients[1], o.Key, checker.Seconds(o.StartMs), checker.Millis(o.EndMs-o.StartMs)))
		for _, c := range o.Clients {
			if _, ok := g.lane[c]; !ok {
				continue
			}
			fmt.Fprintf(b, `<rect class="overlap" data-clients="%d,%d" data-key="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.9" stroke="#a51111"><title>%s</title></rect>`,
				o.Clients[0], o.Clients[1], esc(o.Key), x1, g.laneY(c)+(tlLane-tlBar)/2-2, x2-x1, tlBar+4, colorOverlap, title)
		}
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="4" fill="%s"/>`, x1, tlAxis, x2-x1, colorOverlap)
	}
}

// markRun is one mark on a client's lane: n refused (or unknown) acquires
// completed between x1 and x2, times from and to.
type markRun struct {
	client   int
	unknown  bool
	n        int
	x1, x2   float64
	from, to float64
	first    checker.Attempt
	keys     map[string]bool
}

func (m markRun) title() string {
	if m.n == 1 {
		a := m.first
		if !m.unknown {
			return fmt.Sprintf("client %d's acquire of %s at t=%s was refused after %s", a.Client, a.Key, checker.Seconds(a.InvokeMs), checker.Millis(a.LatencyMs))
		}
		if !a.Completed {
			return fmt.Sprintf("client %d's acquire of %s at t=%s got no answer (unknown)", a.Client, a.Key, checker.Seconds(a.InvokeMs))
		}
		return fmt.Sprintf("client %d's acquire of %s at t=%s got no clear answer after %s (unknown)", a.Client, a.Key, checker.Seconds(a.InvokeMs), checker.Millis(a.LatencyMs))
	}
	of := m.first.Key
	if len(m.keys) > 1 {
		of = fmt.Sprintf("%d keys", len(m.keys))
	}
	what := "were refused"
	if m.unknown {
		what = "got no clear answer (unknown)"
	}
	return fmt.Sprintf("client %d's %d acquires of %s that completed from t=%s to t=%s %s", m.client, m.n, of, checker.Seconds(m.from), checker.Seconds(m.to), what)
}

// markRuns gathers the refused and unknown acquires completed in [from,
// to] into the marks drawn on the client lanes: per lane and kind, marks
// closer than markGap are one.
func markRuns(d detail, lane map[int]int, x func(float64) float64, from, to float64) []markRun {
	var as []checker.Attempt
	for _, a := range d.attempts {
		if _, ok := lane[a.Client]; ok && a.Outcome != checker.AttemptOK && a.DoneMs >= from && a.DoneMs <= to {
			as = append(as, a)
		}
	}
	slices.SortStableFunc(as, func(a, b checker.Attempt) int { return cmp.Compare(a.DoneMs, b.DoneMs) })
	open := map[[2]int]int{} // client, unknown → index of its last run
	var runs []markRun
	for _, a := range as {
		unknown := a.Outcome == checker.AttemptUnknown
		k := [2]int{a.Client, 0}
		if unknown {
			k[1] = 1
		}
		xx := x(a.DoneMs)
		if i, ok := open[k]; ok && xx-runs[i].x2 < max(markGap, d.markPx) {
			m := &runs[i]
			m.n++
			m.x2, m.to = xx, a.DoneMs
			m.keys[a.Key] = true
			continue
		}
		open[k] = len(runs)
		runs = append(runs, markRun{client: a.Client, unknown: unknown, n: 1, x1: xx, x2: xx, from: a.DoneMs, to: a.DoneMs, first: a, keys: map[string]bool{a.Key: true}})
	}
	return runs
}

// leaseMs is the lease the run's lock used.
func (r *Run) leaseMs() float64 { return float64(r.Info.Lease()) }

func faultTitle(f checker.FaultWindow) string {
	s := fmt.Sprintf("fault %d: %s on %s (%s) from t=%s to %s", f.ID, f.Name, f.Target, f.Action, checker.Seconds(f.StartMs), endText(f.EndMs))
	if p := checker.Pairs(f.Params); p != "" {
		s += " (" + p + ")"
	}
	if f.Effect != "" {
		s += " — " + f.Effect
	}
	return s
}

// fit returns s when it fits in w units at the timeline's smallest font
// (about 6 units a character), a shortened s when some of it does, else "".
func fit(s string, w float64) string {
	n := int(w / 6)
	switch {
	case n >= len([]rune(s)):
		return s
	case n < 4:
		return ""
	}
	return clip(s, n)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func endText(end *float64) string {
	if end == nil {
		return "the end (never healed)"
	}
	return "t=" + checker.Seconds(*end)
}

// tickStep picks a round step that gives at most about ten ticks.
func tickStep(span float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 20000, 30000, 60000,
		120000, 300000, 600000, 900000, 1800000, 3600000} {
		if span/s <= 10 {
			return s
		}
	}
	return 7200000
}

func tickLabel(t, step float64) string {
	if step >= 120000 {
		return fmt.Sprintf("%.0f min", t/60000)
	}
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
