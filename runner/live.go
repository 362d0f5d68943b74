package runner

import (
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// liveCheck runs the streaming checker while the run goes on, to report the
// first violation on the progress line (and, with StopOnViolation, to end
// the run there). The verdict is not its business: the whole history is
// checked again when the run ends.
//
// The checker needs events in time order, and they arrive in order of
// arrival. Each worker writes its own events in time order (it stamps and
// sends them under one lock), so an event is released to the checker once
// every live worker has sent one at least as new: nothing older can come
// from them. The coordinator's own events (faults, stalls, exits) are
// released the same way, and none is held back longer than liveSlack. A
// worker a fault stopped (SIGSTOP) sends nothing until it runs again, and
// is not waited for meanwhile: it can only have stamped one event it had
// not sent yet, in the microseconds before the signal landed — which the
// live view may then see out of order, and the check of the whole history
// will not.
type liveCheck struct {
	mu      sync.Mutex
	stream  *checker.Stream
	window  *checker.Reorder
	last    map[int]int64 // the newest time each live worker has sent
	stopped map[int]int   // workers stopped by faults now, and by how many
	newest  int64
	first   *checker.Overlap
	onFirst func(checker.Overlap)
	now     func() int64 // the clock events are stamped with
}

func newLiveCheck(clients int, since int64, onFirst func(checker.Overlap)) *liveCheck {
	l := &liveCheck{stream: checker.NewStream(checker.Options{Live: true}), last: map[int]int64{}, stopped: map[int]int{}, onFirst: onFirst, newest: since, now: history.Now}
	l.window = checker.NewReorder(l.stream.Add)
	for c := range clients {
		l.last[c] = since
	}
	l.stream.OnOverlap(func(o checker.Overlap) {
		if l.first == nil {
			l.first = &o
			if l.onFirst != nil {
				l.onFirst(o)
			}
		}
	})
	return l
}

func (l *liveCheck) add(e history.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.newest = max(l.newest, e.Time)
	switch {
	case e.Kind == history.WorkerExit:
		delete(l.last, e.Client) // every event of it is in
	case e.Client >= 0:
		l.last[e.Client] = max(l.last[e.Client], e.Time)
	case e.Kind == history.FaultStart && e.Fault != nil:
		for _, c := range e.Fault.Stopped {
			l.stopped[c]++
		}
	case e.Kind == history.FaultEnd && e.Fault != nil:
		for _, c := range e.Fault.Stopped {
			if l.stopped[c]--; l.stopped[c] <= 0 {
				delete(l.stopped, c)
			}
		}
	}
	l.window.Push(e)
	// A running worker stamps an event the instant before it sends it, so
	// whatever it sends from now on is newer than now, less the time it
	// may be kept from running in between (liveSlack): a worker that is
	// silent while it runs (a hold stretched by a nemesis, a request
	// waiting for its timeout) holds the others back that long at most.
	floor := l.now() - liveSlack.Nanoseconds()
	mark := l.newest
	for c, t := range l.last {
		if l.stopped[c] == 0 {
			mark = min(mark, max(t, floor))
		}
	}
	l.window.Release(mark)
}

// liveSlack is how long after stamping an event a running worker is taken
// to have sent it. A worker kept from running longer than that between the
// two (the machine's stall, which it records) may show the live view an
// event out of order: a hint may be wrong then, never the verdict.
const liveSlack = time.Second

// First is the first overlap seen so far, or nil.
func (l *liveCheck) First() *checker.Overlap {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}
