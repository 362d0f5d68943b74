package checker

import (
	"container/heap"
	"fmt"
	"math/rand/v2"

	"github.com/lockchaos/lockchaos/history"
)

// Synthetic calls emit with a safe history of about ops operations (acquire
// attempts and releases; a read and a write of the resource ride inside
// each hold) by clients contending for keys, the way a real run looks: most
// acquires on a busy key fail, holds never overlap. Events come in time
// order, one at a time, so a history of any length costs no memory: it is
// how the checker's cost is measured at scale (make bench), never evidence.
func Synthetic(ops, clients, keys int, seed uint64, emit func(history.Event)) {
	r := rand.New(rand.NewPCG(seed, 1))
	// Each client's events are in time order; pending merges them.
	pending := &eventQueue{byClient: make([]fifo, clients)}
	seq := 0
	add := func(e history.Event) {
		seq++
		q := &pending.byClient[e.Client]
		q.items = append(q.items, queued{e: e, seq: seq})
		if len(q.items)-q.head == 1 {
			heap.Push(pending, e.Client)
		}
	}
	// flush emits every pending event before t: no cycle begun at t or
	// later has an event before t.
	flush := func(t int64) {
		for pending.Len() > 0 {
			q := &pending.byClient[pending.heads[0]]
			if q.items[q.head].e.Time >= t {
				return
			}
			emit(q.items[q.head].e)
			if q.head++; q.head == len(q.items) {
				q.items, q.head = q.items[:0], 0
				heap.Pop(pending)
			} else {
				heap.Fix(pending, 0)
			}
		}
	}
	emit(history.Event{Time: 0, Kind: history.RunStart, Client: history.NoClient, Run: &history.RunInfo{Lock: "synthetic", Nemesis: []string{}}})
	names := make([]string, keys)
	for k := range names {
		names[k] = fmt.Sprintf("lock:%d", k)
	}
	freeAt := make([]int64, keys)
	counter := make([]int64, keys)
	q := &clientQueue{}
	for c := 0; c < clients; c++ {
		heap.Push(q, clientAt{c: c, t: 1 + int64(r.IntN(1000))})
	}
	end := int64(0)
	for done := 0; done < ops; {
		next := heap.Pop(q).(clientAt)
		t, c := next.t, next.c
		flush(t)
		k := r.IntN(keys)
		key := names[k]
		op := func(t int64, kind history.Kind, f string) history.Event {
			return history.Event{Time: t, Kind: kind, Client: c, F: f, Key: key}
		}
		add(op(t, history.Invoke, history.Acquire))
		t += 100 + int64(r.IntN(100))
		done++
		if t <= freeAt[k] {
			add(op(t, history.Fail, history.Acquire))
		} else {
			add(op(t, history.OK, history.Acquire))
			v := counter[k]
			add(op(t+10, history.Invoke, history.Read))
			read := op(t+20, history.OK, history.Read)
			read.Value = history.Int64(v)
			add(read)
			t += 1000 + int64(r.IntN(1000))
			write := op(t, history.Invoke, history.Write)
			write.Value = history.Int64(v + 1)
			add(write)
			add(op(t+10, history.OK, history.Write))
			counter[k]++
			add(op(t+20, history.Invoke, history.Release))
			freeAt[k] = t + 20 + 50 // a release takes effect before its reply
			add(op(t+100, history.OK, history.Release))
			t += 100
			done++
		}
		end = max(end, t)
		heap.Push(q, clientAt{c: c, t: t + 1 + int64(r.IntN(500))})
	}
	flush(end + 1)
	for k := range keys {
		emit(history.Event{Time: end + 1, Kind: history.Probe, Client: history.NoClient, F: "resource", Key: names[k], Value: history.Int64(counter[k])})
	}
	for c := 0; c < clients; c++ {
		emit(history.Event{Time: end + 2, Kind: history.WorkerExit, Client: c, Expected: true})
	}
	emit(history.Event{Time: end + 3, Kind: history.RunEnd, Client: history.NoClient})
}

type queued struct {
	e   history.Event
	seq int
}

// eventQueue is a heap of the clients with pending events, by their next
// event's time, then by when it was made.
type eventQueue struct {
	byClient []fifo
	heads    []int
}

// fifo is one client's pending events, from head on.
type fifo struct {
	items []queued
	head  int
}

func (q *eventQueue) Len() int { return len(q.heads) }
func (q *eventQueue) Less(i, j int) bool {
	x, y := &q.byClient[q.heads[i]], &q.byClient[q.heads[j]]
	a, b := x.items[x.head], y.items[y.head]
	return a.e.Time < b.e.Time || (a.e.Time == b.e.Time && a.seq < b.seq)
}
func (q *eventQueue) Swap(i, j int) { q.heads[i], q.heads[j] = q.heads[j], q.heads[i] }
func (q *eventQueue) Push(x any)    { q.heads = append(q.heads, x.(int)) }
func (q *eventQueue) Pop() any {
	x := q.heads[len(q.heads)-1]
	q.heads = q.heads[:len(q.heads)-1]
	return x
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
