package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// Bounds of a long run's report. A history of more than MaxDetailEvents
// events (or more than checker.MaxVisualizeOps operations) is not drawn
// whole: the report draws windows of it in detail, around the first
// incidents and faults, and summary plots for the whole run, so that its
// size and the memory that renders it do not grow with the run. A shorter
// history is drawn whole, every hold and every acquire.
const (
	MaxDetailEvents = 60000
	// MaxIncidentWindows and MaxFaultWindows bound the windows drawn in
	// detail: around the first incidents, then around faults that no
	// incident window shows (those the incidents name, then those that
	// landed, then the rest, in time order).
	MaxIncidentWindows = 6
	MaxFaultWindows    = 4
	// MaxWindowMs bounds a window's length, and MaxWindowEvents the events
	// kept for one (a window is cut short where it reaches them).
	MaxWindowMs     = 6000.0
	MaxWindowEvents = 30000
	// windowMargin is drawn either side of what a window is about.
	windowMargin = 250.0
	// drainEvents bounds the events a client may add to a window after its
	// end while it finishes the hold or the operation it was in.
	drainEvents = 64
	// bufferEvents bounds what is kept of a client's events since it last
	// held nothing and had nothing pending (compacted beyond it).
	bufferEvents = 4096
)

// window is a stretch of a long run drawn in detail.
type window struct {
	ID      string
	FromMs  float64
	ToMs    float64
	Caption string
	// About says what it shows: "incident 1", "fault 12", ...
	About []string
	// incidents and faults are what it is about (indexes into
	// Result.Mutex.Incidents, fault IDs).
	incidents []int
	faults    []int
	// from, to in ns of the history's clock.
	from, to int64
	events   []history.Event
	// full: the window reached MaxWindowEvents and was cut there.
	full     bool
	holds    []checker.Hold
	attempts []checker.Attempt
}

// pickWindows chooses the windows of a long run, from its result alone:
// one around each of the first MaxIncidentWindows incidents (from the
// earliest hold of its listed pairs and the faults that caused it, to its
// end), then one around each of up to MaxFaultWindows faults that no
// incident window shows, and, in a run with neither, its first seconds.
// Windows that overlap are merged. omittedIncidents and omittedFaults count
// the incidents and faults that no window shows.
func pickWindows(res checker.Result, span float64) (ws []*window, omittedIncidents, omittedFaults int) {
	clamp := func(from, to, focus float64) (float64, float64) {
		from, to = max(0, from), min(span, to)
		if to-from > MaxWindowMs {
			from = max(from, focus-MaxWindowMs/3)
			to = min(to, from+MaxWindowMs)
		}
		return from, max(to, from+1)
	}
	faultByID := map[int]checker.FaultWindow{}
	for _, f := range res.Faults {
		faultByID[f.ID] = f
	}
	for i, in := range res.Mutex.Incidents {
		if i >= MaxIncidentWindows {
			break
		}
		from, to := in.StartMs-windowMargin, in.EndMs+windowMargin
		for _, o := range res.Mutex.Overlaps {
			if res.IncidentOf(o) == i {
				from = min(from, o.Holds[0].StartMs-windowMargin, o.Holds[1].StartMs-windowMargin)
			}
		}
		for _, id := range in.Faults {
			if f, ok := faultByID[id]; ok {
				from = min(from, f.StartMs-windowMargin)
			}
		}
		from, to = clamp(from, to, in.StartMs)
		ws = append(ws, &window{FromMs: from, ToMs: to, incidents: []int{i},
			About: []string{fmt.Sprintf("incident %d (%s, %s)", i+1, in.Key, plural(in.Pairs, "1 pair", fmt.Sprintf("%d pairs", in.Pairs)))}})
	}
	omittedIncidents = max(res.Mutex.IncidentCount, len(res.Mutex.Incidents)) - min(len(res.Mutex.Incidents), MaxIncidentWindows)
	shown := func(f checker.FaultWindow) bool {
		end := span
		if f.EndMs != nil {
			end = *f.EndMs
		}
		return slices.ContainsFunc(ws, func(w *window) bool { return f.StartMs >= w.FromMs && f.StartMs <= w.ToMs && end <= w.ToMs })
	}
	named := map[int]bool{}
	for _, in := range res.Mutex.Incidents {
		for _, id := range in.Faults {
			named[id] = true
		}
	}
	rank := func(f checker.FaultWindow) int {
		switch {
		case named[f.ID]:
			return 0
		case f.Landed:
			return 1
		}
		return 2
	}
	faults := slices.Clone(res.Faults)
	slices.SortStableFunc(faults, func(a, b checker.FaultWindow) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.StartMs, b.StartMs))
	})
	added := 0
	for _, f := range faults {
		if shown(f) {
			for _, w := range ws {
				if f.StartMs >= w.FromMs && f.StartMs <= w.ToMs {
					w.faults = append(w.faults, f.ID)
				}
			}
			continue
		}
		if added >= MaxFaultWindows {
			omittedFaults++
			continue
		}
		end := span
		if f.EndMs != nil {
			end = *f.EndMs
		}
		from, to := clamp(f.StartMs-2*windowMargin, end+2*windowMargin, f.StartMs)
		ws = append(ws, &window{FromMs: from, ToMs: to, faults: []int{f.ID},
			About: []string{fmt.Sprintf("fault %d (%s %s)", f.ID, f.Name, f.Where())}})
		added++
	}
	if len(ws) == 0 {
		ws = append(ws, &window{FromMs: 0, ToMs: min(span, 3000), About: []string{"the run's first seconds"}})
	}
	// Merge the windows that overlap, in time order.
	slices.SortFunc(ws, func(a, b *window) int { return cmp.Compare(a.FromMs, b.FromMs) })
	var merged []*window
	for _, w := range ws {
		if n := len(merged); n > 0 && w.FromMs <= merged[n-1].ToMs {
			m := merged[n-1]
			m.ToMs = max(m.ToMs, w.ToMs)
			m.About = append(m.About, w.About...)
			m.incidents = append(m.incidents, w.incidents...)
			m.faults = append(m.faults, w.faults...)
			continue
		}
		merged = append(merged, w)
	}
	for i, w := range merged {
		w.ID = fmt.Sprintf("window-%d", i+1)
	}
	return merged, omittedIncidents, omittedFaults
}

// collector gathers, in one pass over a history in file order, the events
// of each window: every client event in [from, to]; for each client, the
// events since it last held nothing and had nothing pending before the
// window (so that a hold or an acquire under way when the window opens is
// whole); and, after the window, the events that finish what the client
// was in at its end. Its memory is the windows' events plus a short buffer
// per client.
type collector struct {
	windows []*window // disjoint, in time order
	runs    []history.Event
	clients map[int]*collClient
}

type collClient struct {
	buf     []history.Event // since the client was last idle, before its next window
	pending bool
	open    map[string]int // hold depth per key
	next    int            // the window it is in or before
	in      bool           // its events go to windows[next]
	drained int            // events added after windows[next]'s end
}

func (cc *collClient) idle() bool {
	if cc.pending {
		return false
	}
	for _, d := range cc.open {
		if d > 0 {
			return false
		}
	}
	return true
}

// track follows what the client holds and has pending, as the checker's
// replay does, to tell when it is idle.
func (cc *collClient) track(e history.Event) {
	switch e.Kind {
	case history.Invoke:
		cc.pending = true
		if e.F == history.Release && cc.open[e.Key] > 0 {
			cc.open[e.Key]--
		}
	case history.OK, history.Fail, history.Info:
		if cc.pending && e.F == history.Acquire && e.Kind == history.OK {
			cc.open[e.Key]++
		}
		cc.pending = false
	case history.Lost:
		delete(cc.open, e.Key)
	case history.WorkerExit:
		clear(cc.open)
		cc.pending = false
	}
}

func newCollector(ws []*window, origin int64) *collector {
	for _, w := range ws {
		w.from, w.to = origin+int64(w.FromMs*1e6), origin+int64(w.ToMs*1e6)
	}
	return &collector{windows: ws, clients: map[int]*collClient{}}
}

// add takes the next event of the history in file order.
func (c *collector) add(e history.Event) {
	if e.Client < 0 {
		switch e.Kind {
		case history.RunStart:
			c.runs = append(c.runs, e)
		case history.RunEnd, history.Stall:
			for _, w := range c.windows {
				if e.Time >= w.from && e.Time <= w.to && !w.full {
					w.events = append(w.events, e)
				}
			}
		}
		return
	}
	cc := c.clients[e.Client]
	if cc == nil {
		cc = &collClient{open: map[string]int{}}
		c.clients[e.Client] = cc
	}
	wasIdle := cc.idle()
	cc.track(e)
	for cc.next < len(c.windows) {
		w := c.windows[cc.next]
		if e.Time < w.from {
			if cc.idle() {
				cc.buf = cc.buf[:0]
			} else {
				cc.buf = append(cc.buf, e)
				if len(cc.buf) > bufferEvents {
					cc.buf = compact(cc.buf)
				}
			}
			return
		}
		if !cc.in && (e.Time <= w.to || !wasIdle) {
			// The client enters the window, or was in the middle of
			// something all through it (a hold while it was paused): what
			// it began before is drawn too.
			cc.in = true
			c.put(w, cc.buf...)
			cc.buf = cc.buf[:0]
		}
		if e.Time <= w.to {
			c.put(w, e)
			return
		}
		if cc.in && !wasIdle && cc.drained < drainEvents {
			// Past the window's end: finish what the client was in.
			cc.drained++
			c.put(w, e)
			if cc.idle() {
				cc.in, cc.drained = false, 0
				cc.next++
			}
			return
		}
		cc.in, cc.drained = false, 0
		cc.next++
	}
}

func (c *collector) put(w *window, es ...history.Event) {
	if w.full {
		return
	}
	w.events = append(w.events, es...)
	if len(w.events) >= MaxWindowEvents {
		w.full = true
	}
}

// compact drops from a client's buffer the completed reads and writes of
// the resource, which no hold or acquire depends on.
func compact(buf []history.Event) []history.Event {
	out := buf[:0]
	for i := 0; i < len(buf); i++ {
		e := buf[i]
		if e.Kind == history.Invoke && (e.F == history.Read || e.F == history.Write) && i+1 < len(buf) && buf[i+1].Kind != history.Invoke {
			i++
			continue
		}
		out = append(out, e)
	}
	return out
}

// finish builds each window's holds and acquires from its events. A window
// cut short by MaxWindowEvents ends at its last event; holds still open at
// a window's end are cut there (a lost event), so that none reaches into
// the next.
func (c *collector) finish(origin int64) {
	run := history.Event{Time: origin, Kind: history.RunStart, Client: history.NoClient}
	if len(c.runs) > 0 {
		run = c.runs[0]
	}
	for _, w := range c.windows {
		es := append([]history.Event{run}, w.events...)
		if w.full {
			last := w.from
			for _, e := range w.events {
				last = max(last, e.Time)
			}
			w.to = min(w.to, last)
			w.ToMs = float64(w.to-origin) / 1e6
		}
		w.holds = checker.Holds(es)
		w.attempts = checker.Attempts(es)
		// For porcupine, a hold the window leaves open is cut at its end,
		// so that it does not reach into the next window.
		if !slices.ContainsFunc(es, func(e history.Event) bool { return e.Kind == history.RunEnd }) {
			for _, h := range w.holds {
				if h.End == checker.EndOpen {
					es = append(es, history.Event{Time: max(w.to, origin+int64(h.EndMs*1e6)), Kind: history.Lost, Client: h.Client, Key: h.Key,
						Message: "cut: the end of the window drawn"})
				}
			}
		}
		w.events = es
		w.Caption = fmt.Sprintf("%s, t=%s to t=%s", strings.Join(w.About, "; "), checker.Seconds(w.FromMs), checker.Seconds(w.ToMs))
		if w.full {
			w.Caption += fmt.Sprintf(" (cut short at %d events)", MaxWindowEvents)
		}
	}
}
