// Package report renders what lockchaos runs leave behind as HTML that
// anyone can reread offline: one page per run (the verdict and why, a
// timeline of every client's holds with fault windows shaded and overlaps
// highlighted, porcupine's linearizability visualization, the resource
// oracle's findings, acquire statistics) and an index per matrix (the lock ×
// fault grid coloured by verdict and by match with the expectation, and the
// catalogue). Every file is self-contained: inline CSS and SVG, no script or
// font fetched from anywhere, so a report can be attached to a CI run.
//
// Everything a page says is derived from result.json (with the run's
// settings, its config.json, inside) and history.jsonl.
package report

import (
	"bytes"
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
	"github.com/lockchaos/lockchaos/checker/explain"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/lockargs"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/settings"
)

// Run is what a run page shows, read from one run's folder.
type Run struct {
	Dir    string
	Result checker.Result
	// Info is what the checker read of the run's settings, from its
	// run-start event (zero when the history has none).
	Info history.RunInfo
	// Settings are the run's whole settings (its config.json, as
	// result.json's reproduce.config holds it); nil for a history that was
	// only checked.
	Settings *settings.Run
	// Holds are the critical sections drawn, as the checker reads them:
	// every client's, or, for a long run (Bounded), those of the windows
	// drawn in detail.
	Holds []checker.Hold
	// Clients are the client indexes that appear in the history, sorted.
	Clients []int
	// Keys are the lock keys that were held, sorted.
	Keys []string
	// Truncated: the history's last line was cut off.
	Truncated bool
	// Events counts the history's events.
	Events int
	// Bounded: the history is too long to draw whole (more than
	// MaxDetailEvents events or MaxDetailOps operations). The page draws
	// windows of it in detail and summary plots of the whole run.
	Bounded bool

	// events are every event of a history drawn whole (nil when Bounded).
	events []history.Event
	// attempts are every acquire and how it ended; nodeMarks what the
	// faults did to each lock node (both as the checker reads them).
	attempts  []checker.Attempt
	nodeMarks []nodeMark
	// span is the run's length in ms.
	span float64
	// Of a long run: the windows drawn in detail, the incidents and faults
	// that none of them shows, and the binned series of the whole run.
	windows          []*window
	omittedIncidents int
	omittedFaults    int
	series           *checker.Series
}

// MaxDetailOps bounds the operations (checker.MutexResult.Ops) of a history
// drawn whole; see MaxDetailEvents.
const MaxDetailOps = 6000

// MaxPorcupineOps bounds the operations of a long run's porcupine.html:
// its windows are drawn while they fit (about 500 bytes each).
const MaxPorcupineOps = 4000

// Load reads the run in dir: result.json and history.jsonl. It reads the
// history as a stream: a history of up to MaxDetailEvents events is kept
// whole; a longer one is read a second time for its windows and its
// series, and never held in memory.
func Load(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no result.json: run `%s check %s` first", dir, rundir.Program(), shellwords.Quote(dir))
		}
		return nil, fmt.Errorf("read result: %w", err)
	}
	r := &Run{Dir: dir}
	if err := json.Unmarshal(b, &r.Result); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, "result.json"), err)
	}
	if rp := r.Result.Reproduce; rp != nil && len(rp.Config) > 0 {
		var cfg settings.Run
		if err := json.Unmarshal(rp.Config, &cfg); err != nil {
			return nil, fmt.Errorf("read %s: reproduce.config: %w", filepath.Join(dir, "result.json"), err)
		}
		r.Settings = &cfg
	}
	path := filepath.Join(dir, "history.jsonl")
	clients, keys := map[int]bool{}, map[string]bool{}
	var (
		events        []history.Event
		first, last   int64
		runStart      *history.Event
		keep, started = true, false
	)
	truncated, err := history.ScanFile(path, func(e history.Event) error {
		r.Events++
		if keep {
			events = append(events, e)
			if len(events) > MaxDetailEvents {
				keep, events = false, nil
			}
		}
		if !started || e.Time < first {
			first = e.Time
		}
		if !started || e.Time > last {
			last = e.Time
		}
		started = true
		if e.Kind == history.RunStart && (runStart == nil || e.Time < runStart.Time) {
			ev := e
			runStart = &ev
		}
		if e.Client >= 0 && (e.Kind == history.Invoke || e.Kind == history.WorkerExit) {
			clients[e.Client] = true
		}
		if e.Client >= 0 && e.Kind == history.OK && e.F == history.Acquire && e.Key != "" {
			keys[e.Key] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	r.Truncated = truncated
	origin := first
	if runStart != nil {
		origin = runStart.Time
		if runStart.Run != nil {
			r.Info = *runStart.Run
		}
	}
	r.nodeMarks = nodeMarks(r.Result)
	r.span = max(r.Result.DurationMs, 1)
	r.Bounded = !keep || r.Result.Mutex.Ops > MaxDetailOps
	if r.Bounded && started {
		r.span = max(r.span, float64(last-origin)/1e6)
	}
	if !r.Bounded {
		r.events = events
		r.Holds = checker.Holds(events)
		r.attempts = checker.Attempts(events)
	} else {
		events = nil
		r.windows, r.omittedIncidents, r.omittedFaults = pickWindows(r.Result, r.span)
		coll := newCollector(r.windows, origin)
		r.series = checker.NewSeries(origin, summaryWidth(r.span), r.span)
		if _, err := history.ScanFile(path, func(e history.Event) error {
			r.series.Add(e)
			coll.add(e)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("read history: %w", err)
		}
		r.series.Finish()
		coll.finish(origin)
		for _, w := range r.windows {
			r.Holds = append(r.Holds, w.holds...)
		}
	}
	for c := 0; c < r.Info.Clients; c++ {
		clients[c] = true
	}
	for _, h := range r.Holds {
		clients[h.Client] = true
		keys[h.Key] = true
		r.span = max(r.span, h.EndMs)
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
	porcupineErr := r.writePorcupine(filepath.Join(dir, rundir.PorcupineFile))
	page := filepath.Join(dir, rundir.ReportFile)
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
// annotated with the result's faults and overlaps (checker.Visualize): of
// a long run, of its windows, the incidents' first (VisualizeWindows).
func (r *Run) writePorcupine(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write porcupine visualization: %w", err)
	}
	var buf bytes.Buffer
	drawn := 0
	if r.Bounded {
		ws := slices.Clone(r.windows)
		slices.SortStableFunc(ws, func(a, b *window) int { return cmp.Compare(min(len(b.incidents), 1), min(len(a.incidents), 1)) })
		var vws []checker.Window
		for _, w := range ws {
			vws = append(vws, checker.Window{FromMs: w.FromMs, ToMs: w.ToMs, Events: w.events})
		}
		drawn, err = checker.VisualizeWindows(&buf, vws, MaxPorcupineOps, r.Result, 0)
	} else {
		err = checker.Visualize(&buf, r.events, r.Result, 0)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("porcupine visualization: %w", err)
	}
	page := buf.Bytes()
	if i := bytes.Index(page, []byte("<body>")); i >= 0 {
		i += len("<body>")
		page = slices.Concat(page[:i], []byte(r.porcupineBanner(drawn)), page[i:])
	}
	if _, err := f.Write(page); err != nil {
		f.Close()
		return fmt.Errorf("write porcupine visualization: %w", err)
	}
	return f.Close()
}

// porcupineBanner heads porcupine's page: the way back to the run's report
// and the run's faults by label, so that its rows can be read on screen.
func (r *Run) porcupineBanner(drawn int) string {
	var b strings.Builder
	b.WriteString(`<nav id="lockchaos-banner" style="font:14px system-ui,sans-serif;padding:8px 12px;background:#f1f3f5;border-bottom:1px solid #dee2e6">`)
	fmt.Fprintf(&b, `<a id="back-to-report" href="%s">← back to the run's report</a> · <b>%s</b> %s + %s`, rundir.ReportFile,
		esc(string(r.Result.Verdict)), esc(orNone(r.Result.Lock)), esc(nemesisList(r.Result.Nemesis)))
	switch {
	case r.Bounded:
		fmt.Fprintf(&b, ` · <span id="bounded">%d events, %d operations: too many to draw whole; only %d of the %d windows the report draws in detail %s drawn here (rows "shown"), those of incidents first. history.jsonl holds every event.</span>`,
			r.Events, r.Result.Mutex.Ops, drawn, len(r.windows), plural(drawn, "is", "are"))
	case r.Result.Mutex.Ops > checker.MaxVisualizeOps:
		fmt.Fprintf(&b, ` · <span id="bounded">%d operations: only the windows around the first violations are drawn (rows "shown")</span>`, r.Result.Mutex.Ops)
	}
	if len(r.Result.Faults) > 0 {
		b.WriteString(`<ul id="fault-labels" style="margin:4px 0 0;padding-left:18px">`)
		shown := 0
		for _, f := range r.Result.Faults {
			if shown >= MaxFaultRows {
				break
			}
			if r.Bounded && !r.inWindows(f) {
				continue
			}
			shown++
			fmt.Fprintf(&b, `<li><span style="display:inline-block;width:12px;height:10px;background:%s"></span> fault %d: %s %s, t=%s to %s</li>`,
				actionColor(f.Action), f.ID, esc(f.Name), esc(f.Where()), checker.Seconds(f.StartMs), esc(endText(f.EndMs)))
		}
		if n := len(r.Result.Faults) - shown; n > 0 {
			fmt.Fprintf(&b, `<li>… and %d more faults (result.json lists every one)</li>`, n)
		}
		b.WriteString(`</ul>`)
	}
	b.WriteString(`</nav>`)
	return b.String()
}

// runData is what the run page template sees.
type runData struct {
	*Run
	Title          string
	Why            string
	Witness        []string // explain.Witness: the first overlap's story
	Timeline       template.HTML
	Zooms          []zoomPanel
	RatePlot       template.HTML
	LatencyPlot    template.HTML
	Actions        []actionSwatch
	Incidents      []incidentRow
	MoreIncidents  int
	Overlaps       []overlapRow
	MoreOverlaps   int
	Reproduce      string
	NextSteps      []nextStep
	LeaseText      string
	Leaseless      bool // the lock has no lease: no lease ends are drawn
	Faults         []faultRow
	Config         [][2]string
	AcquireRate    string
	PorcupineError string
	Generated      string
	// MoreFaults counts the faults the table leaves out (MaxFaultRows).
	MoreFaults int
	// Of a long run (Bounded): its windows drawn in detail, and what the
	// page leaves out, in words.
	Windows []windowPanel
	Omitted []string
}

// zoomPanel is a timeline zoomed on one incident; the first is shown at
// once, the others when a row of the overlap tables links to them.
// nextStep is one entry of the page's "next steps" box: what to do, and the
// command that does it.
type nextStep struct {
	ID, Text, Cmd string
}

// fencedLock is the fenced lock of the store the run's lock kept its state
// in (the run's settings resolve the lock, an adapter's manifest naming
// its store; else the lock's name), unless that is the lock itself: ""
// when there is none.
func (r *Run) fencedLock(lock string) string {
	spec, err := locks.Lookup(lock)
	if r.Settings != nil {
		if s, serr := r.Settings.LockSpec(); serr == nil {
			spec, err = s, nil
		}
	}
	if err != nil {
		return ""
	}
	if st, err := cluster.LookupStore(spec.Store); err == nil && st.Fenced != lock {
		return st.Fenced
	}
	return ""
}

// nextSteps says what to do after this run: shrink a violation, run it
// again fault for fault, fence a resource that lost updates, run more seeds
// of a run that found nothing.
func (r *Run) nextSteps(reproduce string) []nextStep {
	res := r.Result
	dir := filepath.Clean(r.Dir)
	nemeses := strings.Join(res.Nemesis, ",")
	var out []nextStep
	if res.Verdict == checker.Violation {
		out = append(out, nextStep{"next-shrink", "Shrink it: the smallest run that still breaks the lock (fewer clients, faults and seconds), with its scenario file and witness.",
			rundir.Program() + " shrink " + shellwords.Quote(dir)})
	}
	if reproduce != "" {
		out = append(out, nextStep{"next-replay", "Run it again, fault for fault (the same settings and the fault schedule this run executed).", reproduce})
	}
	rs := res.Resource
	switch {
	case rs.LostUpdates > 0 && rs.StaleRejected == 0 && rs.StaleAccepted == 0:
		step := nextStep{"next-fence", fmt.Sprintf("%d %s of the protected counter %s lost: the resource took writes from two holders. "+
			"A lock that hands out a fencing token lets the resource refuse the stale holder's writes (the README's \"A fencing token\" says how).",
			rs.LostUpdates, plural(rs.LostUpdates, "update", "updates"), plural(rs.LostUpdates, "was", "were")), ""}
		if fenced := r.fencedLock(res.Lock); fenced != "" {
			step.Text += fmt.Sprintf(" Run the same faults with %s, its fenced counterpart on this store, side by side:", fenced)
			step.Cmd = fmt.Sprintf("%s compare%s --locks %s,%s --nemeses %s --seeds 10 --out %s", rundir.Program(), lockargs.FileArgs("", res.Lock), res.Lock, fenced, cmp.Or(nemeses, "none"), shellwords.Quote(dir+"-fencing"))
		}
		out = append(out, step)
	case rs.StaleAccepted > 0 || rs.FenceReused > 0:
		out = append(out, nextStep{"next-fence", "The resource accepted stale fenced writes: the fences themselves did not protect it. The resource table below says which check failed.", ""})
	}
	if res.Verdict == checker.Safe && len(res.Nemesis) > 0 {
		out = append(out, nextStep{"next-seeds", "One run that found nothing is one seed, not a proof: run more seeds of the same faults (the comparison gives the detection rate with its interval).",
			fmt.Sprintf("%s compare%s --locks %s --nemeses %s --seeds 20 --out %s", rundir.Program(), lockargs.FileArgs("", res.Lock), res.Lock, nemeses, shellwords.Quote(dir+"-seeds"))})
	}
	return out
}

type zoomPanel struct {
	ID      string
	Caption string
	SVG     template.HTML
}

// windowPanel is a window of a long run drawn in detail.
type windowPanel struct {
	zoomPanel
	incidents []int
	from      float64
}

type actionSwatch struct {
	Action string
	Color  string
}

type incidentRow struct {
	checker.Incident
	N      int
	Zoom   string // the zoom panel's id, "" when none
	Faults string // the faults that explain it, by label
}

type overlapRow struct {
	checker.Overlap
	Zoom   string
	Faults string
	// Incident is its incident's number (from 1; 0 when none); First marks
	// the incident's first row, IncidentPairs counts its pairs in all, and
	// MoreInIncident, on its last row, those not listed.
	Incident       int
	First          bool
	IncidentPairs  int
	MoreInIncident int
}

type faultRow struct {
	checker.FaultWindow
	Color    string
	Params   string
	Duration string
	End      string
}

// MaxOverlapRows bounds the overlaps listed in the page's table, and
// MaxFaultRows its faults (and porcupine.html's banner's).
const (
	MaxOverlapRows = 20
	// PairsPerIncident bounds the pairs listed per incident.
	PairsPerIncident = 3
	MaxFaultRows     = 100
)

// faultRows are the faults the page lists: every one, up to MaxFaultRows;
// of a long run, those its windows show or its incidents name first.
func (r *Run) faultRows() []checker.FaultWindow {
	fs := r.Result.Faults
	if len(fs) <= MaxFaultRows {
		return fs
	}
	named := map[int]bool{}
	for _, in := range r.Result.Mutex.Incidents {
		for _, id := range in.Faults {
			named[id] = true
		}
	}
	pick := map[int]bool{}
	n := 0
	for _, f := range fs {
		if n < MaxFaultRows && (named[f.ID] || r.inWindows(f)) {
			pick[f.ID] = true
			n++
		}
	}
	for _, f := range fs {
		if n < MaxFaultRows && !pick[f.ID] {
			pick[f.ID] = true
			n++
		}
	}
	var out []checker.FaultWindow
	for _, f := range fs {
		if pick[f.ID] {
			out = append(out, f)
		}
	}
	return out
}

// inWindows says whether a fault is drawn in one of a long run's windows.
func (r *Run) inWindows(f checker.FaultWindow) bool {
	end := r.span
	if f.EndMs != nil {
		end = *f.EndMs
	}
	return slices.ContainsFunc(r.windows, func(w *window) bool { return f.StartMs <= w.ToMs && end >= w.FromMs })
}

func (r *Run) pageData() runData {
	res := r.Result
	d := runData{Run: r, Why: explain.Headline(res, float64(cmp.Or(r.Info.LeaseMs, r.Info.TTLms))), Generated: time.Now().Format(time.RFC3339)}
	d.Title = fmt.Sprintf("%s — %s + %s, seed %d", res.Verdict, orNone(res.Lock), nemesisList(res.Nemesis), res.Seed)
	span := r.span
	d.Witness = explain.Witness(res)
	all := detail{holds: r.Holds, attempts: r.attempts}
	if r.Bounded {
		r.boundedData(&d, span)
	} else {
		d.Timeline = r.timeline(all, 0, span, "timeline")
		d.RatePlot = r.ratePlot(rate(r.attempts, bucketWidth(span), span), bucketWidth(span), span)
		d.LatencyPlot = r.latencyPlot(span)
	}
	used := map[string]bool{}
	for _, f := range res.Faults {
		used[string(f.Action)] = true
	}
	for _, a := range actionOrder {
		if used[string(a)] {
			d.Actions = append(d.Actions, actionSwatch{Action: string(a), Color: actionColor(a)})
		}
	}
	if used[""] {
		d.Actions = append(d.Actions, actionSwatch{Action: "unrecorded", Color: actionColor("")})
	}
	labels := map[int]string{}
	for _, f := range res.Faults {
		labels[f.ID] = fmt.Sprintf("%s %s (fault %d)", f.Name, f.Where(), f.ID)
	}
	faultNames := func(ids []int) string {
		var s []string
		for _, id := range ids {
			s = append(s, cmp.Or(labels[id], fmt.Sprintf("fault %d", id)))
		}
		return strings.Join(s, "; ")
	}
	incidents := res.Mutex.Incidents
	if len(incidents) > MaxOverlapRows {
		incidents = incidents[:MaxOverlapRows]
	}
	for i, in := range incidents {
		row := incidentRow{Incident: in, N: i + 1, Faults: faultNames(in.Faults), Zoom: fmt.Sprintf("zoom-%d", i+1)}
		if r.Bounded {
			// A long run's incidents are drawn in its windows.
			row.Zoom = ""
			for _, w := range d.Windows {
				if slices.Contains(w.incidents, i) {
					row.Zoom = w.ID
				}
			}
			d.Incidents = append(d.Incidents, row)
			continue
		}
		from, to := in.StartMs-250, in.EndMs+250
		for _, o := range res.Mutex.Overlaps {
			if res.IncidentOf(o) == i {
				from = min(from, o.Holds[0].StartMs-250, o.Holds[1].StartMs-250)
				to = max(to, o.Holds[0].EndMs+250, o.Holds[1].EndMs+250)
			}
		}
		for _, f := range res.Faults {
			if slices.Contains(in.Faults, f.ID) {
				from = min(from, f.StartMs-100)
			}
		}
		from, to = max(0, from), min(span, to)
		d.Zooms = append(d.Zooms, zoomPanel{ID: row.Zoom, SVG: r.timeline(all, from, to, row.Zoom+"-svg"),
			Caption: fmt.Sprintf("incident %d (%s, %d %s), t=%s to t=%s", i+1, in.Key, in.Pairs, plural(in.Pairs, "pair", "pairs"), checker.Seconds(from), checker.Seconds(to))})
		d.Incidents = append(d.Incidents, row)
	}
	d.MoreIncidents = res.Mutex.IncidentCount - len(d.Incidents)
	// The pairs, grouped by incident: the first PairsPerIncident of each,
	// then how many more it had.
	shown, listed := map[int]int{}, 0
	for _, o := range res.Mutex.Overlaps {
		i := res.IncidentOf(o)
		if len(d.Overlaps) >= MaxOverlapRows {
			break
		}
		if shown[i] >= PairsPerIncident {
			continue
		}
		shown[i]++
		row := overlapRow{Overlap: o, Faults: faultNames(o.Faults), Incident: i + 1, First: shown[i] == 1, IncidentPairs: shown[i]}
		if i >= 0 && i < len(res.Mutex.Incidents) {
			row.IncidentPairs = res.Mutex.Incidents[i].Pairs
		}
		if i >= 0 && i < len(d.Incidents) {
			row.Zoom = d.Incidents[i].Zoom
		}
		d.Overlaps = append(d.Overlaps, row)
	}
	// Incidents of different keys can interleave in time.
	slices.SortStableFunc(d.Overlaps, func(a, b overlapRow) int { return cmp.Compare(a.Incident, b.Incident) })
	for k := range d.Overlaps {
		if row := &d.Overlaps[k]; k+1 == len(d.Overlaps) || d.Overlaps[k+1].Incident != row.Incident {
			row.MoreInIncident = max(row.IncidentPairs-shown[row.Incident-1], 0)
			listed += max(row.IncidentPairs, shown[row.Incident-1])
		}
	}
	d.MoreOverlaps = res.Mutex.OverlapCount - listed
	d.LeaseText = fmt.Sprintf("%d ms", r.Info.Lease())
	d.Leaseless = r.Info.Leaseless
	if r.Info.Renew {
		d.LeaseText += "; not drawn: clients renewed their leases, which the history does not record"
	}
	if res.Reproduce != nil && res.Reproduce.Command != "" {
		d.Reproduce = res.Reproduce.Command
	} else if _, err := os.Stat(filepath.Join(r.Dir, "config.json")); err == nil {
		// A run folder from before result.json recorded the command.
		d.Reproduce = rundir.ReplayCommand(rundir.Program(), r.Dir)
	}
	d.NextSteps = r.nextSteps(d.Reproduce)
	for _, f := range r.faultRows() {
		row := faultRow{FaultWindow: f, Color: actionColor(f.Action), Params: checker.Pairs(f.Params), End: "never healed"}
		if f.EndMs != nil {
			row.End = checker.Seconds(*f.EndMs)
			row.Duration = checker.Millis(*f.EndMs - f.StartMs)
		}
		d.Faults = append(d.Faults, row)
	}
	d.MoreFaults = len(res.Faults) - len(d.Faults)
	if res.Acquire.Attempted > 0 {
		d.AcquireRate = fmt.Sprintf("%.1f%%", 100*float64(res.Acquire.OK)/float64(res.Acquire.Attempted))
	}
	in := r.Info
	d.Config = [][2]string{
		{"lock", orNone(res.Lock)}, {"nemeses", nemesisList(res.Nemesis)}, {"seed", fmt.Sprint(res.Seed)},
		{"clients", fmt.Sprint(in.Clients)}, {"TTL", fmt.Sprintf("%d ms", in.TTLms)},
	}
	if n := len(in.NodeRoles); n > 0 {
		// A history from before the roles were recorded does not say.
		d.Config = append(d.Config, [2]string{"lock nodes", fmt.Sprint(n)})
	}
	if c := r.Settings; c != nil {
		d.Config = append(d.Config, [][2]string{{"keys", fmt.Sprint(c.Keys)}, {"hold", fmt.Sprintf("%d ms", c.Hold.Milliseconds())},
			{"duration", fmt.Sprintf("%d ms", c.Duration.Milliseconds())}, {"backend", c.Backend}}...)
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

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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
