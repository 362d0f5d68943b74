package checker

import (
	"container/heap"

	"github.com/lockchaos/lockchaos/history"
)

// CheckFile checks a stored history (history.jsonl) without holding it in
// memory: the file is read twice. Events are written in order of arrival,
// not of time, so the first pass measures how late the latest-arriving
// event came (its time against the newest written before it); the second
// feeds the streaming checker through a window that holds back every event
// until no event still to come can be older: the order Check's sort gives,
// in memory bounded by that lateness times the event rate.
func CheckFile(path string, opts Options) (Result, error) {
	var newest, late int64
	first := true
	cut, err := history.ScanFileTimes(path, func(t int64) {
		if !first && newest-t > late {
			late = newest - t
		}
		if first || t > newest {
			newest, first = t, false
		}
	})
	if err != nil {
		return Result{}, err
	}
	opts.CutOff = opts.CutOff || cut
	s := NewStream(opts)
	w := NewReorder(s.Add)
	newest = 0
	first = true
	if _, err := history.ScanFile(path, func(e history.Event) error {
		if first || e.Time > newest {
			newest, first = e.Time, false
		}
		w.Push(e)
		w.Release(newest - late)
		return nil
	}); err != nil {
		return Result{}, err
	}
	w.Drain()
	return s.Result(), nil
}

// Reorder holds events back and releases them in time order (sortByTime's:
// among events of one instant, a fault-end, a worker-exit and the run-end
// last, the others in the order pushed), when told that no event still to
// come is older than some time.
type Reorder struct {
	seq  int
	held reorderHeap
	out  func(history.Event)
}

// NewReorder releases events to out.
func NewReorder(out func(history.Event)) *Reorder { return &Reorder{out: out} }

// Push holds e.
func (r *Reorder) Push(e history.Event) {
	r.seq++
	heap.Push(&r.held, heldEvent{e: e, rank: sortRank(e.Kind), seq: r.seq})
}

// Release releases every held event older than before.
func (r *Reorder) Release(before int64) {
	for len(r.held) > 0 && r.held[0].e.Time < before {
		r.out(heap.Pop(&r.held).(heldEvent).e)
	}
}

// Drain releases every held event.
func (r *Reorder) Drain() {
	for len(r.held) > 0 {
		r.out(heap.Pop(&r.held).(heldEvent).e)
	}
}

// Held is how many events are held back.
func (r *Reorder) Held() int { return len(r.held) }

type heldEvent struct {
	e    history.Event
	rank int
	seq  int
}

type reorderHeap []heldEvent

func (h reorderHeap) Len() int { return len(h) }
func (h reorderHeap) Less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.e.Time != b.e.Time {
		return a.e.Time < b.e.Time
	}
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.seq < b.seq
}
func (h reorderHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *reorderHeap) Push(x any)   { *h = append(*h, x.(heldEvent)) }
func (h *reorderHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
