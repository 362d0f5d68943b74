package compare

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/browser"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// synthetic is a comparison of two locks against three columns, one cell
// of each kind: token-lua violates under pause-client (three seeds with
// their times to the first overlap, one safe, one no evidence), is safe
// without faults and n/a under failover; redlock is safe without faults,
// no evidence under pause-client (its faults never landed) and could not
// be set up under failover. The rows are summed by rowOf, as Execute does.
func synthetic() Comparison {
	cell := func(lock, nem string) Cell {
		c := Cell{Lock: lock, Nemesis: nem, Config: settings.Run{Workload: workload.Workload{TTL: 500 * time.Millisecond, Hold: 50 * time.Millisecond}}}
		if nem != "none" {
			c.Config.Nemeses = []string{nem}
		}
		return c
	}
	run := func(c Cell, seed int64, outcome string, ttfv float64) Run {
		r := Run{Seed: seed, Dir: c.Name() + fmt.Sprintf("/seed%d", seed), Attempts: 1, Outcome: outcome,
			Acquires: 200, AcquiresOK: 120, Holds: 120, WorkloadS: 4, AcquireP50ms: 1.25, AcquireP99ms: 9.5}
		if c.Nemesis != "none" {
			r.Faults, r.Landed, r.FaultAcquires, r.FaultAcquiresOK = 2, 1, 40, 10
		}
		switch outcome {
		case OutcomeViolation:
			r.TTFVTTL, r.LostUpdates = &ttfv, 1
		case OutcomeNoEvidence:
			r.Landed, r.Why = 0, "no fault landed: the pauses ended before the lease did"
			if seed == 4 {
				r.Attempts = 3
			}
		}
		return r
	}
	spec := Spec{Locks: []string{"token-lua", "redlock"}, Nemeses: []string{"none", "pause-client", "failover"},
		Seeds: 5, FirstSeed: 1, EarlyStop: true, MinSeeds: 3, Parallel: 2}
	c := Comparison{Header: Header{Schema: Schema, Version: "v0.9.0-test", Host: "testhost", Started: "2025-03-04T05:06:07Z", Seconds: 754},
		Spec: spec, Command: `lockchaos compare --locks token-lua,redlock --nemeses none,pause-client,failover --seeds 5 --label '<x>'`}
	tl, tp, tf := cell("token-lua", "none"), cell("token-lua", "pause-client"), cell("token-lua", "failover")
	rn, rp, rf := cell("redlock", "none"), cell("redlock", "pause-client"), cell("redlock", "failover")
	tf.Skip, tf.Why = SkipNA, "failover needs <replicas> & a sentinel; token-lua runs on one node"
	rf.Skip, rf.Why = SkipError, "--ttl 0s: want a positive TTL"
	safe5 := func(c Cell) []Run {
		var rs []Run
		for s := int64(1); s <= 5; s++ {
			rs = append(rs, run(c, s, OutcomeSafe, 0))
		}
		return rs
	}
	c.Cells = []Cell{tl, tp, tf, rn, rp, rf}
	c.Rows = []Row{
		rowOf(tl, safe5(tl), 5, false),
		rowOf(tp, []Run{run(tp, 1, OutcomeViolation, 0.4), run(tp, 2, OutcomeSafe, 0), run(tp, 3, OutcomeViolation, 2.2),
			run(tp, 4, OutcomeNoEvidence, 0), run(tp, 5, OutcomeViolation, 1.3)}, 5, false),
		rowOf(tf, nil, 5, false),
		rowOf(rn, safe5(rn), 5, false),
		rowOf(rp, []Run{run(rp, 1, OutcomeNoEvidence, 0), run(rp, 2, OutcomeNoEvidence, 0), run(rp, 3, OutcomeError, 0)}, 5, false),
		rowOf(rf, nil, 5, false),
	}
	c.Rows[4].Runs[2].Why = "redis exited"
	return c
}

// runHrefs are the links every run of c must have.
func runHrefs(c Comparison) map[string]string {
	want := map[string]string{}
	for _, r := range c.Rows {
		for _, x := range r.Runs {
			want[x.Dir+"/report.html"] = x.Outcome
		}
	}
	return want
}

func writeSynthetic(t *testing.T) (string, Comparison) {
	t.Helper()
	c := synthetic()
	dir := t.TempDir()
	if err := c.Write(dir); err != nil {
		t.Fatal(err)
	}
	page, err := WriteIndex(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	if page != filepath.Join(dir, IndexFile) {
		t.Errorf("WriteIndex returned %s, want %s", page, filepath.Join(dir, IndexFile))
	}
	return page, c
}

func TestWriteIndex(t *testing.T) {
	page, c := writeSynthetic(t)
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	// The row summed up as the violating cell: 3 of the 4 seeds that were
	// evidence, the no-evidence seed left out.
	vr := c.Rows[1]
	if vr.Violations != 3 || vr.Safe != 1 || vr.Inconclusive != 1 || vr.DetectionRate == nil || len(vr.TTFV) != 3 {
		t.Fatalf("the synthetic violating row is not what the test means: %+v", vr)
	}
	if c.Rows[4].DetectionRate != nil || c.Rows[4].FaultAcquireOKRate == nil {
		t.Fatalf("the synthetic no-evidence row is not what the test means: %+v", c.Rows[4])
	}

	for _, want := range []string{
		`id="plot-detection"`, `id="plot-ttfv"`, `id="plot-throughput"`, `id="plot-availability"`,
		`id="cells-table"`, `id="how-to-read"`, `id="command"`,
		// The header: what, when, where, how to repeat it.
		"token-lua, redlock", "none, pause-client, failover", "5 per cell, seeds 1 to 5", "at least 3 of its seeds ran",
		"2025-03-04 05:06:07 UTC", "testhost", "v0.9.0-test", "12 min 34 s",
		"--label &#39;&lt;x&gt;&#39;",
		// How to read it.
		"95 % Wilson score interval", "in TTLs", "Inconclusive seeds",
		// The violating cell's figures: 3/4 with its interval, TTFV median and p90.
		"75.0%", fmt.Sprintf("[%s – %s]", pctf(*vr.CILow), pctf(*vr.CIHigh)), ttl(*vr.TTFVMedianTTL) + " / " + ttl(*vr.TTFVP90TTL),
		"1.2 / 9.5", // acquire p50 / p99, ms with one decimal
		// A violating cell says how to shrink its first violating run.
		`<code class="shrink">lockchaos shrink ` + strings.ReplaceAll(firstViolating(vr), "+", "&#43;") + `</code>`,
		// The n/a row says why, escaped.
		`<span class="status">n/a</span>failover needs &lt;replicas&gt; &amp; a sentinel; token-lua runs on one node`,
		`<span class="status">error</span>--ttl 0s: want a positive TTL`,
		// The run links carry their outcome.
		`class="run o-violation" href="token-lua&#43;pause-client/seed1/report.html"`,
		`class="run o-error" href="redlock&#43;pause-client/seed3/report.html" title="seed 3: error — redis exited"`,
		`title="seed 4: no-evidence after 3 attempts — no fault landed: the pauses ended before the lease did"`,
		// The plots' marks and what stands for a missing figure.
		`class="det-none" font-style="italic" data-lock="redlock" data-nemesis="pause-client">no evidence</text>`,
		`data-lock="token-lua" data-nemesis="failover">n/a</text>`,
		`class="ttfv-median"`, `class="ttl-line"`,
		"from each lock&#39;s cell without faults (none)",
		`href="compare.json"`, `href="compare.csv"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// Every run links to its report. html/template writes the + of a
	// cell's folder as &#43; in an attribute: the browser reads it as +
	// (TestIndexInBrowser checks the rendered hrefs).
	for href := range runHrefs(c) {
		if !strings.Contains(html, `href="`+strings.ReplaceAll(href, "+", "&#43;")+`"`) {
			t.Errorf("no link to %s", href)
		}
	}
	// Marks per plot: a detection dot per cell with a rate, none for the
	// no-evidence cell; a TTFV dot per violating seed.
	plot := func(id string) string {
		m := regexp.MustCompile(`(?s)<svg id="` + id + `".*?</svg>`).FindString(html)
		if m == "" {
			t.Fatalf("no <svg id=%q>", id)
		}
		return m
	}
	for _, tc := range []struct {
		id, mark string
		n        int
	}{
		{"plot-detection", `class="det-point"`, 3}, {"plot-detection", `class="det-ci"`, 3}, {"plot-detection", `class="det-none"`, 3},
		{"plot-ttfv", `class="ttfv-point"`, 3}, {"plot-throughput", `class="holds-bar"`, 2}, {"plot-throughput", `class="p50-bar"`, 2},
		{"plot-availability", `class="avail-bar"`, 2}, {"plot-availability", `class="avail-none"`, 2},
	} {
		if got := strings.Count(plot(tc.id), tc.mark); got != tc.n {
			t.Errorf("#%s has %d %s, want %d", tc.id, got, tc.mark, tc.n)
		}
	}
	if strings.Contains(plot("plot-detection"), `data-rate="0.0000" data-lock="redlock" data-nemesis="pause-client"`) {
		t.Error("the no-evidence cell is drawn as a rate of 0")
	}
	// Self-contained: no script, nothing fetched.
	for _, bad := range []string{"<script", "<link", ` src=`, "url(", "@import", "https://"} {
		if strings.Contains(html, bad) {
			t.Errorf("the page is not self-contained: it contains %q", bad)
		}
	}
	if n := strings.Count(html, "http://"); n != strings.Count(html, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("the page names %d http:// addresses besides the SVG namespace", n-strings.Count(html, `xmlns="http://www.w3.org/2000/svg"`))
	}
	if got := strings.Count(html, `<tr class="cell-row`); got != len(c.Rows) {
		t.Errorf("the table has %d rows, want one per cell (%d)", got, len(c.Rows))
	}
}

// TestWriteIndexWithoutNone: without a column without faults, throughput
// is averaged over each lock's cells and the caption says so; without a
// violation, the TTFV plot says there is none.
func TestWriteIndexWithoutNone(t *testing.T) {
	c := synthetic()
	c.Spec.Nemeses = []string{"pause-client", "failover"}
	var rows []Row
	for _, r := range c.Rows {
		if r.Nemesis != "none" && r.Violations == 0 {
			rows = append(rows, r)
		}
	}
	c.Rows = rows
	dir := t.TempDir()
	page, err := WriteIndex(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"averaged over each lock&#39;s cells that ran", `class="ttfv-empty"`, `id="plot-ttfv"`,
		`data-lock="token-lua" data-source="no recorded run">no recorded run</text>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(html, `href="compare.json"`) {
		t.Error("the page links compare.json, which is not in its folder")
	}
}

// The page in a real browser, as report/browser_test.go does: headless
// Chromium renders it and dumps the DOM.

func class(c string) func(map[string]string) bool {
	return func(a map[string]string) bool { return strings.Contains(" "+a["class"]+" ", " "+c+" ") }
}

func TestIndexInBrowser(t *testing.T) {
	page, c := writeSynthetic(t)
	// A probe, in a copy of the page, writes what the browser laid out
	// into the DOM: each plot's box, each run link's resolved address, the
	// smallest rendered size of any SVG text, and whether the page is
	// wider than the window. The page itself has no script.
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	probe := `<script>
let least = 1e9;
for (const svg of document.querySelectorAll("svg.cmp-plot")) {
  const box = svg.getBoundingClientRect();
  svg.setAttribute("data-box", [box.width, box.height].map(v => v.toFixed(1)).join(","));
  if (box.width === 0) continue;
  const scale = box.width / svg.viewBox.baseVal.width;
  for (const t of svg.querySelectorAll("text")) least = Math.min(least, parseFloat(t.getAttribute("font-size")) * scale);
}
for (const a of document.querySelectorAll("a.run")) a.setAttribute("data-resolved", decodeURI(a.href));
document.body.setAttribute("data-min-font", least.toFixed(2));
document.body.setAttribute("data-overflow", String(document.documentElement.scrollWidth > document.documentElement.clientWidth));
</script></body>`
	probed := filepath.Join(filepath.Dir(page), "index.probe.html")
	if err := os.WriteFile(probed, bytes.Replace(b, []byte("</body>"), []byte(probe), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	// At 800 px: the width the page must read at.
	dom := browser.Browse(t, probed, "--dump-dom", "--window-size=800,1600")
	if !strings.Contains(dom, "data-min-font=") {
		t.Fatalf("the probe did not run:\n%.2000s", dom)
	}

	plot := func(id string) string {
		m := regexp.MustCompile(`(?s)<svg id="` + id + `".*?</svg>`).FindString(dom)
		if m == "" {
			t.Fatalf("the rendered page has no <svg id=%q>", id)
		}
		return m
	}
	for _, tc := range []struct {
		id, tag, class string
		n              int
	}{
		{"plot-detection", "circle", "det-point", 3},
		{"plot-detection", "line", "det-ci", 3},
		{"plot-detection", "text", "det-none", 3},
		{"plot-ttfv", "circle", "ttfv-point", 3},
		{"plot-ttfv", "line", "ttfv-median", 1},
		{"plot-throughput", "rect", "holds-bar", 2},
		{"plot-throughput", "rect", "p99-bar", 2},
		{"plot-availability", "rect", "avail-bar", 2},
	} {
		if got := len(browser.Elements(plot(tc.id), tc.tag, class(tc.class))); got != tc.n {
			t.Errorf("#%s has %d %s.%s, want %d", tc.id, got, tc.tag, tc.class, tc.n)
		}
	}
	// Each plot has axes and a legend, and was laid out visibly, no
	// narrower than its text needs.
	for _, id := range []string{"plot-detection", "plot-ttfv", "plot-throughput", "plot-availability"} {
		p := plot(id)
		if len(browser.Elements(p, "line", class("axis"))) < 2 || len(browser.Elements(p, "text", class("legend"))) == 0 || len(browser.Elements(p, "text", class("tick"))) < 2 {
			t.Errorf("#%s lacks its axes, ticks or legend", id)
		}
		svg := browser.Elements(p, "svg", nil)[0]
		var w, h float64
		if n, _ := fmt.Sscanf(svg["data-box"], "%f,%f", &w, &h); n != 2 || w < svgWidth-1 || h < 40 {
			t.Errorf("#%s laid out at %q (width,height), want at least %.0f px wide", id, svg["data-box"], svgWidth)
		}
	}
	// The detection dots are where their rates say, left to right, and
	// the violating cell's interval spans its dot.
	dots := map[string]float64{}
	for _, d := range browser.Elements(plot("plot-detection"), "circle", class("det-point")) {
		var x float64
		fmt.Sscanf(d["cx"], "%f", &x)
		dots[d["data-rate"]] = x
	}
	if len(dots) != 2 || dots["0.0000"] >= dots["0.7500"] {
		t.Errorf("detection dots at %v; want the safe cells' 0 left of the violating cell's 0.75", dots)
	}

	// The table: a row per cell; the n/a and error rows say why.
	rows := browser.Elements(dom, "tr", class("cell-row"))
	if len(rows) != len(c.Rows) {
		t.Errorf("the table has %d rows, want %d", len(rows), len(c.Rows))
	}
	status := map[string]string{}
	for _, r := range rows {
		status[r["data-lock"]+"+"+r["data-nemesis"]] = r["data-status"]
	}
	if status["token-lua+failover"] != "n/a" || status["redlock+failover"] != "error" || status["token-lua+pause-client"] != "ran" {
		t.Errorf("row statuses %v", status)
	}
	why := regexp.MustCompile(`(?s)<tr class="cell-row s-na"[^>]*>.*?<td class="why"[^>]*>(.*?)</td>`).FindStringSubmatch(dom)
	if why == nil || !strings.Contains(why[1], "n/a") || !strings.Contains(why[1], "failover needs &lt;replicas&gt; &amp; a sentinel") {
		t.Errorf("the n/a row does not say why: %v", why)
	}
	// Every run is linked, by its seed, coloured by its outcome, to the
	// report in its folder.
	want := runHrefs(c)
	links := browser.Elements(dom, "a", class("run"))
	if len(links) != len(want) {
		t.Errorf("%d run links, want %d", len(links), len(want))
	}
	base := "file://" + filepath.ToSlash(filepath.Dir(page)) + "/"
	for _, l := range links {
		rel := strings.TrimPrefix(l["data-resolved"], base)
		outcome, ok := want[rel]
		if !ok {
			t.Errorf("a run link to %s (%s), which is no run's report", l["data-resolved"], l["href"])
			continue
		}
		if l["data-outcome"] != outcome || !strings.Contains(l["class"], "o-"+outcome) {
			t.Errorf("the link to %s is marked %s, want %s", rel, l["data-outcome"], outcome)
		}
		if !strings.HasSuffix(rel, "/seed"+l["data-seed"]+"/report.html") {
			t.Errorf("the link labelled seed %s goes to %s", l["data-seed"], rel)
		}
		delete(want, rel)
	}
	for rel := range want {
		t.Errorf("no link to %s", rel)
	}

	// Readable at 800 px: no SVG text below 10 px, and only the table and
	// the plots scroll sideways, not the page.
	var least float64
	fmt.Sscanf(regexp.MustCompile(`data-min-font="([0-9.]+)"`).FindStringSubmatch(dom)[1], "%f", &least)
	if least < 9.95 {
		t.Errorf("at 800 px the smallest SVG text renders at %.2f px, want at least 10", least)
	}
	if !strings.Contains(dom, `data-overflow="false"`) {
		t.Error("at 800 px the page is wider than the window")
	}

	// The screenshot shows the violating seeds' red.
	shot := filepath.Join(t.ArtifactDir(), "compare-800px.png")
	browser.Browse(t, page, "--screenshot="+shot, "--window-size=800,2400", "--hide-scrollbars")
	if n := browser.CountColor(t, shot, colorRunViolation); n < 20 {
		t.Errorf("the screenshot shows %d pixels of the violation red %s, want the violating seeds' links painted", n, colorRunViolation)
	}
	t.Logf("screenshot: %s", shot)
}

// firstViolating is the folder of row r's first violating run.
func firstViolating(r Row) string {
	for _, x := range r.Runs {
		if x.Outcome == OutcomeViolation {
			return x.Dir
		}
	}
	return ""
}

// Cells that ran under different leases and holds are not compared in
// silence: the throughput and availability plots say which ran with what,
// and the table calls acquires that got the lock "granted", not "ok".
func TestPlotsSayWhenCellsRanUnderDifferentSettings(t *testing.T) {
	render := func(c Comparison) string {
		t.Helper()
		page, err := WriteIndex(t.TempDir(), c)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	same := render(synthetic())
	if strings.Contains(same, `class="settings-note"`) {
		t.Error("cells that ran under one setting are said to differ")
	}
	if !strings.Contains(same, "acquires<br>granted") || !strings.Contains(same, "refused by design") {
		t.Error("the page does not say that a refused acquire is no failure")
	}
	c := synthetic()
	for i := range c.Rows {
		if c.Rows[i].Lock == "redlock" {
			c.Rows[i].TTLms, c.Rows[i].HoldMs = 1000, 1000
		}
	}
	html := render(c)
	if n := strings.Count(html, `class="settings-note"`); n != 2 {
		t.Errorf("%d settings notes, want one under the throughput plot and one under availability", n)
	}
	for _, want := range []string{"token-lua: TTL 500 ms, hold 50 ms", "redlock: TTL 1000 ms, hold 1000 ms", "(TTL 1000 ms, hold 1000 ms)</text>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
