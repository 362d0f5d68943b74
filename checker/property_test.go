package checker

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"

	"github.com/lockchaos/lockchaos/history"
)

// truthHold is a critical section as the generator lived it.
type truthHold struct {
	key        string
	client     int
	start, end int64
	how        HoldEnd
}

// generated is a random history with the ground truth the checker must
// reconstruct from its events alone.
type generated struct {
	events         []history.Event // in time order per client
	holds          []truthHold
	ops            int // operations porcupine must receive
	runEnd         bool
	unexpectedExit bool
}

// genHistory draws a run of a few sequential clients on a few keys, with
// timestamps in nanoseconds so close together that ties are common, every
// kind of answer to acquire and release, losses, reentry, deaths (planned or
// not), restarts, and a run that ends properly or is cut short.
func genHistory(t *rapid.T) generated {
	var g generated
	nClients := rapid.IntRange(1, 5).Draw(t, "clients")
	nKeys := rapid.IntRange(1, 2).Draw(t, "keys")
	reentrant := rapid.Bool().Draw(t, "reentrant")
	g.events = append(g.events, history.Event{Time: 0, Kind: history.RunStart, Client: history.NoClient,
		Run: &history.RunInfo{Lock: "gen", Nemesis: []string{}}})

	type open struct {
		depth int
		start int64
	}
	last := map[int]int64{}
	held := map[int]map[string]*open{}
	for c := range nClients {
		now := rapid.Int64Range(0, 4).Draw(t, "t0")
		tick := func() { now += rapid.Int64Range(0, 3).Draw(t, "dt") }
		emit := func(e history.Event) {
			e.Time, e.Client = now, c
			g.events = append(g.events, e)
			last[c] = now
		}
		mine := map[string]*open{}
		held[c] = mine
		closeHold := func(key string, end int64, how HoldEnd) {
			g.holds = append(g.holds, truthHold{key: key, client: c, start: mine[key].start, end: end, how: how})
			delete(mine, key)
		}
		// The watchdog of a worker reports a loss whenever it notices, also
		// while the worker waits for an answer.
		lostDuring := func(key string) {
			if mine[key] != nil && rapid.IntRange(0, 5).Draw(t, "lost-during") == 5 {
				tick()
				emit(history.Event{Kind: history.Lost, Key: key})
				g.ops++
				closeHold(key, now, EndLost)
			}
		}
		for life := 0; ; life++ {
			stuck := false
			for range rapid.IntRange(0, 24).Draw(t, "steps") {
				key := fmt.Sprintf("lock:%d", rapid.IntRange(0, nKeys-1).Draw(t, "key"))
				h := mine[key]
				actions := []string{"acquire", "acquire", "acquire", "stray-release"}
				if h != nil {
					actions = []string{"release", "release", "lost"}
					if reentrant {
						actions = append(actions, "acquire")
					}
				}
				switch rapid.SampledFrom(actions).Draw(t, "action") {
				case "acquire":
					tick()
					emit(history.Event{Kind: history.Invoke, F: history.Acquire, Key: key})
					lostDuring(key)
					answer := rapid.SampledFrom([]history.Kind{history.OK, history.Fail, history.OK, history.Info, history.OK, history.OK, history.Fail, ""}).Draw(t, "acquired")
					if answer == "" {
						stuck = true
						break
					}
					tick()
					emit(history.Event{Kind: answer, F: history.Acquire, Key: key})
					if answer == history.OK {
						g.ops++
						if h := mine[key]; h == nil {
							mine[key] = &open{depth: 1, start: now}
						} else {
							h.depth++
						}
					}
				case "release", "stray-release":
					tick()
					emit(history.Event{Kind: history.Invoke, F: history.Release, Key: key})
					ended := h != nil && h.depth == 1
					if h != nil {
						g.ops++
						h.depth--
					}
					at := now
					answer := rapid.SampledFrom([]string{"ok", history.ErrNotHeld, "ok", "info", "ok", "error", "ok", ""}).Draw(t, "released")
					how := map[string]HoldEnd{"ok": EndRelease, history.ErrNotHeld: EndReleaseNotHeld}[answer]
					if how == "" {
						how = EndReleaseUnknown
					}
					if ended {
						closeHold(key, at, how)
					}
					lostDuring(key)
					if answer == "" {
						stuck = true
						break
					}
					tick()
					switch answer {
					case "ok":
						emit(history.Event{Kind: history.OK, F: history.Release, Key: key})
					case "info":
						emit(history.Event{Kind: history.Info, F: history.Release, Key: key})
					default:
						emit(history.Event{Kind: history.Fail, F: history.Release, Key: key, Error: answer})
					}
				case "lost":
					tick()
					emit(history.Event{Kind: history.Lost, Key: key})
					g.ops++
					closeHold(key, now, EndLost)
				}
				if stuck {
					break
				}
			}
			exit := rapid.SampledFrom([]string{"none", "expected", "unexpected"}).Draw(t, "exit")
			if exit == "none" {
				break
			}
			tick()
			g.events = append(g.events, history.Event{Time: now, Kind: history.WorkerExit, Client: c, Expected: exit == "expected"})
			last[c] = now
			g.unexpectedExit = g.unexpectedExit || exit == "unexpected"
			for _, k := range sortedKeys(mine) {
				g.ops++
				closeHold(k, now, EndExit)
			}
			if life > 0 || !rapid.Bool().Draw(t, "restart") {
				break
			}
			now++ // a new process starts strictly after the old one died
		}
	}

	var maxT int64
	for _, e := range g.events {
		maxT = max(maxT, e.Time)
	}
	for id := range rapid.IntRange(0, 2).Draw(t, "faults") {
		f := &history.Fault{ID: id + 1, Name: fmt.Sprintf("fault-%d", id+1)}
		from := rapid.Int64Range(0, maxT).Draw(t, "fault-start")
		g.events = append(g.events, history.Event{Time: from, Kind: history.FaultStart, Client: history.NoClient, Fault: f})
		if rapid.Bool().Draw(t, "fault-heals") {
			to := min(maxT, from+rapid.Int64Range(0, 10).Draw(t, "fault-length"))
			g.events = append(g.events, history.Event{Time: to, Kind: history.FaultEnd, Client: history.NoClient, Fault: f})
		}
	}
	g.runEnd = rapid.Bool().Draw(t, "run-end")
	end := maxT + rapid.Int64Range(0, 2).Draw(t, "run-end-after")
	if g.runEnd {
		g.events = append(g.events, history.Event{Time: end, Kind: history.RunEnd, Client: history.NoClient})
	}
	for c := range nClients {
		for _, k := range sortedKeys(held[c]) {
			at := last[c] // cut short: held until its last event, no longer
			if g.runEnd {
				at = end
			}
			g.ops++
			g.holds = append(g.holds, truthHold{key: k, client: c, start: held[c][k].start, end: at, how: EndOpen})
		}
	}
	return g
}

// naiveOverlaps compares every pair of ground-truth holds.
func naiveOverlaps(holds []truthHold) []string {
	var out []string
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if a.key == b.key && a.client != b.client && b.start < a.end && a.start < b.end {
				out = append(out, overlapID(a.key, a.client, b.client, max(a.start, b.start), min(a.end, b.end)))
			}
		}
	}
	slices.Sort(out)
	return out
}

func overlapID(key string, c1, c2 int, from, to int64) string {
	return fmt.Sprintf("%s %d+%d [%d,%d]", key, min(c1, c2), max(c1, c2), from, to)
}

func TestCheckerAgreesWithGroundTruth(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		g := genHistory(t)
		file := shuffle(g.events, func(n int) int { return rapid.IntRange(0, n-1).Draw(t, "arrival") })
		r := Check(file, Options{})

		// Porcupine proves what the sweep explains.
		if r.Mutex.Linearizable == nil || !r.Mutex.Agree || *r.Mutex.Linearizable != (r.Mutex.OverlapCount == 0) {
			t.Fatalf("porcupine %s, sweep %d overlaps, agree %v: %q", r.Mutex.Porcupine, r.Mutex.OverlapCount, r.Mutex.Agree, r.Reasons)
		}
		if r.Mutex.Holds != len(g.holds) || r.Mutex.Ops != g.ops {
			t.Fatalf("%d holds and %d ops, want %d and %d", r.Mutex.Holds, r.Mutex.Ops, len(g.holds), g.ops)
		}

		want := naiveOverlaps(g.holds)
		if r.Mutex.OverlapCount != len(want) {
			t.Fatalf("sweep found %d overlaps, the ground truth has %d: %q", r.Mutex.OverlapCount, len(want), want)
		}
		var got []string
		truth := map[HoldSpan]bool{}
		for _, h := range g.holds {
			truth[HoldSpan{Client: h.client, StartMs: float64(h.start) / 1e6, EndMs: float64(h.end) / 1e6, End: h.how}] = true
		}
		for _, o := range r.Mutex.Overlaps {
			got = append(got, overlapID(o.Key, o.Clients[0], o.Clients[1], int64(o.StartMs*1e6+0.5), int64(o.EndMs*1e6+0.5)))
			for _, h := range o.Holds {
				h.AcquireMs = 0 // the ground truth keeps no invokes
				if !truth[h] {
					t.Fatalf("overlap %+v lists hold %+v, which is not in the ground truth", o, h)
				}
			}
			if o.Holds[0].StartMs > o.Holds[1].StartMs || o.Holds[0].Client != o.Clients[0] {
				t.Fatalf("overlap %+v: the earlier hold must come first", o)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("overlaps\n got %q\nwant %q", got, want)
		}

		if !g.runEnd || g.unexpectedExit {
			if r.Verdict == Safe || r.Complete {
				t.Fatalf("verdict %s, complete %v on incomplete evidence", r.Verdict, r.Complete)
			}
		}
		if r.Verdict == Violation && len(want) == 0 {
			t.Fatalf("violation without an overlap: %q", r.Reasons)
		}
		if r.Verdict == Safe && (len(want) > 0 || len(g.holds) == 0) {
			t.Fatalf("safe with %d overlaps and %d holds", len(want), len(g.holds))
		}

		// Porcupine on the whole history, unsegmented, gives the answer
		// the segments gave.
		whole := porcupine.CheckOperations(MutexModel(), replay(sortByTime(g.events)).ops)
		if whole != (r.Mutex.Porcupine == "Ok") {
			t.Fatalf("porcupine on the whole history says linearizable=%v, on segments %s", whole, r.Mutex.Porcupine)
		}

		// The file, read as a stream through the reorder window, gives the
		// same result.
		path := filepath.Join(dir, "history.jsonl")
		var buf []byte
		for _, e := range file {
			buf = append(e.AppendJSON(buf), '\n')
		}
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		streamed, err := CheckFile(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(comparable(streamed), comparable(r)) {
			t.Fatalf("CheckFile differs from Check:\n%+v\n%+v", streamed, r)
		}

		// Another arrival order of the same events gives the same result.
		again := Check(shuffle(g.events, func(n int) int { return rapid.IntRange(0, n-1).Draw(t, "arrival2") }), Options{})
		if !reflect.DeepEqual(comparable(again), comparable(r)) {
			t.Fatalf("arrival order changed the result:\n%+v\n%+v", again, r)
		}
	})
}
