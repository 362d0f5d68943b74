package checker

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockchaos/lockchaos/history"
)

// simulate returns a safe history of about ops operations (acquires and
// releases; resource reads and writes ride along inside holds) by clients
// contending for keys, the way a real run looks: most acquires on a busy key
// fail, holds never overlap.
func simulate(ops, clients, keys int, seed uint64) []history.Event {
	r := rand.New(rand.NewPCG(seed, 1))
	var events []history.Event
	add := func(t int64, kind history.Kind, c int, f, key string) {
		events = append(events, history.Event{Time: t, Kind: kind, Client: c, F: f, Key: key})
	}
	add(0, history.RunStart, history.NoClient, "", "")
	events[0].Run = &history.RunInfo{Lock: "bench", Nemesis: []string{}}
	freeAt := make([]int64, keys)
	q := &clientQueue{}
	for c := 0; c < clients; c++ {
		heap.Push(q, clientAt{c: c, t: int64(r.IntN(1000))})
	}
	counter := make([]int64, keys)
	done := 0
	for done < ops {
		next := heap.Pop(q).(clientAt)
		t, c := next.t, next.c
		k := r.IntN(keys)
		key := fmt.Sprintf("lock:%d", k)
		add(t, history.Invoke, c, history.Acquire, key)
		t += 100 + int64(r.IntN(100))
		done++
		if t <= freeAt[k] {
			add(t, history.Fail, c, history.Acquire, key)
		} else {
			add(t, history.OK, c, history.Acquire, key)
			v := counter[k]
			add(t+10, history.Invoke, c, history.Read, key)
			events = append(events, history.Event{Time: t + 20, Kind: history.OK, Client: c, F: history.Read, Key: key, Value: history.Int64(v)})
			t += 1000 + int64(r.IntN(1000))
			events = append(events, history.Event{Time: t, Kind: history.Invoke, Client: c, F: history.Write, Key: key, Value: history.Int64(v + 1)})
			add(t+10, history.OK, c, history.Write, key)
			counter[k]++
			add(t+20, history.Invoke, c, history.Release, key)
			freeAt[k] = t + 20 + 50 // a release takes effect before its reply
			add(t+100, history.OK, c, history.Release, key)
			t += 100
			done++
		}
		heap.Push(q, clientAt{c: c, t: t + int64(r.IntN(500))})
	}
	end := int64(0)
	for _, e := range events {
		end = max(end, e.Time)
	}
	for k := range keys {
		events = append(events, history.Event{Time: end + 1, Kind: history.Probe, Client: history.NoClient, F: "resource", Key: fmt.Sprintf("lock:%d", k), Value: history.Int64(counter[k])})
	}
	for c := 0; c < clients; c++ {
		events = append(events, history.Event{Time: end + 2, Kind: history.WorkerExit, Client: c, Expected: true})
	}
	return append(events, history.Event{Time: end + 3, Kind: history.RunEnd, Client: history.NoClient})
}

type clientAt struct {
	c int
	t int64
}

type clientQueue []clientAt

func (q clientQueue) Len() int { return len(q) }
func (q clientQueue) Less(i, j int) bool {
	return q[i].t < q[j].t || (q[i].t == q[j].t && q[i].c < q[j].c)
}
func (q clientQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *clientQueue) Push(x any)   { *q = append(*q, x.(clientAt)) }
func (q *clientQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

var benchSizes = []struct{ ops, keys int }{
	{10_000, 1}, {10_000, 10}, {10_000, 100},
	{100_000, 1}, {100_000, 10}, {100_000, 100},
	{1_000_000, 1}, {1_000_000, 10}, {1_000_000, 100},
}

// BenchmarkCheck is the whole checker on a safe history: replay, porcupine,
// sweep, resource oracle.
func BenchmarkCheck(b *testing.B) {
	for _, s := range benchSizes {
		events := simulate(s.ops, 16, s.keys, 1)
		holds := len(replay(sortByTime(events)).holds)
		b.Run(fmt.Sprintf("ops=%d/keys=%d", s.ops, s.keys), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := Check(events, Options{}); r.Verdict != Safe {
					b.Fatalf("simulated history checked %s: %v", r.Verdict, r.Reasons)
				}
			}
			b.ReportMetric(float64(holds), "holds") // after the loop: b.Loop resets metrics
		})
	}
}

// BenchmarkPorcupine and BenchmarkSweep split Check's cost between the proof
// and the explanation, on the same histories.
func BenchmarkPorcupine(b *testing.B) {
	for _, s := range benchSizes {
		events := simulate(s.ops, 16, s.keys, 1)
		ops := replay(sortByTime(events)).ops
		holds := len(replay(sortByTime(events)).holds)
		b.Run(fmt.Sprintf("ops=%d/keys=%d", s.ops, s.keys), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !porcupine.CheckOperations(MutexModel(), ops) {
					b.Fatal("not linearizable")
				}
			}
			b.ReportMetric(float64(holds), "holds")
			b.ReportMetric(float64(len(ops)), "porcupine-ops")
		})
	}
}

func BenchmarkSweep(b *testing.B) {
	for _, s := range benchSizes {
		tr := replay(sortByTime(simulate(s.ops, 16, s.keys, 1)))
		b.Run(fmt.Sprintf("ops=%d/keys=%d", s.ops, s.keys), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n, _, _, _, _ := sweep(tr.holds, nil, nil, nil, timeline{}); n != 0 {
					b.Fatal("overlaps in a safe history")
				}
			}
			b.ReportMetric(float64(len(tr.holds)), "holds")
		})
	}
}

// waiters builds rounds in which n clients all invoke a blocking acquire at
// once and get the lock one after another: n mutually concurrent acquire
// operations on one key, the shape that makes a linearizability search
// branch. Every acquire is ok, so none is dropped as indeterminate.
func waiters(n, rounds int) []porcupine.Operation {
	var ops []porcupine.Operation
	t := int64(0)
	for range rounds {
		start := t
		order := rand.New(rand.NewPCG(uint64(t), 2)).Perm(n)
		for i, c := range order {
			got := start + int64(i+1)*100
			ops = append(ops,
				porcupine.Operation{ClientId: c, Input: MutexInput{Op: OpAcquire, Client: c, Key: "k"}, Call: start, Output: "ok", Return: got},
				porcupine.Operation{ClientId: c, Input: MutexInput{Op: OpRelease, Client: c, Key: "k", Depth: 1}, Call: got + 50, Output: "ok", Return: got + 60})
		}
		t = start + int64(n+2)*100
	}
	return ops
}

// BenchmarkPorcupineConcurrentWaiters shows how porcupine's time grows with
// the number of operations concurrent on one key. Past Options.Timeout the
// checker answers inconclusive instead of hanging.
func BenchmarkPorcupineConcurrentWaiters(b *testing.B) {
	for _, n := range []int{2, 4, 8, 16, 32, 64} {
		ops := waiters(n, 10)
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			for b.Loop() {
				if res := porcupine.CheckOperationsTimeout(MutexModel(), ops, 30*time.Second); res != porcupine.Ok {
					b.Fatalf("porcupine: %s", res)
				}
			}
		})
	}
}

// BenchmarkPorcupineConcurrentWaitersViolation is the same shape with one
// overlap in the last round: to answer Illegal, porcupine must rule out every
// order, which is where a linearizability search degrades first. The sweep
// finds the overlap regardless, so a timeout here still yields a violation.
func BenchmarkPorcupineConcurrentWaitersViolation(b *testing.B) {
	for _, n := range []int{2, 4, 8, 12, 16, 20} {
		ops := waiters(n, 10)
		// The last acquirer gets the lock before its predecessor released.
		last := &ops[len(ops)-2]
		last.Return = ops[len(ops)-3].Call - 10
		ops[len(ops)-1].Call, ops[len(ops)-1].Return = last.Return+5, last.Return+6
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			for b.Loop() {
				if res := porcupine.CheckOperationsTimeout(MutexModel(), ops, 30*time.Second); res == porcupine.Ok {
					b.Fatalf("porcupine: %s on a history with an overlap", res)
				}
			}
		})
	}
}
