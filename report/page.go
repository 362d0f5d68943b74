package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/report/palette"
)

var styles = template.CSS(`
:root { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #212529; }
body { margin: 0 auto; max-width: 1400px; padding: 16px 24px 48px; line-height: 1.45; }
h1 { font-size: 1.5em; margin: 0.2em 0; }
h2 { font-size: 1.15em; margin: 1.6em 0 0.5em; border-bottom: 1px solid #dee2e6; padding-bottom: 3px; }
h3 { font-size: 1em; margin: 1em 0 0.3em; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 0.92em; }
table { border-collapse: collapse; margin: 0.4em 0; }
th, td { border: 1px solid #dee2e6; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f5; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 1px 10px; border-radius: 4px; font-weight: 700; }
.v-safe { background: ` + palette.Safe + `; }
.v-violation { background: ` + palette.Violation + `; }
.v-inconclusive { background: ` + palette.Inconclusive + `; }
.v-error { background: ` + palette.Error + `; }
header.verdict { padding: 10px 16px; border-radius: 6px; margin-bottom: 8px; }
#why { font-size: 1.1em; margin: 0.4em 0 0.2em; }
.muted { color: #6c757d; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 22px; height: 12px; vertical-align: middle; margin-right: 4px; border-radius: 2px; }
svg.timeline, svg.plot { border: 1px solid #dee2e6; border-radius: 4px; display: block; margin: 4px 0 10px; }
.tl-scroll { overflow-x: auto; }
.zoom-panel { display: none; }
.window-panel:target h3 { background: #fff3bf; }
.zoom-panel.first, .zoom-panel:target { display: block; }
.zooms:has(.zoom-panel:target) .zoom-panel.first:not(:target) { display: none; }
section.next-steps { background: #f8f9fa; border: 1px solid #dee2e6; border-radius: 6px; padding: 2px 16px 4px; margin: 8px 0 16px; }
section.next-steps h2 { border: none; margin: 10px 0 4px; }
section.next-steps li { margin-bottom: 6px; }
section.next-steps pre.cmd { margin: 4px 0; background: #fff; }
pre.cmd { background: #f1f3f5; padding: 8px 10px; border-radius: 4px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
table.wide { display: block; overflow-x: auto; }
@media (max-width: 900px) { body { padding: 10px 12px 32px; } th, td { padding: 2px 5px; } }
table.matrix { font-size: 0.78em; }
table.matrix td.cell { text-align: center; padding: 2px 2px; border: 2px solid #fff; outline: 1px solid #dee2e6; }
table.matrix th { white-space: nowrap; }
table.matrix td.cell a { color: inherit; text-decoration: none; display: block; }
table.matrix td.cell a:hover { text-decoration: underline; }
table.matrix th.nem { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; padding: 6px 3px; }
td.s-na { background: ` + palette.NA + `; color: #868e96; }
td.s-skipped { background: ` + palette.Skipped + `; color: #868e96; border: 2px dashed #ced4da !important; }
td.s-not-run { background: #fff; color: #868e96; }
td.s-error { background: ` + palette.Error + `; }
td.s-mismatch { border: 3px solid ` + palette.Mismatch + ` !important; font-weight: 700; }
td.s-inconclusive { background: ` + palette.Inconclusive + `; }
.mark { font-size: 0.8em; display: block; }
.status-fail { color: ` + palette.Mismatch + `; font-weight: 700; }
.status-ok { color: #2b8a3e; }
ul.problems li { margin-bottom: 4px; }
footer { margin-top: 2.5em; font-size: 0.85em; color: #6c757d; }
`)

var funcs = template.FuncMap{
	"ms":   func(v float64) string { return checker.Millis(v) },
	"secs": func(v float64) string { return checker.Seconds(v) },
	"fms":  func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"join": strings.Join,
	"ints": func(v []int) string {
		s := make([]string, len(v))
		for i, n := range v {
			s[i] = fmt.Sprint(n)
		}
		return strings.Join(s, ", ")
	},
	"subf":         func(a, b float64) float64 { return a - b },
	"subi":         func(a, b int) int { return a - b },
	"availability": checker.AvailabilitySentence,
	"styles":       func() template.CSS { return styles },
	"pct": func(a, b int) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
	},
	"ptrms": func(v *float64) string {
		if v == nil {
			return "–"
		}
		return checker.Millis(*v)
	},
	"boolptr": func(v *bool) string {
		if v == nil {
			return "unknown (timed out)"
		}
		return fmt.Sprint(*v)
	},
	"faultids": func(ids []int) string {
		var s []string
		for _, id := range ids {
			s = append(s, fmt.Sprint(id))
		}
		if len(s) == 0 {
			return "none"
		}
		return strings.Join(s, ", ")
	},
}

var runPage = template.Must(template.New("run").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockchaos: {{.Title}}</title>
<style>{{styles}}</style>
</head>
<body>
<header class="verdict v-{{.Result.Verdict}}">
<h1><span id="verdict" class="badge">{{.Result.Verdict}}</span> {{.Result.Lock}} + {{if .Result.Nemesis}}{{join .Result.Nemesis ", "}}{{else}}no fault{{end}} <span class="muted">(seed {{.Result.Seed}})</span></h1>
<p id="why">{{.Why}}</p>
</header>
{{if .NextSteps}}<section id="next-steps" class="next-steps">
<h2>Next steps</h2>
<ol>{{range .NextSteps}}<li id="{{.ID}}">{{.Text}}{{if .Cmd}}<pre class="cmd">{{.Cmd}}</pre>{{end}}</li>
{{end}}</ol>
</section>{{end}}

<h2>Timeline</h2>
<p class="legend muted">
<span><span class="swatch" style="background:#4c6ef5"></span>a hold (one colour per key)</span>
<span><span class="swatch" style="background:#e03131"></span>two clients held the same key</span>
<span><span class="swatch" style="background:repeating-linear-gradient(45deg,#212529 0 2px,#fff 2px 5px)"></span>held after the lease ran out on the server (a black tick where it did)</span>
<span><span class="swatch" style="background:#fff;border:2px solid #d9480f"></span>the release found the lease gone</span>
<span><span class="swatch" style="background:#fff;border:1.5px dashed #495057"></span>the client learned it lost the lock</span>
<span><span class="swatch" style="background:#868e96;width:3px"></span>acquire refused</span>
<span><span class="swatch" style="background:#7048e8;width:8px;transform:rotate(45deg);height:8px"></span>acquire unknown (timed out, errored)</span>
</p>
{{if .Actions}}<p class="legend muted" id="action-legend">Faults, one lane per nemesis, labelled with whom they hit, coloured by what they did:
{{range .Actions}}<span><span class="swatch" style="background:{{.Color}}"></span>{{.Action}}</span>{{end}}
— a lane per lock node shows when a fault acted on it (a solid tick at its start, dashed at its end).</p>{{end}}
{{if .Run.Bounded}}<p class="legend muted" id="overview-legend">The whole run: fault lanes (faults that touch at this scale are one band), <span><span class="swatch" style="background:#4c6ef5"></span>holds begun per second</span> <span><span class="swatch" style="background:#e03131"></span>incidents</span> <span><span class="swatch" style="background:#495057"></span>windows drawn in detail below (click one)</span></p>{{end}}
{{.Timeline}}
{{if .Run.Bounded}}<div id="omitted" class="omitted">{{range .Omitted}}<p class="muted">{{.}}</p>{{end}}</div>
<div class="windows" id="windows">
{{range .Windows}}<div class="window-panel" id="{{.ID}}">
<h3>Window: {{.Caption}}</h3>
{{.SVG}}
</div>
{{end}}</div>{{end}}
{{if .Zooms}}<div class="zooms">
{{range $i, $z := .Zooms}}<div class="zoom-panel{{if eq $i 0}} first{{end}}" id="{{$z.ID}}">
<h3>Zoom: {{$z.Caption}}</h3>
{{$z.SVG}}
</div>
{{end}}</div>{{end}}
<p class="muted">Hover a shape for its times. Times are from the start of the run; holds run from the return of a successful acquire to the invocation of the release. {{if .Leaseless}}The lock has no lease: a hold lasts as long as its client's session with the server (a PostgreSQL backend holds it until its connection ends), so no lease end is drawn.{{else}}A lease ran out on the server by its acquire's return plus the lease ({{.LeaseText}}), by the lock nodes' clocks.{{end}}{{if gt (len .Zooms) 1}} Each row of the incident table below zooms on its incident.{{end}}</p>

{{if .Witness}}<h2 id="witness">Witness</h2>
<ol id="witness-story">{{range .Witness}}<li>{{.}}</li>{{end}}</ol>{{end}}

<h2 id="availability">Availability and latency</h2>
{{if .Run.Bounded}}<p class="muted">Acquires completed per second, by outcome (<span style="color:#2f9e44">succeeded</span>, <span style="color:#868e96">refused</span>, <span style="color:#7048e8">unknown</span>), and the latency of the acquires completed in each bucket of time: <span style="color:#2f9e44">median</span>, <span style="color:#7048e8">99th percentile</span> and <span style="color:#e8590c">maximum</span> (log scale); fault windows shaded by what they did.</p>
{{else}}<p class="muted">Acquires completed per second, by outcome (<span style="color:#2f9e44">succeeded</span>, <span style="color:#868e96">refused</span>, <span style="color:#7048e8">unknown</span>), and the latency of every acquire against the time it was invoked (log scale; acquires that never completed at the top); fault windows shaded by what they did.</p>{{end}}
{{.RatePlot}}
{{.LatencyPlot}}

<h2 id="findings">What the checker found</h2>
<p>{{.Result.Summary}}</p>
{{if .Result.Reasons}}<ul>{{range .Result.Reasons}}<li>{{.}}</li>{{end}}</ul>{{end}}
<table>
<tr><th>porcupine (mutex model, per key)</th><td>{{.Result.Mutex.Porcupine}}{{if .Result.Mutex.Linearizable}} — linearizable: {{boolptr .Result.Mutex.Linearizable}}{{end}}</td></tr>
<tr><th>interval sweep</th><td id="sweep">{{if .Result.Mutex.IncidentCount}}{{.Result.Mutex.IncidentCount}} {{if eq .Result.Mutex.IncidentCount 1}}incident{{else}}incidents{{end}} in which two or more clients held one key, for {{ms .Result.Mutex.CoexistMs}} in all ({{.Result.Mutex.OverlapCount}} overlapping pairs of holds){{else}}no overlapping holds{{end}}</td></tr>
<tr><th>porcupine and the sweep agree</th><td>{{.Result.Mutex.Agree}}</td></tr>
<tr><th>operations / holds</th><td>{{.Result.Mutex.Ops}} / {{.Result.Mutex.Holds}}</td></tr>
<tr><th>faults that landed (hit a live lease as they are meant to)</th><td id="landed">{{.Result.Evidence.Landed}} of {{.Result.Evidence.Faults}}{{if .Result.Evidence.Landed}} — leases lost {{.Result.Evidence.LeasesLost}}, kept {{.Result.Evidence.LeasesKept}}, unknown {{.Result.Evidence.LeasesUnknown}}{{end}}</td></tr>
{{with index .Result.Evidence.Overlaps "fault"}}<tr><th>overlaps under faults that did not land (the lock granted a second holder on its own account)</th><td id="unlanded-overlaps">{{subi . $.Result.Evidence.LandedFaultOverlaps}} of {{.}}</td></tr>{{end}}
{{if .Result.Evidence.Missed}}<tr><th>steps that became no fault</th><td id="missed">{{len .Result.Evidence.Missed}}; the first: {{(index .Result.Evidence.Missed 0).Nemesis}} step {{(index .Result.Evidence.Missed 0).Step}}: {{(index .Result.Evidence.Missed 0).Why}}</td></tr>{{end}}
<tr><th>time to the first overlap</th><td>{{ptrms .Result.FirstViolationMs}}{{if .Result.FirstViolationCause}} (from {{if eq .Result.FirstViolationCause "fault"}}the start of the fault that caused it{{else}}the start of the run: no fault caused it{{end}}){{end}}</td></tr>
<tr><th>stalls of the harness (not counting a client while a fault stopped it)</th><td id="stalls">{{if .Result.Stalls.Count}}{{.Result.Stalls.Count}}, the longest {{ms .Result.Stalls.MaxMs}} ({{if .Result.Stalls.WorstNode}}lock node {{.Result.Stalls.WorstNode}}, waiting for a CPU{{else if lt .Result.Stalls.Worst 0}}the coordinator{{else}}client {{.Result.Stalls.Worst}}{{end}}){{else}}none{{end}}</td></tr>
<tr><th>history complete</th><td>{{.Result.Complete}}{{if .Truncated}} (its last line was cut off){{end}}</td></tr>
{{with availability .Result.Acquire}}<tr><th>availability under faults</th><td id="availability-faults">{{.}}</td></tr>{{end}}
<tr><th>liveness (a key is stuck when nobody held it for {{ms .Result.Liveness.StuckAfterMs}} outside faults and measured stalls of the harness while clients tried)</th><td id="liveness">{{if .Result.Liveness.Stuck}}<strong>stuck</strong>: {{range .Result.Liveness.Stuck}}{{.Key}} had no holder from t={{secs .FromMs}} to t={{secs .ToMs}} ({{ms .OutsideFaultsMs}} outside faults{{if .StalledMs}}, {{ms .StalledMs}} of it in measured stalls of the harness{{end}}) while clients tried {{.Tries}} acquires{{if .Faults}}, after fault {{.Faults}}{{end}}; {{end}}{{else if .Result.Liveness.Stalled}}no evidence: no key got stuck but for the time measured stalls of the harness cover: {{range .Result.Liveness.Stalled}}{{.Key}} had no holder from t={{secs .FromMs}} to t={{secs .ToMs}} ({{ms .OutsideFaultsMs}} outside faults, {{ms .StalledMs}} of it in measured stalls) while clients tried {{.Tries}} acquires; {{end}}{{else if .Result.Liveness.Unfinished}}no key got stuck, but the run ended too soon after a fault to tell: {{range .Result.Liveness.Unfinished}}{{.Key}} had no holder from t={{secs .FromMs}} after fault {{.Faults}} to the end of the run ({{ms .OutsideFaultsMs}} outside faults) while clients tried {{.Tries}} acquires; {{end}}{{else}}no key got stuck{{end}}{{range .Result.Liveness.Keys}} — {{.Key}}: the longest span without a holder while clients tried {{ms .LongestMs}} from t={{secs .FromMs}} ({{.Tries}} acquires){{end}}{{range .Result.Liveness.Orphans}}; {{.}}{{end}}</td></tr>
</table>
{{if .Result.Errors}}
<h3 id="errors">Errors the lock answered with</h3>
<p class="muted">Operations that got no answer the lock could give as granted or refused: the library's own error text, the first of each kind (kinds differ in more than their numbers), and how many followed.</p>
<table class="wide" id="errors-table">
<tr><th>operation</th><th>count</th><th>first at</th><th>client</th><th>error</th></tr>
{{range .Result.Errors}}<tr><td>{{.Op}}</td><td class="num">{{.Count}}</td><td class="num">t={{secs .FirstMs}}</td><td class="num">{{.Client}}</td><td><code>{{.Error}}</code></td></tr>
{{end}}</table>{{end}}

{{if .Incidents}}
<h2 id="overlaps">Incidents</h2>
<p>{{.Result.Mutex.IncidentCount}} {{if eq .Result.Mutex.IncidentCount 1}}incident{{else}}incidents{{end}}: stretches of time in which two or more clients held the same key without a break ({{.Result.Mutex.OverlapCount}} overlapping pairs of holds in all; two or more holders for {{ms .Result.Mutex.CoexistMs}} in total). <span class="muted">Zoom shows an incident in the timeline above.</span></p>
<table class="wide" id="incidents">
<tr><th>#</th><th>key</th><th>from</th><th>to</th><th>two or more holders for</th><th>pairs</th><th>clients</th><th>caused by</th><th></th></tr>
{{range .Incidents}}<tr class="incident-row" data-incident="{{.N}}">
<td class="num">{{.N}}</td><td><code>{{.Key}}</code></td><td class="num">t={{secs .StartMs}}</td><td class="num">t={{secs .EndMs}}</td><td class="num">{{ms .CoexistMs}}</td><td class="num">{{.Pairs}}</td><td>{{ints .Clients}}</td>
<td>{{if eq .Cause "fault"}}{{.Faults}}{{else if eq .Cause "stall"}}stalls of the harness{{else}}neither fault nor stall{{end}}</td>
<td>{{if .Zoom}}<a class="zoom-link" href="#{{.Zoom}}">zoom</a>{{end}}</td></tr>
{{end}}</table>
{{if gt .MoreIncidents 0}}<p class="muted">… and {{.MoreIncidents}} more incidents (result.json lists up to 100).</p>{{end}}
<h3>Overlapping pairs of holds</h3>
<table class="wide">
<tr><th>key</th><th>clients</th><th>both held from</th><th>for</th><th>earlier hold</th><th>later hold</th><th>caused by</th><th></th></tr>
{{range .Overlaps}}{{if .First}}<tr class="pairs-incident" data-incident="{{.Incident}}"><th colspan="8">{{if .Incident}}Incident {{.Incident}}: {{.IncidentPairs}} {{if eq .IncidentPairs 1}}pair{{else}}pairs{{end}}{{else}}Outside the incidents listed{{end}}</th></tr>{{end}}
<tr class="overlap-row" data-incident="{{.Incident}}">
<td><code>{{.Key}}</code></td><td>{{index .Clients 0}} and {{index .Clients 1}}</td><td class="num">t={{secs .StartMs}}</td><td class="num">{{ms (subf .EndMs .StartMs)}}</td>
<td>client {{(index .Holds 0).Client}}: {{secs (index .Holds 0).StartMs}} – {{secs (index .Holds 0).EndMs}} ({{(index .Holds 0).End}}{{if (index .Holds 0).LeaseEndMs}}; lease gone by {{secs (index .Holds 0).LeaseEndMs}}{{end}})</td>
<td>client {{(index .Holds 1).Client}}: {{secs (index .Holds 1).StartMs}} – {{secs (index .Holds 1).EndMs}} ({{(index .Holds 1).End}})</td>
<td>{{if eq .Cause "stall"}}a stall: {{.Stall.Text}}{{else if eq .Cause "fault"}}{{.Faults}}{{else}}neither fault nor stall{{end}}</td>
<td>{{if .Zoom}}<a class="zoom-link" href="#{{.Zoom}}">zoom</a>{{end}}</td></tr>
{{if gt .MoreInIncident 0}}<tr class="more-pairs" data-incident="{{.Incident}}"><td colspan="8" class="muted">… and {{.MoreInIncident}} more {{if eq .MoreInIncident 1}}pair{{else}}pairs{{end}} in incident {{.Incident}} (result.json lists up to 100 pairs in all)</td></tr>{{end}}
{{end}}</table>
{{if gt .MoreOverlaps 0}}<p class="muted">… and {{.MoreOverlaps}} more pairs in incidents not listed (result.json lists up to 100).</p>{{end}}
{{end}}

<h2 id="faults">Faults</h2>
{{if .Faults}}<table class="wide">
<tr><th>id</th><th>nemesis</th><th>acted on</th><th>target</th><th>parameters</th><th>from</th><th>to</th><th>lasted</th><th>landed</th><th>lease</th><th>what it did</th></tr>
{{range .Faults}}<tr class="fault-row" data-landed="{{.Landed}}"><td class="num">{{.ID}}</td><td><span class="swatch" style="background:{{.Color}}"></span>{{.Name}}</td><td>{{.Where}}</td><td>{{.Target}}</td><td class="mono">{{.Params}}</td><td class="num">t={{secs .StartMs}}</td><td class="num">{{.End}}</td><td class="num">{{.Duration}}</td><td>{{if .Landed}}yes{{else}}no{{end}}</td><td>{{.Lease}}</td><td>{{.Effect}}</td></tr>
{{end}}</table>
{{if gt .MoreFaults 0}}<p class="muted" id="more-faults">… and {{.MoreFaults}} more faults (result.json lists every one).</p>{{end}}
<p class="muted">A fault landed when it hit a live lease the way it is meant to: a pause past the lease, a node that forgot a lease while its holder still worked, a link slow or cut past the lease. A fault that did not land is no evidence about the lock either way.</p>{{else}}<p>No fault was injected.</p>{{end}}

<h2 id="resource">The protected resource</h2>
<p>{{.Result.Resource.Summary}}</p>
<table>
<tr><th>accepted writes (holds that wrote)</th><td class="num">{{.Result.Resource.Holds}}</td></tr>
<tr><th>lost updates</th><td class="num">{{.Result.Resource.LostUpdates}}</td></tr>
<tr><th>stale reads</th><td class="num">{{.Result.Resource.StaleReads}}</td></tr>
<tr><th>stale fenced operations accepted</th><td class="num">{{.Result.Resource.StaleAccepted}}</td></tr>
<tr><th>stale fenced operations rejected</th><td class="num">{{.Result.Resource.StaleRejected}}</td></tr>
</table>

<h2 id="acquire">Acquires and releases</h2>
<table>
<tr><th></th><th>attempted</th><th>succeeded</th><th>refused</th><th>unknown</th><th>success rate</th><th>p50</th><th>p99</th><th>max</th></tr>
<tr><th>acquire</th><td class="num">{{.Result.Acquire.Attempted}}</td><td class="num">{{.Result.Acquire.OK}}</td><td class="num">{{.Result.Acquire.Failed}}</td><td class="num">{{.Result.Acquire.Unknown}}</td><td class="num" id="acquire-rate">{{pct .Result.Acquire.OK .Result.Acquire.Attempted}}</td><td class="num">{{ms .Result.Acquire.P50ms}}</td><td class="num">{{ms .Result.Acquire.P99ms}}</td><td class="num">{{ms .Result.Acquire.Maxms}}</td></tr>
<tr><th>release</th><td class="num">{{.Result.Release.Attempted}}</td><td class="num">{{.Result.Release.OK}}</td><td class="num">{{.Result.Release.NotHeld}} not held</td><td class="num">{{.Result.Release.Unknown}}</td><td class="num">{{pct .Result.Release.OK .Result.Release.Attempted}}</td><td class="num">{{ms .Result.Release.P50ms}}</td><td class="num">{{ms .Result.Release.P99ms}}</td><td class="num" id="release-max">{{ms .Result.Release.Maxms}}</td></tr>
</table>
<p class="muted">Latencies are of successful operations. A refused acquire found the lock held; an unknown one timed out or errored, and its client never entered the critical section.</p>

<h2 id="liveness">Liveness</h2>
{{if .Result.Liveness.DeadlockedKeys}}<p class="status-fail">Deadlocked: {{join .Result.Liveness.DeadlockedKeys ", "}} — left with no expiry after the run; nobody can ever acquire {{if eq (len .Result.Liveness.DeadlockedKeys) 1}}it{{else}}them{{end}} again.</p>
{{else}}<p>No lock key was left without an expiry.</p>{{end}}

<h2 id="porcupine">Linearizability</h2>
<p><a href="porcupine.html">Open porcupine's visualization</a> of the acquire/release history (one partition per key; fault windows and overlaps are annotated rows). For a violation it shows the longest prefix porcupine could linearize and the operation it could not.</p>
{{if .PorcupineError}}<p class="status-fail">The visualization could not be written: {{.PorcupineError}}</p>{{end}}

<h2 id="config">Run</h2>
{{if .Reproduce}}<p>Reproduce this run (the same settings and the fault schedule it executed):</p>
<pre class="cmd" id="reproduce">{{.Reproduce}}</pre>{{end}}
<table>{{range .Config}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>

<footer>Evidence: <a href="history.jsonl">history.jsonl</a> (every event), <a href="result.json">result.json</a> (the checker's findings), <a href="workers/">workers/</a> (worker logs). This page is derived from those two files alone; <code>lockchaos report DIR</code> renders it again. Rendered {{.Generated}}.</footer>
</body>
</html>
`))
