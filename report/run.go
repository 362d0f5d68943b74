// Package report renders what lockchaos runs leave behind as HTML that
// anyone can reread offline: one page per run (the verdict and why, a
// timeline of every client's holds with fault windows shaded and overlaps
// highlighted, porcupine's linearizability visualization, the resource
// oracle's findings, acquire statistics) and an index per matrix (the lock ×
// fault grid coloured by verdict and by match with the expectation, and the
// catalogue). Every file is self-contained: inline CSS and SVG, no script or
// font fetched from anywhere, so a report can be attached to a CI run.
//
// Everything a page says is derived from result.json and history.jsonl.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// File names a run's report adds to its folder.
const (
	RunFile       = "report.html"
	PorcupineFile = "porcupine.html"
)

// Run is what a run page shows, read from one run's folder.
type Run struct {
	Dir    string
	Result checker.Result
	// Info is the run's configuration, from its run-start event (zero when
	// the history has none).
	Info history.RunInfo
	// Holds are every client's critical sections, from the operations the
	// checker gave porcupine.
	Holds []Hold
	// Clients are the client indexes that appear in the history, sorted.
	Clients []int
	// Keys are the lock keys that were held, sorted.
	Keys []string
	// Truncated: the history's last line was cut off.
	Truncated bool

	events []history.Event
	origin int64 // CLOCK_MONOTONIC ns of t=0, as the checker counts
}

// Hold is one critical section, in ms since the run started.
type Hold struct {
	Client  int
	Key     string
	StartMs float64
	EndMs   float64
	// End is how it ended, as checker.HoldSpan.End says.
	End string
}

// Load reads the run in dir: result.json and history.jsonl.
func Load(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no result.json: run `lockchaos check %s` first", dir, dir)
		}
		return nil, fmt.Errorf("read result: %w", err)
	}
	r := &Run{Dir: dir}
	if err := json.Unmarshal(b, &r.Result); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, "result.json"), err)
	}
	events, truncated, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	r.events, r.Truncated = events, truncated
	r.origin = origin(events)
	for _, e := range events {
		if e.Kind == history.RunStart && e.Run != nil {
			r.Info = *e.Run
			break
		}
	}
	r.Holds = holdsOf(checker.MutexOperations(events), r.origin)
	clients, keys := map[int]bool{}, map[string]bool{}
	for c := 0; c < r.Info.Clients; c++ {
		clients[c] = true
	}
	for _, e := range events {
		if e.Client >= 0 && (e.Kind == history.Invoke || e.Kind == history.WorkerExit) {
			clients[e.Client] = true
		}
	}
	for _, h := range r.Holds {
		clients[h.Client] = true
		keys[h.Key] = true
	}
	for c := range clients {
		r.Clients = append(r.Clients, c)
	}
	sort.Ints(r.Clients)
	for k := range keys {
		r.Keys = append(r.Keys, k)
	}
	sort.Strings(r.Keys)
	return r, nil
}

// origin is the time the checker counts milliseconds from: the run-start
// event, or the earliest event of a history without one.
func origin(events []history.Event) int64 {
	var first int64
	for i, e := range events {
		if e.Kind == history.RunStart {
			return e.Time
		}
		if i == 0 || e.Time < first {
			first = e.Time
		}
	}
	return first
}

func (r *Run) ms(t int64) float64 { return float64(t-r.origin) / 1e6 }

// holdsOf rebuilds the critical sections from the checker's mutex
// operations: a hold starts when an outermost acquire (depth 0) returns and
// ends when the outermost release (depth 1) is invoked or the hold is
// dropped (lost, exit, end of history).
func holdsOf(ops []porcupine.Operation, origin int64) []Hold {
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	type ck struct {
		client int
		key    string
	}
	open := map[ck]int{} // index in out
	var out []Hold
	ms := func(t int64) float64 { return float64(t-origin) / 1e6 }
	for _, op := range sorted {
		in, ok := op.Input.(checker.MutexInput)
		if !ok {
			continue
		}
		k := ck{in.Client, in.Key}
		switch in.Op {
		case checker.OpAcquire:
			if in.Depth == 0 {
				out = append(out, Hold{Client: in.Client, Key: in.Key, StartMs: ms(op.Return), EndMs: -1, End: "open"})
				open[k] = len(out) - 1
			}
		case checker.OpRelease, checker.OpDrop:
			i, ok := open[k]
			if !ok || (in.Op == checker.OpRelease && in.Depth != 1) {
				continue
			}
			out[i].EndMs = ms(op.Call)
			out[i].End = holdEnd(in.Op, op.Output)
			delete(open, k)
		}
	}
	for _, i := range open {
		if out[i].EndMs < 0 {
			out[i].EndMs = out[i].StartMs
		}
	}
	return out
}

// holdEnd names how a hold ended, in checker.HoldSpan's words.
func holdEnd(op string, output any) string {
	s, _ := output.(string)
	if op == checker.OpDrop {
		return s // lost, exit, open
	}
	switch {
	case s == "ok":
		return "release"
	case strings.Contains(s, history.ErrNotHeld):
		return "release-not-held"
	}
	return "release-unknown"
}

// WriteRun renders dir/report.html and dir/porcupine.html from the run in
// dir. It returns the path of the page.
func WriteRun(dir string) (string, error) {
	r, err := Load(dir)
	if err != nil {
		return "", err
	}
	porcupineErr := r.writePorcupine(filepath.Join(dir, PorcupineFile))
	page := filepath.Join(dir, RunFile)
	f, err := os.Create(page)
	if err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	data := r.pageData()
	if porcupineErr != nil {
		data.PorcupineError = porcupineErr.Error()
	}
	if err := runPage.Execute(f, data); err != nil {
		f.Close()
		return "", fmt.Errorf("render %s: %w", page, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return page, nil
}

// writePorcupine writes porcupine's own visualization of the mutex history,
// with every fault window as an annotation: on the row of each client it
// acted on, and on a row of its own.
func (r *Run) writePorcupine(path string) error {
	model := checker.MutexModel()
	_, info := checker.Linearization(r.events, 0)
	var notes []porcupine.Annotation
	starts := map[int]history.Event{}
	for _, e := range r.events {
		if e.Fault == nil {
			continue
		}
		switch e.Kind {
		case history.FaultStart:
			starts[e.Fault.ID] = e
		case history.FaultEnd:
			if s, ok := starts[e.Fault.ID]; ok {
				notes = append(notes, faultNotes(*s.Fault, s.Time, e.Time)...)
				delete(starts, e.Fault.ID)
			}
		}
	}
	for _, s := range starts { // never healed within the history
		notes = append(notes, faultNotes(*s.Fault, s.Time, s.Time)...)
	}
	for _, o := range r.Result.Mutex.Overlaps {
		notes = append(notes, porcupine.Annotation{
			Tag:             "overlaps",
			Start:           r.origin + int64(o.StartMs*1e6),
			End:             r.origin + int64(o.EndMs*1e6),
			Description:     fmt.Sprintf("clients %d+%d", o.Clients[0], o.Clients[1]),
			Details:         fmt.Sprintf("clients %d and %d both held %s for %s", o.Clients[0], o.Clients[1], o.Key, millis(o.EndMs-o.StartMs)),
			BackgroundColor: "#f4a3a3",
		})
	}
	info.AddAnnotations(notes)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write porcupine visualization: %w", err)
	}
	if err := porcupine.Visualize(model, info, f); err != nil {
		f.Close()
		return fmt.Errorf("porcupine visualization: %w", err)
	}
	return f.Close()
}

func faultNotes(f history.Fault, start, end int64) []porcupine.Annotation {
	desc := f.Name
	details := fmt.Sprintf("fault %d: %s on %s %s", f.ID, f.Name, f.Target, params(f.Params))
	notes := []porcupine.Annotation{{
		Tag: "faults", Start: start, End: end, Description: desc, Details: details, BackgroundColor: "#f9e3a1",
	}}
	for _, c := range f.Clients {
		notes = append(notes, porcupine.Annotation{
			ClientId: c, Start: start, End: end, Description: f.Name, Details: details, BackgroundColor: "#f9e3a1",
		})
	}
	return notes
}

func params(p map[string]string) string {
	if len(p) == 0 {
		return ""
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+p[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// runData is what the run page template sees.
type runData struct {
	*Run
	Title          string
	Why            string
	Timeline       template.HTML
	Zoom           template.HTML
	ZoomCaption    string
	Overlaps       []checker.Overlap
	MoreOverlaps   int
	Faults         []faultRow
	Config         [][2]string
	AcquireRate    string
	PorcupineError string
	Generated      string
}

type faultRow struct {
	checker.FaultWindow
	Params   string
	Duration string
	End      string
}

// MaxOverlapRows bounds the overlaps listed in the page's table.
const MaxOverlapRows = 20

func (r *Run) pageData() runData {
	res := r.Result
	d := runData{Run: r, Why: Explain(res, r.Info), Generated: time.Now().Format(time.RFC3339)}
	d.Title = fmt.Sprintf("%s — %s + %s, seed %d", res.Verdict, orNone(res.Lock), nemesisList(res.Nemesis), res.Seed)
	span := max(res.DurationMs, 1)
	for _, h := range r.Holds {
		span = max(span, h.EndMs)
	}
	d.Timeline = r.timeline(0, span, "timeline")
	if len(res.Mutex.Overlaps) > 0 {
		o := res.Mutex.Overlaps[0]
		from := max(0, o.Holds[0].StartMs-250)
		to := min(span, max(o.EndMs, o.Holds[0].EndMs, o.Holds[1].EndMs)+250)
		for _, f := range res.Faults {
			if containsInt(o.Faults, f.ID) {
				from = max(0, min(from, f.StartMs-100))
			}
		}
		d.Zoom = r.timeline(from, to, "zoom")
		d.ZoomCaption = fmt.Sprintf("the first overlap, t=%s to t=%s", seconds(from), seconds(to))
	}
	d.Overlaps = res.Mutex.Overlaps
	if len(d.Overlaps) > MaxOverlapRows {
		d.Overlaps = d.Overlaps[:MaxOverlapRows]
	}
	d.MoreOverlaps = res.Mutex.OverlapCount - len(d.Overlaps)
	for _, f := range res.Faults {
		row := faultRow{FaultWindow: f, Params: strings.Trim(params(f.Params), "()"), End: "never healed"}
		if f.EndMs != nil {
			row.End = seconds(*f.EndMs)
			row.Duration = millis(*f.EndMs - f.StartMs)
		}
		d.Faults = append(d.Faults, row)
	}
	if res.Acquire.Attempted > 0 {
		d.AcquireRate = fmt.Sprintf("%.1f%%", 100*float64(res.Acquire.OK)/float64(res.Acquire.Attempted))
	}
	in := r.Info
	d.Config = [][2]string{
		{"lock", orNone(res.Lock)}, {"nemeses", nemesisList(res.Nemesis)}, {"seed", fmt.Sprint(res.Seed)},
		{"clients", fmt.Sprint(in.Clients)}, {"keys", fmt.Sprint(in.Keys)}, {"lock nodes", fmt.Sprint(in.Nodes)},
		{"TTL", fmt.Sprintf("%d ms", in.TTLms)}, {"hold", fmt.Sprintf("%d ms", in.Holdms)},
		{"duration", fmt.Sprintf("%d ms", in.Durationms)}, {"backend", in.Backend},
	}
	if in.LeaseMs != 0 && in.LeaseMs != in.TTLms {
		// A lock option set another lease: the run used that one.
		d.Config = append(d.Config, [2]string{"lease used", fmt.Sprintf("%d ms (set by a lock option, not --ttl)", in.LeaseMs)})
	}
	if res.WorkloadMs > 0 {
		d.Config = append(d.Config, [2]string{"workload ran", millis(res.WorkloadMs)})
	}
	if len(in.Options) > 0 {
		d.Config = append(d.Config, [2]string{"options", strings.Trim(params(in.Options), "()")})
	}
	return d
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func nemesisList(ns []string) string {
	if len(ns) == 0 {
		return "no fault"
	}
	return strings.Join(ns, ", ")
}

func seconds(ms float64) string { return fmt.Sprintf("%.2f s", ms/1e3) }

// millis says how long ms lasted: "0.8 ms", "312 ms", "1.2 s".
func millis(ms float64) string {
	switch {
	case ms >= 1000:
		s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", ms/1e3), "0"), ".")
		return s + " s"
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
