package runner

import (
	"sort"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
)

// tracker follows the event stream live so nemeses can aim: who holds what,
// who is in the middle of an acquire. It is only for aiming; the checker
// never reads it.
type tracker struct {
	mu        sync.Mutex
	holding   map[int]map[string]*heldKey
	acquiring map[int]time.Time
	stats     struct{ acquires, holds, faults int }
}

type heldKey struct {
	depth int
	since time.Time
}

func newTracker() *tracker {
	return &tracker{holding: map[int]map[string]*heldKey{}, acquiring: map[int]time.Time{}}
}

func (t *tracker) observe(e history.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	switch {
	case e.Kind == history.FaultStart:
		t.stats.faults++
	case e.F == history.Acquire && e.Kind == history.Invoke:
		t.stats.acquires++
		t.acquiring[e.Client] = now
	case e.F == history.Acquire:
		delete(t.acquiring, e.Client)
		if e.Kind == history.OK {
			keys := t.holding[e.Client]
			if keys == nil {
				keys = map[string]*heldKey{}
				t.holding[e.Client] = keys
			}
			if keys[e.Key] == nil {
				keys[e.Key] = &heldKey{since: now}
				t.stats.holds++
			}
			keys[e.Key].depth++
		}
	case e.F == history.Release && e.Kind == history.Invoke:
		if h := t.holding[e.Client][e.Key]; h != nil {
			if h.depth--; h.depth <= 0 {
				delete(t.holding[e.Client], e.Key)
			}
		}
	case e.Kind == history.Lost:
		delete(t.holding[e.Client], e.Key)
	}
}

func (t *tracker) exited(client int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.holding, client)
	delete(t.acquiring, client)
}

func (t *tracker) holders() []nemesis.Holding {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []nemesis.Holding
	for c, keys := range t.holding {
		for k, h := range keys {
			out = append(out, nemesis.Holding{Client: c, Key: k, Since: h.since})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Client != out[j].Client {
			return out[i].Client < out[j].Client
		}
		return out[i].Key < out[j].Key
	})
	return out
}

func (t *tracker) acquiringFor(d time.Duration) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int
	for c, since := range t.acquiring {
		if time.Since(since) >= d {
			out = append(out, c)
		}
	}
	sort.Ints(out)
	return out
}
