package checker

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockchaos/lockchaos/history"
)

// simulate is Synthetic's history in memory.
func simulate(ops, clients, keys int, seed uint64) []history.Event {
	var events []history.Event
	Synthetic(ops, clients, keys, seed, func(e history.Event) { events = append(events, e) })
	return events
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

// BenchmarkPorcupine is porcupine alone on the whole history, unsegmented,
// as the checker ran it before it cut each key's history into segments.
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

// BenchmarkStream is the streaming checker fed Synthetic's history as it is
// made, never held: the cost at scale (make bench reports its peak RSS).
func BenchmarkStream(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(fmt.Sprintf("ops=%d/keys=%d", s.ops, s.keys), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st := NewStream(Options{})
				Synthetic(s.ops, 16, s.keys, 1, st.Add)
				if r := st.Result(); r.Verdict != Safe {
					b.Fatalf("synthetic history checked %s: %v", r.Verdict, r.Reasons)
				}
			}
		})
	}
}

// BenchmarkStreamOnly is the streaming checker alone on a history already
// in memory (in time order): what it costs per event, without the
// generator.
func BenchmarkStreamOnly(b *testing.B) {
	events := simulate(1_000_000, 16, 100, 1)
	b.ResetTimer()
	b.ReportAllocs()
	for b.Loop() {
		st := NewStream(Options{})
		for _, e := range events {
			st.Add(e)
		}
		if r := st.Result(); r.Verdict != Safe {
			b.Fatalf("synthetic history checked %s: %v", r.Verdict, r.Reasons)
		}
	}
	b.ReportMetric(float64(len(events)), "events")
}
