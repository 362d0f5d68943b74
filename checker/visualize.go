package checker

import (
	"fmt"
	"io"
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
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	sorted := sortByTime(events)
	tl := newTimeline(sorted)
	_, info := porcupine.CheckOperationsVerbose(MutexModel(), replay(sorted).ops, timeout)
	ns := func(ms float64) int64 { return tl.origin + int64(ms*1e6) }
	var notes []porcupine.Annotation
	for _, f := range res.Faults {
		start, end := ns(f.StartMs), tl.end
		if f.EndMs != nil {
			end = ns(*f.EndMs)
		}
		details := fmt.Sprintf("fault %d: %s on %s (%s)", f.ID, f.Name, f.Target, Pairs(f.Params))
		notes = append(notes, porcupine.Annotation{
			Tag: "faults", Start: start, End: end, Description: f.Name, Details: details, BackgroundColor: "#f9e3a1",
		})
		for _, c := range f.Clients {
			notes = append(notes, porcupine.Annotation{
				ClientId: c, Start: start, End: end, Description: f.Name, Details: details, BackgroundColor: "#f9e3a1",
			})
		}
	}
	for _, o := range res.Mutex.Overlaps {
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
