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
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

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
	// Holds are every client's critical sections, as the checker reads
	// them.
	Holds []checker.Hold
	// Clients are the client indexes that appear in the history, sorted.
	Clients []int
	// Keys are the lock keys that were held, sorted.
	Keys []string
	// Truncated: the history's last line was cut off.
	Truncated bool

	events []history.Event
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
	for _, e := range events {
		if e.Kind == history.RunStart && e.Run != nil {
			r.Info = *e.Run
			break
		}
	}
	r.Holds = checker.Holds(events)
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

// writePorcupine writes porcupine's visualization of the mutex history,
// annotated with the result's faults and overlaps (checker.Visualize).
func (r *Run) writePorcupine(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write porcupine visualization: %w", err)
	}
	if err := checker.Visualize(f, r.events, r.Result, 0); err != nil {
		f.Close()
		return fmt.Errorf("porcupine visualization: %w", err)
	}
	return f.Close()
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
	d := runData{Run: r, Why: checker.Explain(res, float64(cmp.Or(r.Info.LeaseMs, r.Info.TTLms))), Generated: time.Now().Format(time.RFC3339)}
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
			if slices.Contains(o.Faults, f.ID) {
				from = max(0, min(from, f.StartMs-100))
			}
		}
		d.Zoom = r.timeline(from, to, "zoom")
		d.ZoomCaption = fmt.Sprintf("the first overlap, t=%s to t=%s", checker.Seconds(from), checker.Seconds(to))
	}
	d.Overlaps = res.Mutex.Overlaps
	if len(d.Overlaps) > MaxOverlapRows {
		d.Overlaps = d.Overlaps[:MaxOverlapRows]
	}
	d.MoreOverlaps = res.Mutex.OverlapCount - len(d.Overlaps)
	for _, f := range res.Faults {
		row := faultRow{FaultWindow: f, Params: checker.Pairs(f.Params), End: "never healed"}
		if f.EndMs != nil {
			row.End = checker.Seconds(*f.EndMs)
			row.Duration = checker.Millis(*f.EndMs - f.StartMs)
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
		d.Config = append(d.Config, [2]string{"workload ran", checker.Millis(res.WorkloadMs)})
	}
	if len(in.Options) > 0 {
		d.Config = append(d.Config, [2]string{"options", checker.Pairs(in.Options)})
	}
	return d
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
