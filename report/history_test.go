package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// The report tests render hand-written histories: the checker turns them
// into result.json exactly as after a real run, and no Redis is needed.

const t0 = int64(1_000_000_000_000) // CLOCK_MONOTONIC ns of t=0

// hb builds a history, times in ms since the run started.
type hb struct{ events []history.Event }

func (h *hb) add(ms float64, e history.Event) {
	e.Time = t0 + int64(ms*1e6)
	h.events = append(h.events, e)
}

func (h *hb) start(lock string, nemeses []string, clients int, ttlMs, holdMs int64) {
	h.add(0, history.Event{Kind: history.RunStart, Client: history.NoClient, Run: &history.RunInfo{
		Lock: lock, Nemesis: nemeses, Seed: 1, Clients: clients, TTLms: ttlMs, NodeRoles: []string{"n0 primary"},
	}})
}

// hold records one critical section of client c on lock:0: acquire at
// from, read, write of read+1 at to, release at to answered by release
// (history.OK, or history.Fail for not-held).
func (h *hb) hold(c int, from, to float64, read int64, release history.Kind) {
	k := "lock:0"
	h.add(from, history.Event{Kind: history.Invoke, Client: c, F: history.Acquire, Key: k})
	h.add(from+0.5, history.Event{Kind: history.OK, Client: c, F: history.Acquire, Key: k})
	h.add(from+0.6, history.Event{Kind: history.Invoke, Client: c, F: history.Read, Key: k})
	h.add(from+0.8, history.Event{Kind: history.OK, Client: c, F: history.Read, Key: k, Value: history.Int64(read)})
	h.add(to-1, history.Event{Kind: history.Invoke, Client: c, F: history.Write, Key: k, Value: history.Int64(read + 1)})
	h.add(to-0.8, history.Event{Kind: history.OK, Client: c, F: history.Write, Key: k, Value: history.Int64(read + 1)})
	h.add(to, history.Event{Kind: history.Invoke, Client: c, F: history.Release, Key: k})
	done := history.Event{Kind: release, Client: c, F: history.Release, Key: k}
	if release == history.Fail {
		done.Error = history.ErrNotHeld
	}
	h.add(to+0.4, done)
}

func (h *hb) fault(id int, name string, client int, from, to float64) {
	f := &history.Fault{ID: id, Name: name, Action: history.ActionPause, Target: fmt.Sprintf("client %d", client), Clients: []int{client},
		Stopped: []int{client}, Params: map[string]string{"signal": "SIGSTOP"}}
	h.add(from, history.Event{Kind: history.FaultStart, Client: history.NoClient, Fault: f})
	h.add(to, history.Event{Kind: history.FaultEnd, Client: history.NoClient, Fault: f})
}

func (h *hb) end(ms float64, final int64) {
	h.add(ms, history.Event{Kind: history.Probe, Client: history.NoClient, F: "lock", Key: "lock:0", PTTL: []int64{-2}})
	h.add(ms, history.Event{Kind: history.Probe, Client: history.NoClient, F: "resource", Key: "lock:0", Value: history.Int64(final)})
	h.add(ms+1, history.Event{Kind: history.RunEnd, Client: history.NoClient})
}

// write stores the history in dir and checks it into result.json.
func (h *hb) write(t *testing.T, dir string) checker.Result {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h.events {
		f.Write(append(e.Marshal(), '\n'))
	}
	f.Close()
	res := checker.Check(h.events, checker.Options{})
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return res
}

// writePage stores h in a new run folder, checks it and renders its page:
// the page's path and its HTML.
func writePage(t *testing.T, h *hb) (page, html string) {
	t.Helper()
	dir := t.TempDir()
	h.write(t, dir)
	page, err := WriteRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	return page, string(b)
}

// pageOf is the HTML of h's page (writePage).
func pageOf(t *testing.T, h *hb) string {
	t.Helper()
	_, html := writePage(t, h)
	return html
}

// pausedPastTTL is the textbook violation: client 2 acquires, is paused
// for 1.2 s (past its 500 ms TTL) from t=3.1 s; client 4 acquires the
// expired lock and holds it for 300 ms; client 2 wakes up, writes, and its
// release finds the lease gone. Both wrote 2: one update lost.
func pausedPastTTL() *hb {
	h := &hb{}
	h.start("token-lua", []string{"pause-client"}, 5, 500, 300)
	h.hold(0, 100, 400, 0, history.OK)
	h.hold(2, 3000, 4320, 1, history.Fail)
	h.fault(1, "pause-client", 2, 3100, 4300)
	h.hold(4, 3600, 3901, 1, history.OK)
	h.end(5000, 2)
	return h
}

// quiet is a safe run: two clients taking turns.
func quiet() *hb {
	h := &hb{}
	h.start("token-lua", nil, 2, 500, 100)
	for i := 0; i < 6; i++ {
		h.hold(i%2, float64(200+300*i), float64(300+300*i), int64(i), history.OK)
	}
	h.end(2500, 6)
	return h
}

// faultOn records a fault of any kind: on clients, on lock nodes, or on
// neither (a target only).
func (h *hb) faultOn(id int, name string, action history.Action, target string, clients, nodes []int, params map[string]string, from, to float64) {
	f := &history.Fault{ID: id, Name: name, Action: action, Target: target, Clients: clients, Nodes: nodes, Params: params}
	if action == history.ActionPause && len(clients) > 0 {
		f.Stopped = clients
	}
	h.add(from, history.Event{Kind: history.FaultStart, Client: history.NoClient, Fault: f})
	h.add(to, history.Event{Kind: history.FaultEnd, Client: history.NoClient, Fault: f})
}

// attempt records an acquire of lock:0 by c that did not return the lock:
// refused (history.Fail) or unknown (history.Info).
func (h *hb) attempt(c int, at, took float64, how history.Kind) {
	h.add(at, history.Event{Kind: history.Invoke, Client: c, F: history.Acquire, Key: "lock:0"})
	e := history.Event{Kind: how, Client: c, F: history.Acquire, Key: "lock:0"}
	if how == history.Info {
		e.Error = "timeout"
	}
	h.add(at+took, e)
}

// lanes is pausedPastTTL with more to draw: a latency fault on every
// client link that overlaps the pause in time, a crash of lock node 1 and
// a clock jump of node 2 (faults on nodes, not clients), and acquires that
// were refused or got no answer while client 2 was paused.
func lanes() *hb {
	h := &hb{}
	h.add(0, history.Event{Kind: history.RunStart, Client: history.NoClient, Run: &history.RunInfo{
		Lock: "redlock", Nemesis: []string{"pause-client", "latency", "crash-restart", "clock-jump"}, Seed: 7, Clients: 5,
		TTLms: 500, NodeRoles: []string{"n0 primary", "n1 primary", "n2 primary"},
	}})
	h.hold(0, 100, 400, 0, history.OK)
	h.hold(2, 3000, 4320, 1, history.Fail)
	h.fault(1, "pause-client", 2, 3100, 4300)
	h.faultOn(2, "latency", history.ActionNetwork, "all 5 client links", nil, nil, map[string]string{"delay": "100ms"}, 2900, 3700)
	h.faultOn(3, "crash-restart", history.ActionCrash, "lock node 1 (n1), restarted after 400ms", nil, []int{1}, nil, 1000, 1400)
	h.faultOn(4, "clock-jump", history.ActionClock, "clock of lock node 2 (n2) forward by 750ms", nil, []int{2},
		map[string]string{"offset": "750ms", "direction": "forward"}, 3200, 3900)
	for i := 0; i < 8; i++ {
		h.attempt(1, 3050+float64(i)*60, 2, history.Fail)
	}
	h.attempt(3, 3300, 500, history.Info)
	h.hold(4, 3600, 3901, 1, history.OK)
	h.end(5000, 2)
	return h
}
