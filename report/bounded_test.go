package report

import (
	"cmp"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/browser"
	"github.com/lockchaos/lockchaos/rundir"
)

// long is a run of seconds×1000 ms too long to draw whole: four clients
// take turns with lock:0 every 20 ms, each refused twice meanwhile; a
// pause of client 1 (fault n) every 400 ms that hits no hold; and, at
// violationAt, pausedPastTTL's violation: client 2 paused past its TTL
// while client 3 takes the lock.
func long(seconds int, violationAt float64) *hb {
	h := &hb{}
	h.add(0, history.Event{Kind: history.RunStart, Client: history.NoClient, Run: &history.RunInfo{
		Lock: "token-lua", Nemesis: []string{"pause-client"}, Seed: 1, Clients: 4, TTLms: 500, NodeRoles: []string{"n0 primary"},
	}})
	end := float64(seconds) * 1000
	read := int64(0)
	id := 0
	for t := 100.0; t+20 < end; t += 20 {
		if violationAt > 0 && t >= violationAt-100 && t < violationAt+1500 {
			continue
		}
		c := int(t/20) % 4
		if c == 1 {
			c = 0 // client 1 is the one paused: it never holds
		}
		h.hold(c, t, t+10, read, history.OK)
		read++
		h.attempt((c+1)%4, t+2, 1, history.Fail)
		h.attempt((c+2)%4, t+5, 1, history.Fail)
	}
	for t := 200.0; t+100 < end; t += 400 {
		if violationAt > 0 && t >= violationAt-500 && t < violationAt+1600 {
			continue
		}
		id++
		h.fault(id, "pause-client", 1, t, t+50)
	}
	if violationAt > 0 {
		h.hold(2, violationAt, violationAt+1320, read, history.Fail)
		id++
		h.fault(id, "pause-client", 2, violationAt+100, violationAt+1300)
		h.hold(3, violationAt+600, violationAt+901, read, history.OK)
		read++
	}
	h.end(end, read)
	return h
}

// shuffled returns events in an arrival order: each client's events in
// order, clients interleaved at random, as history.jsonl holds them.
func shuffled(events []history.Event, seed int64) []history.Event {
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b history.Event) int { return cmp.Compare(a.Time, b.Time) })
	byClient := map[int][]history.Event{}
	var order []int
	for _, e := range events {
		if _, ok := byClient[e.Client]; !ok {
			order = append(order, e.Client)
		}
		byClient[e.Client] = append(byClient[e.Client], e)
	}
	rng := rand.New(rand.NewSource(seed))
	var out []history.Event
	for len(out) < len(events) {
		c := order[rng.Intn(len(order))]
		if q := byClient[c]; len(q) > 0 {
			out = append(out, q[0])
			byClient[c] = q[1:]
		}
	}
	return out
}

// TestLongRunReportIsBounded renders a history of 300,000 events with a
// violation in its middle: report.html and porcupine.html stay within a
// few MB, the page draws the violation's window in detail (checked in the
// DOM headless Chromium renders), and says what it left out.
func TestLongRunReportIsBounded(t *testing.T) {
	dir := t.TempDir()
	h := long(400, 200_000)
	h.events = shuffled(h.events, 1)
	res := h.write(t, dir)
	if res.Verdict != checker.Violation || res.Mutex.IncidentCount != 1 {
		t.Fatalf("the long history should hold one incident: %s", res.Summary)
	}
	page, err := WriteRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Bounded || r.events != nil || r.Events != len(h.events) {
		t.Fatalf("a history of %d events is drawn whole (bounded %v, %d events kept)", r.Events, r.Bounded, len(r.events))
	}
	kept := 0
	for _, w := range r.windows {
		kept += len(w.events)
	}
	if kept > 20000 {
		t.Errorf("the windows keep %d events of %d: not bounded", kept, len(h.events))
	}
	const limit = 3 << 20
	for _, f := range []string{page, filepath.Join(dir, rundir.PorcupineFile)} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes (history: %d events)", filepath.Base(f), st.Size(), len(h.events))
		if st.Size() > limit {
			t.Errorf("%s is %d bytes, over %d", filepath.Base(f), st.Size(), limit)
		}
	}
	porc, _ := os.ReadFile(filepath.Join(dir, rundir.PorcupineFile))
	for _, want := range []string{`"Tag":"shown"`, `"Tag":"overlaps"`, `id="bounded"`, `pause-client client 2`} {
		if !strings.Contains(string(porc), want) {
			t.Errorf("porcupine.html lacks %s", want)
		}
	}

	dom := browser.Browse(t, page, "--dump-dom")
	win := regexp.MustCompile(`(?s)<div class="window-panel" id="(window-\d+)">.*?</svg>`).FindAllStringSubmatch(dom, -1)
	var violation string
	for _, w := range win {
		overlaps := browser.Elements(w[0], "rect", func(a map[string]string) bool { return a["class"] == "overlap" })
		if len(overlaps) > 0 {
			violation = w[1]
			if overlaps[0]["data-clients"] != "2,3" {
				t.Errorf("the window's overlap is of clients %s, want 2,3", overlaps[0]["data-clients"])
			}
			// Client 2's hold through its pause, whole.
			holds := browser.Elements(w[0], "rect", func(a map[string]string) bool {
				return a["class"] == "hold" && a["data-client"] == "2" && a["data-end"] == "release-not-held"
			})
			if len(holds) != 1 {
				t.Errorf("the violation's window draws %d holds of client 2 that found their lease gone, want 1", len(holds))
			}
		}
	}
	if violation == "" {
		t.Fatalf("no window of the page draws the violation (%d windows)", len(win))
	}
	if !strings.Contains(dom, `class="zoom-link" href="#`+violation+`"`) {
		t.Errorf("the incident's row does not link to its window %s", violation)
	}
	for _, want := range []string{`id="omitted"`, "too many to draw whole", "history.jsonl holds every event", `id="more-faults"`,
		`class="incident-mark"`, `class="window-mark"`, `class="holds-rate"`, `class="lat-p99"`, `id="rate-plot"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if n := len(browser.Elements(dom, "rect", func(a map[string]string) bool { return a["class"] == "fault-band" })); n == 0 || n > 1000 {
		t.Errorf("%d fault bands in the overview of %d faults", n, len(res.Faults))
	}
	shot := filepath.Join(t.ArtifactDir(), "long.png")
	browser.Browse(t, page, "--screenshot="+shot, "--window-size=1280,2400")
	if n := browser.CountColor(t, shot, "#e03131"); n < 20 {
		t.Errorf("the screenshot shows %d pixels of the overlap red", n)
	}
}

// TestShortRunIsDrawnWhole: a run of a few seconds is drawn as it always
// was: every hold in one timeline, no windows, nothing left out.
func TestShortRunIsDrawnWhole(t *testing.T) {
	dir := t.TempDir()
	h := long(8, 4000)
	h.write(t, dir)
	page, err := WriteRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bounded || len(r.Holds) != r.Result.Mutex.Holds {
		t.Fatalf("a short run is bounded (%v) or draws %d of its %d holds", r.Bounded, len(r.Holds), r.Result.Mutex.Holds)
	}
	b, _ := os.ReadFile(page)
	if strings.Contains(string(b), `id="omitted"`) || strings.Contains(string(b), `class="window-panel"`) || !strings.Contains(string(b), `id="zoom-1"`) {
		t.Error("a short run's page has windows or omissions, or lacks its zoom")
	}
	if n := strings.Count(string(b), `class="hold"`); n < r.Result.Mutex.Holds {
		t.Errorf("%d holds drawn of %d", n, r.Result.Mutex.Holds)
	}
}

// TestWindowHasTheHoldsThatSpanIt: a client paused through a whole window
// with the lock held has no event in it; the window still draws its hold,
// from the acquire before the window to the release after it.
func TestWindowHasTheHoldsThatSpanIt(t *testing.T) {
	h := &hb{}
	h.start("token-lua", []string{"pause-client"}, 2, 500, 100)
	h.hold(1, 100, 200, 0, history.OK)
	h.hold(0, 500, 2500, 1, history.Fail) // spans [1000, 2000] with no event inside
	h.hold(1, 1200, 1300, 1, history.OK)
	h.hold(1, 2700, 2800, 2, history.OK)
	h.end(3000, 3)
	origin := h.events[0].Time
	ws := []*window{{FromMs: 1000, ToMs: 2000}}
	c := newCollector(ws, origin)
	for _, e := range shuffled(h.events, 2) {
		c.add(e)
	}
	c.finish(origin)
	var got []string
	for _, hd := range ws[0].holds {
		got = append(got, fmt.Sprintf("%d:%.1f-%.1f:%s", hd.Client, hd.StartMs, hd.EndMs, hd.End))
	}
	want := "0:500.5-2500.0:release-not-held 1:1200.5-1300.0:release"
	if strings.Join(got, " ") != want {
		t.Errorf("the window's holds: %v, want %s", got, want)
	}
}

// TestSeriesCountsAsTheChecker: the binned series, built from a history in
// arrival order, counts acquires by outcome as checker.Rate does from the
// time-ordered attempts, and its holds are the checker's.
func TestSeriesCountsAsTheChecker(t *testing.T) {
	h := lanes()
	events := shuffled(h.events, 3)
	s := checker.NewSeries(h.events[0].Time, 500, 5000)
	for _, e := range events {
		s.Add(e)
	}
	s.Finish()
	want := rate(checker.Attempts(h.events), 500, 5000)
	holds := 0
	for i, b := range s.Buckets {
		if b.RateBucket != want[i] {
			t.Errorf("bucket %d: %+v, want %+v", i, b.RateBucket, want[i])
		}
		holds += b.Holds
		if b.Completed() > 0 && (b.Quantile(0.5) <= 0 || b.Quantile(0.99) > b.MaxMs || b.Quantile(0.5) > b.Quantile(0.99)) {
			t.Errorf("bucket %d: quantiles p50 %v p99 %v max %v", i, b.Quantile(0.5), b.Quantile(0.99), b.MaxMs)
		}
	}
	if n := len(checker.Holds(h.events)); holds != n {
		t.Errorf("the series counts %d holds, the checker %d", holds, n)
	}
}
