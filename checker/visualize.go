package checker

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockchaos/lockchaos/history"
)

// Visualize writes porcupine's own visualization of the mutex history of
// events to w (one partition per key; for a violation, the longest prefix
// porcupine could linearize and the operation it could not). res is Check's
// result of the same events: its fault windows and overlaps become
// annotations, on the row of each client a fault acted on and on rows of
// their own. It is the check that Check makes — same model, operations and
// time limit (timeout 0: DefaultTimeout) — so that the picture never
// disagrees with the verdict's mutex answer.
func Visualize(w io.Writer, events []history.Event, res Result, timeout time.Duration) error {
	sorted := sortByTime(events)
	tl := newTimeline(sorted)
	tr := replay(sorted)
	var windows [][2]int64
	if len(tr.ops) > MaxVisualizeOps {
		sorted, windows = aroundViolations(sorted, tr, res, tl)
		tr = replay(sorted)
	}
	return visualize(w, tr, tl, windows, res, timeout,
		fmt.Sprintf("the history has more than %d operations: only the windows around its first violations are shown", MaxVisualizeOps))
}

// Window is a stretch of a long history that a report draws in detail:
// FromMs to ToMs since the run started, and its events (those of every
// client in it, with what each client began before it and finished after
// it, and the run-start).
type Window struct {
	FromMs, ToMs float64
	Events       []history.Event
}

// VisualizeWindows is Visualize of the windows a report draws of a history
// too long to draw whole: windows are most important first, and are drawn
// in that order while their operations fit in maxOps (the first always);
// each is an annotated row ("shown"). It returns how many were drawn.
// Porcupine checks only what is drawn: a window around a violation shows
// it, since the window holds both holds of its overlap.
func VisualizeWindows(w io.Writer, windows []Window, maxOps int, res Result, timeout time.Duration) (int, error) {
	var events []history.Event
	var bounds [][2]int64
	ops := 0
	for i, win := range windows {
		sorted := sortByTime(win.Events)
		n := len(replay(sorted).ops)
		if i > 0 && ops+n > maxOps {
			break
		}
		ops += n
		tl := newTimeline(sorted)
		bounds = append(bounds, [2]int64{tl.origin + int64(win.FromMs*1e6), tl.origin + int64(win.ToMs*1e6)})
		for _, e := range win.Events {
			if e.Kind != history.RunStart || len(events) == 0 {
				events = append(events, e)
			}
		}
	}
	sorted := sortByTime(events)
	tl := newTimeline(sorted)
	err := visualize(w, replay(sorted), tl, bounds, res, timeout,
		"the history is too long to draw whole: only windows around its first violations and faults are shown")
	return len(bounds), err
}

// visualize checks tr's operations with porcupine and writes its
// visualization, annotated with res's faults and overlaps (those in the
// windows shown, when windows are given) and the windows (why says why).
func visualize(w io.Writer, tr *trace, tl timeline, windows [][2]int64, res Result, timeout time.Duration, why string) error {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	_, info := porcupine.CheckOperationsVerbose(MutexModel(), tr.ops, timeout)
	ns := func(ms float64) int64 { return tl.origin + int64(ms*1e6) }
	var notes []porcupine.Annotation
	for _, w := range windows {
		notes = append(notes, porcupine.Annotation{
			Tag: "shown", Start: w[0], End: w[1], Description: "window shown",
			Details:         fmt.Sprintf("%s (t=%s to t=%s here)", why, Seconds(tl.ms(w[0])), Seconds(tl.ms(w[1]))),
			BackgroundColor: "#dee2e6",
		})
	}
	for _, f := range res.Faults {
		start, end := ns(f.StartMs), tl.end
		if f.EndMs != nil {
			end = ns(*f.EndMs)
		}
		if windows != nil && !slices.ContainsFunc(windows, func(w [2]int64) bool { return start < w[1] && end > w[0] }) {
			continue
		}
		details := fmt.Sprintf("fault %d: %s on %s (%s)", f.ID, f.Name, f.Target, Pairs(f.Params))
		if f.Effect != "" {
			details += ": " + f.Effect
		}
		// The label, not the bare nemesis name, is what the rows show: a
		// fault on a node names the node, one on clients the clients.
		label := f.Name + " " + f.Where()
		notes = append(notes, porcupine.Annotation{
			Tag: "faults", Start: start, End: end, Description: label, Details: details, BackgroundColor: "#f9e3a1",
		})
		for _, c := range f.Clients {
			notes = append(notes, porcupine.Annotation{
				ClientId: c, Start: start, End: end, Description: label, Details: details, BackgroundColor: "#f9e3a1",
			})
		}
	}
	for _, o := range res.Mutex.Overlaps {
		if windows != nil && !slices.ContainsFunc(windows, func(w [2]int64) bool { return ns(o.StartMs) < w[1] && ns(o.EndMs) >= w[0] }) {
			continue
		}
		notes = append(notes, porcupine.Annotation{
			Tag:             "overlaps",
			Start:           ns(o.StartMs),
			End:             ns(o.EndMs),
			Description:     fmt.Sprintf("clients %d+%d", o.Clients[0], o.Clients[1]),
			Details:         fmt.Sprintf("clients %d and %d both held %s for %s", o.Clients[0], o.Clients[1], o.Key, Millis(o.EndMs-o.StartMs)),
			BackgroundColor: "#f4a3a3",
		})
	}
	info.AddAnnotations(notes)
	return porcupine.Visualize(MutexModel(), info, w)
}

// MaxVisualizeOps bounds the operations Visualize draws: a longer history
// (a run of minutes) is drawn only in windows around its first violations
// (the start of their earlier holds to their end, a second either side), or,
// with none, its first MaxVisualizeOps operations, so that the file stays a
// few megabytes. The windows are annotated rows ("shown").
const MaxVisualizeOps = 20000

// aroundViolations returns the events of the windows Visualize draws of a
// long history, and the windows. A hold open at a window's end is cut there
// (a lost event), so that it does not reach into the next window.
func aroundViolations(sorted []history.Event, tr *trace, res Result, tl timeline) ([]history.Event, [][2]int64) {
	ns := func(ms float64) int64 { return tl.origin + int64(ms*1e6) }
	const margin = int64(1e9)
	var windows [][2]int64
	for _, in := range res.Mutex.Incidents {
		from := ns(in.StartMs)
		for _, o := range res.Mutex.Overlaps {
			if o.Key == in.Key && o.StartMs >= in.StartMs && o.StartMs <= in.EndMs {
				from = min(from, ns(o.Holds[0].StartMs), ns(o.Holds[1].StartMs))
			}
		}
		windows = append(windows, [2]int64{from - margin, ns(in.EndMs) + margin})
	}
	calls := make([]int64, len(tr.ops))
	for i, op := range tr.ops {
		calls[i] = op.Call
	}
	slices.Sort(calls)
	if len(windows) == 0 {
		windows = [][2]int64{{tl.origin - 1, calls[min(len(calls), MaxVisualizeOps)-1]}}
	}
	slices.SortFunc(windows, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var merged [][2]int64
	budget := 0
	for _, w := range windows {
		if n := len(merged); n > 0 && w[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], w[1])
			continue
		}
		lo, _ := slices.BinarySearch(calls, w[0])
		hi, _ := slices.BinarySearch(calls, w[1])
		if len(merged) > 0 && budget+hi-lo > MaxVisualizeOps {
			break
		}
		budget += hi - lo
		merged = append(merged, w)
	}
	in := func(t int64) bool {
		return slices.ContainsFunc(merged, func(w [2]int64) bool { return t >= w[0] && t <= w[1] })
	}
	var out []history.Event
	for _, e := range sorted {
		switch {
		case e.Kind == history.RunStart || e.Kind == history.FaultStart || e.Kind == history.FaultEnd:
			out = append(out, e)
		case e.Kind == history.RunEnd || e.Kind == history.Probe:
		case e.Client >= 0 && in(e.Time):
			out = append(out, e)
		}
	}
	for _, w := range merged {
		for _, h := range tr.holds {
			if h.start <= w[1] && h.end > w[1] && in(h.start) {
				out = append(out, history.Event{Time: w[1], Kind: history.Lost, Client: h.client, Key: h.key, Message: "cut: the end of the window shown"})
			}
		}
	}
	return sortByTime(out), merged
}

// Pairs writes parameters in key order: "duration=1s, key=lock:0".
func Pairs(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+p[k])
	}
	return strings.Join(parts, ", ")
}

// Hold is one critical section of a lock key.
type Hold struct {
	Key string
	HoldSpan
}

// Holds are every critical section of the history (outermost acquire's
// return to its hold's end), in ms since the run started, in order of
// start: what a report draws.
func Holds(events []history.Event) []Hold {
	sorted := sortByTime(events)
	tl := newTimeline(sorted)
	tr := replay(sorted)
	out := make([]Hold, len(tr.holds))
	for i := range tr.holds {
		out[i] = Hold{Key: tr.holds[i].key, HoldSpan: span(&tr.holds[i], tl)}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartMs < out[j].StartMs })
	return out
}
