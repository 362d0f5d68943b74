package report

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/browser"
)

// busy is pausedPastTTL with the acquires a real run has: clients 1 and 3
// refused every 2 ms (with latencies spread over a decade) while others
// hold, and client 1 refused once more, far from the rest.
func busy() *hb {
	h := pausedPastTTL()
	for i := 0; i < 1500; i++ {
		at := 500 + float64(i)*2
		h.attempt(1, at, 0.2+float64(i%31)*0.05, history.Fail)
		h.attempt(3, at+1, 0.2+float64(i%29)*0.05, history.Fail)
	}
	h.attempt(1, 4700, 1, history.Fail)
	return h
}

func count(el map[string]string) int {
	n, _ := strconv.Atoi(el["data-count"])
	return n
}

// Refusals a few milliseconds apart on one lane are one mark whose tooltip
// counts them; one far from them is its own mark; no refusal is lost.
func TestNeighbouringRefusalsAreOneMark(t *testing.T) {
	dom := pageOf(t, busy())
	i := strings.Index(dom, `id="timeline"`)
	full := dom[i : i+strings.Index(dom[i:], "</svg>")]
	marks := browser.Elements(full, "rect", func(a map[string]string) bool { return a["class"] == "acq-fail" })
	per := map[string][]int{}
	total := 0
	for _, m := range marks {
		per[m["data-client"]] = append(per[m["data-client"]], count(m))
		total += count(m)
	}
	if total != 3001 {
		t.Errorf("the marks count %d refusals, want all 3001", total)
	}
	// 3 s of refusals every 2 ms is 268 SVG units: far fewer marks than
	// refusals, and client 1's lone refusal at t=4.7 s its own.
	if len(marks) > 20 {
		t.Errorf("%d marks for 3001 refusals on 2 lanes: neighbouring ones were not merged", len(marks))
	}
	if c1 := per["1"]; len(c1) < 2 || c1[len(c1)-1] != 1 {
		t.Errorf("client 1's marks count %v: the lone refusal at t=4.7 s should be a mark of its own", c1)
	}
	if !strings.Contains(full, "acquires of lock:0 that completed from t=") {
		t.Error("a merged mark's tooltip does not say how many acquires it stands for, and when")
	}
}

// The latency plot draws at most plMaxPoints points, keeps every point of
// a rare outcome (the grants among thousands of refusals), and says on the
// page how it drew the rest.
func TestLatencyPlotIsBoundedAndKeepsTheRareOutcomes(t *testing.T) {
	h := busy()
	for i := 0; i < 40; i++ {
		h.attempt(0, 600+float64(i)*50, 3, history.Info)
	}
	dom := pageOf(t, h)
	points := browser.Elements(dom, "circle", func(a map[string]string) bool { return strings.HasPrefix(a["class"], "lat-point") })
	if len(points) > plMaxPoints {
		t.Errorf("%d points, want at most %d", len(points), plMaxPoints)
	}
	n := map[string]int{}
	for _, p := range points {
		n[p["data-outcome"]] += count(p)
	}
	// 3 grants, 40 unknown: every one drawn.
	if n[checker.AttemptOK] != 3 || n[checker.AttemptUnknown] != 40 {
		t.Errorf("points stand for %v acquires; want the 3 grants and 40 unknown all drawn", n)
	}
	if n[checker.AttemptFailed] == 0 || n[checker.AttemptFailed] >= 3001 {
		t.Errorf("points stand for %d of 3001 refusals; they should be thinned, not dropped or all drawn", n[checker.AttemptFailed])
	}
	if !strings.Contains(dom, `id="latency-drawn"`) || !strings.Contains(dom, "acquires are not drawn") {
		t.Error("the page does not say how the latency plot was thinned")
	}
	// Every grant is a bar in the rate plot's band of its own.
	if !strings.Contains(dom, `class="rate-ok"`) || !strings.Contains(dom, `>granted</text>`) {
		t.Error("the rate plot has no band of grants")
	}
}

// The next-steps box: a violation offers shrink and the replay command; lost
// updates point to the fenced lock of the store; a safe run offers seeds.
func TestNextStepsSayWhatToDo(t *testing.T) {
	dom := pageOf(t, pausedPastTTL())
	for _, want := range []string{`id="next-steps"`, `id="next-shrink"`, "lockchaos shrink ", `id="next-fence"`,
		"lockchaos compare --locks token-lua,fenced --nemeses pause-client"} {
		if !strings.Contains(dom, want) {
			t.Errorf("a violation's page lacks %q", want)
		}
	}
	if strings.Contains(dom, `id="next-seeds"`) {
		t.Error("a violation's page offers more seeds")
	}
	safe := (&Run{Dir: "results/x", Result: checker.Result{Verdict: checker.Safe, Lock: "etcd-mutex", Nemesis: []string{"pause-client"}}}).nextSteps("")
	var ids []string
	for _, s := range safe {
		ids = append(ids, s.ID)
	}
	if len(safe) != 1 || safe[0].ID != "next-seeds" || safe[0].Cmd != "lockchaos compare --locks etcd-mutex --nemeses pause-client --seeds 20 --out results/x-seeds" {
		t.Errorf("a safe run's next steps are %v (%+v); want more seeds only", ids, safe)
	}
}

// The pairs table lists a few pairs of each incident under its heading and
// says how many more each had.
func TestPairsAreGroupedByIncident(t *testing.T) {
	h := &hb{}
	h.start("token-lua", []string{"pause-client"}, 6, 500, 100)
	h.hold(0, 100, 2000, 0, history.Fail)
	h.fault(1, "pause-client", 0, 150, 1900)
	for i := 0; i < 5; i++ {
		h.hold(1+i%5, 700+float64(i)*200, 850+float64(i)*200, int64(i), history.OK)
	}
	h.hold(2, 3000, 5000, 5, history.Fail)
	h.fault(2, "pause-client", 2, 3050, 4900)
	for i := 0; i < 4; i++ {
		h.hold(3+i%3, 3600+float64(i)*200, 3750+float64(i)*200, int64(6+i), history.OK)
	}
	h.end(5500, 10)
	dom := pageOf(t, h)
	heads := browser.Elements(dom, "tr", func(a map[string]string) bool { return a["class"] == "pairs-incident" })
	rows := browser.Elements(dom, "tr", func(a map[string]string) bool { return a["class"] == "overlap-row" })
	more := browser.Elements(dom, "tr", func(a map[string]string) bool { return a["class"] == "more-pairs" })
	byIncident := map[string]int{}
	for _, r := range rows {
		byIncident[r["data-incident"]]++
	}
	if len(heads) != 2 || byIncident["1"] != PairsPerIncident || byIncident["2"] != PairsPerIncident || len(more) != 2 {
		t.Errorf("%d incident headings, rows per incident %v, %d more-rows; want 2 headings, %d rows each, 2 more-rows",
			len(heads), byIncident, len(more), PairsPerIncident)
	}
	if !strings.Contains(dom, "… and 2 more pairs in incident 1") || !strings.Contains(dom, "… and 1 more pair in incident 2") {
		t.Error("the table does not say how many more pairs each incident had")
	}
	if !slices.IsSortedFunc(rows, func(a, b map[string]string) int { return strings.Compare(a["data-incident"], b["data-incident"]) }) {
		t.Error("the rows are not grouped by incident")
	}
}
