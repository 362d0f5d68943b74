package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/internal/browser"
	"github.com/lockchaos/lockchaos/report/palette"
	"github.com/lockchaos/lockchaos/scenarios"
)

// The pages are checked in a real browser: headless Chromium renders them
// (scripts run, CSS applies), and the test reads the DOM it dumps and a
// screenshot it takes. `go test -artifacts ./report` keeps the screenshots.

func TestViolationPageInBrowser(t *testing.T) {
	dir := t.TempDir()
	pausedPastTTL().write(t, dir)
	page, err := WriteRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	dom := browser.Browse(t, page, "--dump-dom")

	why := regexp.MustCompile(`(?s)<p id="why">(.*?)</p>`).FindStringSubmatch(dom)
	if why == nil {
		t.Fatalf("the rendered page has no #why paragraph:\n%.2000s", dom)
	}
	for _, want := range []string{"Clients 2 and 4", "lock:0", "paused for 1.2 s", "past its 500 ms TTL"} {
		if !strings.Contains(why[1], want) {
			t.Errorf("the verdict's explanation %q does not say %q", why[1], want)
		}
	}
	if !strings.Contains(dom, `<span id="verdict" class="badge">violation</span>`) {
		t.Error("the page does not show the verdict violation")
	}
	overlaps := browser.Elements(dom, "rect", func(a map[string]string) bool { return a["class"] == "overlap" })
	lanes := map[string]bool{}
	for _, o := range overlaps {
		if o["data-clients"] != "2,4" || o["data-key"] != "lock:0" {
			t.Errorf("an overlap drawn for clients %s on %s; the only one is clients 2,4 on lock:0", o["data-clients"], o["data-key"])
		}
	}
	// Each overlap is drawn on both clients' lanes, in the timeline and in
	// the zoom: four rectangles at two heights per SVG.
	if len(overlaps) != 4 {
		t.Errorf("%d overlap rectangles, want 4 (both lanes, timeline and zoom)", len(overlaps))
	}
	for _, o := range overlaps {
		lanes[o["y"]] = true
	}
	if len(lanes) < 2 {
		t.Errorf("overlaps drawn on %d lane(s), want both clients' lanes", len(lanes))
	}
	holds := browser.Elements(dom, "rect", func(a map[string]string) bool { return a["class"] == "hold" })
	ends := map[string]string{}
	for _, h := range holds {
		ends[h["data-client"]] = h["data-end"]
	}
	if len(holds) < 3 || ends["2"] != "release-not-held" || ends["4"] != "release" {
		t.Errorf("holds drawn: %v; want client 2's ending release-not-held and client 4's release", ends)
	}
	faults := browser.Elements(dom, "rect", func(a map[string]string) bool { return a["class"] == "fault" && a["data-name"] == "pause-client" })
	targets := browser.Elements(dom, "rect", func(a map[string]string) bool { return a["class"] == "fault-target" && a["data-client"] == "2" })
	if len(faults) == 0 || len(targets) == 0 {
		t.Errorf("the pause of client 2 is not shaded: %d fault bars, %d bands on client 2's lane", len(faults), len(targets))
	}
	for _, want := range []string{`id="acquire-rate"`, "1 increment was lost", `href="porcupine.html"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %s", want)
		}
	}

	shot := filepath.Join(t.ArtifactDir(), "violation.png")
	browser.Browse(t, page, "--screenshot="+shot)
	if n := browser.CountColor(t, shot, "#e03131"); n < 20 {
		t.Errorf("the screenshot shows %d pixels of the overlap red, want the overlaps visible", n)
	}
	t.Logf("screenshot: %s", shot)
}

func TestIndexMatrixInBrowser(t *testing.T) {
	dir := t.TempDir()
	pausedPastTTL().write(t, filepath.Join(dir, "token-lua+pause-client"))
	quiet().write(t, filepath.Join(dir, "token-lua+none"))
	for _, d := range []string{"token-lua+pause-client", "token-lua+none"} {
		if _, err := WriteRun(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	cell := func(lock, nem, verdict, expect string, st scenarios.Status) scenarios.CellResult {
		c := scenarios.CellResult{Name: scenarios.GridName(lock, nem), Kind: scenarios.KindGrid, Lock: lock, Nemesis: nem,
			Verdict: verdict, Got: verdict, Expect: expect, Status: st, Detail: "detail of " + lock + "+" + nem}
		if verdict != "" {
			c.Dir = c.Name
		}
		return c
	}
	sum := scenarios.Summary{
		Locks: []string{"token-lua", "redlock"}, Nemeses: []string{"none", "pause-client", "failover"},
		Cells: []scenarios.CellResult{
			{Name: "pause-past-ttl-token-lua", Kind: scenarios.KindCatalogue, Lock: "token-lua", Nemesis: "pause-client",
				Shows: "the token protects the release, not the hold", Source: "Kleppmann 2016", Expect: "violation",
				Verdict: "violation", Got: "violation", Status: scenarios.StatusMatch, Dir: "token-lua+pause-client"},
			cell("token-lua", "none", "safe", "safe", scenarios.StatusMatch),
			cell("token-lua", "pause-client", "violation", "violation", scenarios.StatusMatch),
			cell("token-lua", "failover", "", "", scenarios.StatusNA),
			cell("redlock", "none", "safe", "safe", scenarios.StatusInconclusive),
			cell("redlock", "pause-client", "violation", "safe", scenarios.StatusMismatch),
			cell("redlock", "failover", "", "", scenarios.StatusSkipped),
		},
	}
	sum.Counts = map[scenarios.Status]int{}
	for _, c := range sum.Cells {
		sum.Counts[c.Status]++
	}
	page, err := WriteIndex(dir, sum)
	if err != nil {
		t.Fatal(err)
	}
	// A copy of the page with a probe that writes each cell's rendered
	// colours into the DOM: the assertions are about what the browser
	// painted, not about class names.
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	probe := `<script>for (const td of document.querySelectorAll("td.cell")) { const s = getComputedStyle(td);
td.setAttribute("data-bg", s.backgroundColor); td.setAttribute("data-border", s.borderTopColor + " " + s.borderTopWidth); td.setAttribute("data-bar", s.boxShadow); }</script></body>`
	probed := filepath.Join(dir, "index.probe.html")
	if err := os.WriteFile(probed, bytes.Replace(b, []byte("</body>"), []byte(probe), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := browser.Browse(t, probed, "--dump-dom")

	cells := browser.Elements(dom, "td", func(a map[string]string) bool { return strings.Contains(a["class"], "cell") })
	got := map[string]map[string]string{}
	for _, c := range cells {
		got[c["data-lock"]+"+"+c["data-nemesis"]] = c
	}
	if len(cells) != 6 {
		t.Fatalf("the matrix has %d cells, want 2 locks × 3 faults = 6: %v", len(cells), got)
	}
	// Coloured by how the cell compares with its expectation first: what
	// matched is pale whatever its verdict, what fails is painted in full.
	matched, na := rgb(ColorCellMatch), rgb(palette.NA)
	for _, tc := range []struct {
		name, bg, status string
	}{
		{"token-lua+none", matched, "match"},
		{"token-lua+pause-client", matched, "match"},
		{"token-lua+failover", na, "n/a"},
		{"redlock+none", rgb(ColorCellMissing), "inconclusive"},
		{"redlock+pause-client", rgb(palette.Mismatch), "mismatch"},
		{"redlock+failover", rgb(palette.Skipped), "skipped"},
	} {
		c := got[tc.name]
		if c == nil {
			t.Errorf("no cell %s", tc.name)
			continue
		}
		if c["data-bg"] != tc.bg || c["data-status"] != tc.status {
			t.Errorf("cell %s: background %s, status %s; want %s, %s", tc.name, c["data-bg"], c["data-status"], tc.bg, tc.status)
		}
	}
	// The verdict second: a bar in its colour.
	for name, verdict := range map[string]string{"token-lua+none": palette.Safe, "token-lua+pause-client": palette.Violation, "redlock+pause-client": palette.Violation} {
		if b := got[name]["data-bar"]; !strings.Contains(b, rgb(verdict)) {
			t.Errorf("cell %s: bar %q, want the verdict's colour %s", name, b, rgb(verdict))
		}
	}
	links := browser.Elements(dom, "a", func(a map[string]string) bool { return strings.HasSuffix(a["href"], "report.html") })
	hrefs := map[string]bool{}
	for _, l := range links {
		hrefs[l["href"]] = true
	}
	if !hrefs["token-lua+pause-client/report.html"] || !hrefs["token-lua+none/report.html"] {
		t.Errorf("the cells that ran do not link to their runs: %v", hrefs)
	}
	for _, want := range []string{`data-scenario="pause-past-ttl-token-lua"`, "the token protects the release, not the hold", "What failed"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the index lacks %q", want)
		}
	}

	shot := filepath.Join(t.ArtifactDir(), "index.png")
	browser.Browse(t, page, "--screenshot="+shot)
	if n := browser.CountColor(t, shot, palette.Mismatch); n < 200 {
		t.Errorf("the screenshot shows %d pixels of the mismatch colour, want the mismatched cell painted", n)
	}
	t.Logf("screenshot: %s", shot)
}

// rgb is a #rrggbb colour as getComputedStyle writes it.
func rgb(hex string) string {
	var r, g, b int
	fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b)
	return fmt.Sprintf("rgb(%d, %d, %d)", r, g, b)
}

// TestRunPageLanesInBrowser renders a run with faults that overlap in
// time, faults on lock nodes, a hold that outlived its lease and acquires
// that failed, at 1280 and at 800 px; `make screenshots` writes the
// screenshots to docs/ (docs/report-lanes.png, docs/report-800px.png).
func TestRunPageLanesInBrowser(t *testing.T) {
	page, html := writePage(t, lanes())
	// A probe writes what the browser laid out into the DOM: the smallest
	// rendered size of any SVG text of the page (its font size times the
	// SVG's scale), and the box of every fault bar of the full timeline.
	probe := `<script>
let least = 1e9;
for (const svg of document.querySelectorAll("svg")) {
  const box = svg.getBoundingClientRect(); if (box.width === 0) continue;
  const scale = box.width / svg.viewBox.baseVal.width;
  for (const t of svg.querySelectorAll("text")) least = Math.min(least, parseFloat(t.getAttribute("font-size")) * scale);
}
document.body.setAttribute("data-min-font", least.toFixed(2));
for (const r of document.querySelectorAll("#timeline rect.fault")) { const b = r.getBoundingClientRect();
  r.setAttribute("data-box", [b.left, b.top, b.width, b.height].map(v => v.toFixed(1)).join(",")); }
</script></body>`
	probed := filepath.Join(filepath.Dir(page), "report.probe.html")
	if err := os.WriteFile(probed, []byte(strings.Replace(html, "</body>", probe, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := browser.Browse(t, probed, "--dump-dom")
	full := regexp.MustCompile(`(?s)<svg id="timeline".*?</svg>`).FindString(dom)
	if full == "" {
		t.Fatal("no #timeline SVG")
	}

	// Two faults that overlap in time are both visible: each in its own
	// lane, coloured by its action, with a box the browser laid out.
	faults := browser.Elements(full, "rect", func(a map[string]string) bool { return a["class"] == "fault" })
	byName := map[string]map[string]string{}
	for _, f := range faults {
		byName[f["data-name"]] = f
	}
	pause, latency := byName["pause-client"], byName["latency"]
	if pause == nil || latency == nil {
		t.Fatalf("the timeline lacks the pause or the latency fault: %v", faults)
	}
	if pause["y"] == latency["y"] || pause["fill"] == latency["fill"] {
		t.Errorf("the overlapping pause and latency share a lane or a colour: y %s/%s, fill %s/%s", pause["y"], latency["y"], pause["fill"], latency["fill"])
	}
	for _, f := range []map[string]string{pause, latency} {
		var x, y, w, h float64
		if n, _ := fmt.Sscanf(f["data-box"], "%f,%f,%f,%f", &x, &y, &w, &h); n != 4 || w < 10 || h < 10 {
			t.Errorf("fault %s is not visible: box %q", f["data-name"], f["data-box"])
		}
	}
	// Faults are labelled with whom they hit: a node fault with its node.
	if crash := byName["crash-restart"]; crash == nil || crash["data-where"] != "node 1" || crash["data-action"] != "crash" {
		t.Errorf("the crash of node 1 is not labelled with its node: %v", crash)
	}
	if !strings.Contains(full, `>node 1</text>`) || !strings.Contains(full, `>client 2</text>`) {
		t.Error("the fault bars do not name node 1 and client 2")
	}
	// Node lanes: one per lock node, with what the faults did to them.
	nodeLanes := browser.Elements(full, "text", func(a map[string]string) bool { return strings.Contains(a["class"], "node-lane") })
	if len(nodeLanes) != 3 {
		t.Errorf("%d node lanes, want one per lock node (3)", len(nodeLanes))
	}
	marks := browser.Elements(full, "rect", func(a map[string]string) bool { return a["class"] == "node-mark" })
	got := map[string]string{}
	for _, m := range marks {
		got[m["data-node"]] = m["data-start"] + "/" + m["data-end"]
	}
	if got["1"] != "killed/restarted" || got["2"] != "clock +750ms/clock restored" || got["0"] != "" {
		t.Errorf("node marks %v; want node 1 killed/restarted, node 2's clock +750ms, nothing on node 0", got)
	}
	// The lease's end on the server, on client 2's lane, beside the hold
	// it still believed it had.
	expiry := browser.Elements(full, "line", func(a map[string]string) bool { return a["class"] == "lease-expiry" })
	if len(expiry) != 1 || expiry[0]["data-client"] != "2" || expiry[0]["data-t"] != "3500.5" {
		t.Errorf("lease-expiry marks %v; want one, client 2's lease gone by t=3500.5 ms", expiry)
	}
	if len(browser.Elements(full, "rect", func(a map[string]string) bool { return a["class"] == "past-lease" })) != 1 {
		t.Error("client 2's hold past its lease is not hatched")
	}
	// Failed and unknown acquires.
	if n := len(browser.Elements(full, "rect", func(a map[string]string) bool { return a["class"] == "acq-fail" })); n != 8 {
		t.Errorf("%d refused-acquire marks, want 8", n)
	}
	if n := len(browser.Elements(full, "path", func(a map[string]string) bool { return a["class"] == "acq-unknown" })); n != 1 {
		t.Errorf("%d unknown-acquire marks, want 1", n)
	}
	// The rate and latency plots, with the fault windows shaded.
	points := browser.Elements(dom, "circle", func(a map[string]string) bool { return strings.HasPrefix(a["class"], "lat-point") })
	outcomes := map[string]int{}
	for _, p := range points {
		outcomes[p["data-outcome"]]++
	}
	if outcomes["ok"] != 3 || outcomes["fail"] != 8 || outcomes["unknown"] != 1 {
		t.Errorf("latency plot points by outcome %v; want 3 ok, 8 fail, 1 unknown", outcomes)
	}
	if !strings.Contains(dom, `id="latency-plot"`) || !strings.Contains(dom, `id="rate-plot"`) ||
		len(browser.Elements(dom, "rect", func(a map[string]string) bool { return a["class"] == "plot-fault" })) != 8 {
		t.Error("the rate and latency plots with their 4 fault windows each are missing")
	}
	// The overlaps table names faults, groups pairs into incidents, and
	// links each row to its zoom.
	for _, want := range []string{`id="incidents"`, "pause-client client 2 (fault 1)", `href="#zoom-1"`, `id="zoom-1"`, `id="release-max"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s", want)
		}
	}

	shot := filepath.Join(t.ArtifactDir(), "lanes.png")
	browser.Browse(t, page, "--screenshot="+shot, "--hide-scrollbars")
	if n := browser.CountColor(t, shot, "#e03131"); n < 20 {
		t.Errorf("the screenshot shows %d pixels of the overlap red", n)
	}
	browser.Publish(t, shot, filepath.Join("..", "docs", "report-lanes.png"))

	// At 800 px no SVG text renders below 10 px.
	narrow := browser.Browse(t, probed, "--dump-dom", "--window-size=800,1600")
	m := regexp.MustCompile(`data-min-font="([0-9.]+)"`).FindStringSubmatch(narrow)
	if m == nil {
		t.Fatal("the probe did not run")
	}
	var least float64
	fmt.Sscanf(m[1], "%f", &least)
	if least < 9.95 {
		t.Errorf("at 800 px the smallest SVG text renders at %.2f px, want at least 10", least)
	}
	shot800 := filepath.Join(t.ArtifactDir(), "report-800px.png")
	browser.Browse(t, page, "--screenshot="+shot800, "--window-size=800,1600", "--hide-scrollbars")
	browser.Publish(t, shot800, filepath.Join("..", "docs", "report-800px.png"))
}
