package checker

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// Outcomes of an acquire (Attempt.Outcome).
const (
	AttemptOK      = "ok"      // it returned the lock
	AttemptFailed  = "fail"    // the lock said no (or it definitely did not take effect)
	AttemptUnknown = "unknown" // it timed out, errored, or never completed
)

// attempt is one acquire in ns; done is -1 when it never completed.
type attempt struct {
	inv     history.Event
	done    int64
	outcome string
}

// Attempt is one acquire of the history and how it ended, in ms since the
// run started: what a report draws as availability and latency.
type Attempt struct {
	Client   int     `json:"client"`
	Key      string  `json:"key"`
	InvokeMs float64 `json:"invoke_ms"`
	// DoneMs is when it completed; for one that never completed, its
	// invocation (LatencyMs is then 0).
	DoneMs    float64 `json:"done_ms"`
	LatencyMs float64 `json:"latency_ms"`
	Outcome   string  `json:"outcome"`
	// Completed is false for an acquire that never completed.
	Completed bool `json:"completed"`
}

// Attempts are every acquire of the history (a reentrant one included), in
// order of invocation, as the checker counted them in AcquireStats.
func Attempts(events []history.Event) []Attempt {
	sorted := sortByTime(events)
	tl := newTimeline(sorted)
	tr := replay(sorted)
	out := make([]Attempt, 0, len(tr.attempts))
	for _, a := range tr.attempts {
		x := Attempt{Client: a.inv.Client, Key: a.inv.Key, InvokeMs: tl.ms(a.inv.Time), Outcome: a.outcome, Completed: a.done >= 0}
		x.DoneMs = x.InvokeMs
		if a.done >= 0 {
			x.DoneMs = tl.ms(a.done)
			x.LatencyMs = float64(a.done-a.inv.Time) / 1e6
		}
		out = append(out, x)
	}
	slices.SortStableFunc(out, func(a, b Attempt) int {
		switch {
		case a.InvokeMs < b.InvokeMs:
			return -1
		case a.InvokeMs > b.InvokeMs:
			return 1
		}
		return 0
	})
	return out
}

// RateBucket counts the acquires that completed in [StartMs, StartMs+width):
// Jepsen's rate plot. An acquire that never completed counts at its
// invocation.
type RateBucket struct {
	StartMs float64 `json:"start_ms"`
	OK      int     `json:"ok"`
	Failed  int     `json:"failed"`
	Unknown int     `json:"unknown"`
}

// Where says whom a fault acted on, briefly: "client 3", "clients 1, 2",
// "node 4", "nodes 0, 2", or its target.
func (f FaultWindow) Where() string {
	list := func(one, many string, ids []int) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = fmt.Sprint(id)
		}
		if len(ids) > 1 {
			one = many
		}
		return one + " " + strings.Join(s, ", ")
	}
	switch {
	case len(f.Clients) > 0:
		return list("client", "clients", f.Clients)
	case len(f.Nodes) > 0:
		return list("node", "nodes", f.Nodes)
	case f.Target != "":
		return f.Target
	}
	return "the run"
}

// Series is the binned summary of a run that a report draws when the
// history is too long to draw whole: per time bucket, the holds that began,
// the acquires by outcome (as Rate counts them) and the distribution of
// acquire latencies. It is built event by event (Add) in the order of the
// history file, which is arrival order: each client's own events in order,
// clients interleaved. Its memory is bounded by the number of buckets and
// of clients, not by the history; its outcomes are the checker's (an acquire
// that never completed, or that the same client's next invoke superseded,
// is unknown at its invocation).
type Series struct {
	origin  int64
	WidthMs float64
	Buckets []SeriesBucket
	clients map[int]*seriesClient
}

// SeriesBucket is one bucket of a Series: [StartMs, StartMs+WidthMs).
type SeriesBucket struct {
	RateBucket
	// Holds counts the holds that began in it (the outermost acquire's ok).
	Holds int `json:"holds"`
	// Lat counts the completed acquires by latency (LatencyBins).
	Lat   [latBins]int32 `json:"-"`
	MaxMs float64        `json:"max_ms"`
}

type seriesClient struct {
	pending *history.Event
	open    map[string]int // depth per key
}

// Latency histogram: latBinsPerDecade log-spaced bins per decade from
// latLoMs up; a quantile is read at its bin's upper edge (12 % at most
// above the true value), never above the bucket's maximum.
const (
	latBinsPerDecade = 20
	latLoMs          = 0.001
	latBins          = 9 * latBinsPerDecade // 1 µs to 1000 s
)

// NewSeries starts a series of buckets of widthMs over [0, spanMs] ms,
// counted from originNs (the run-start's time).
func NewSeries(originNs int64, widthMs, spanMs float64) *Series {
	n := int(spanMs/widthMs) + 1
	s := &Series{origin: originNs, WidthMs: widthMs, Buckets: make([]SeriesBucket, n), clients: map[int]*seriesClient{}}
	for i := range s.Buckets {
		s.Buckets[i].StartMs = float64(i) * widthMs
	}
	return s
}

func (s *Series) bucket(t int64) *SeriesBucket {
	i := int(float64(t-s.origin) / 1e6 / s.WidthMs)
	if i < 0 || i >= len(s.Buckets) {
		return nil
	}
	return &s.Buckets[i]
}

// Add counts one event of the history.
func (s *Series) Add(e history.Event) {
	if e.Client < 0 {
		return
	}
	cs := s.clients[e.Client]
	if cs == nil {
		cs = &seriesClient{open: map[string]int{}}
		s.clients[e.Client] = cs
	}
	switch e.Kind {
	case history.Invoke:
		s.abandon(cs)
		if e.F == history.Release && cs.open[e.Key] > 0 {
			cs.open[e.Key]--
		}
		ev := e
		cs.pending = &ev
	case history.OK, history.Fail, history.Info:
		inv := cs.pending
		if inv == nil {
			return
		}
		cs.pending = nil
		if inv.F != history.Acquire {
			return
		}
		b := s.bucket(e.Time)
		switch e.Kind {
		case history.OK:
			if cs.open[inv.Key] == 0 && b != nil {
				b.Holds++ // the outermost acquire: a hold begins
			}
			cs.open[inv.Key]++
			if b != nil {
				b.OK++
			}
		case history.Fail:
			if b != nil {
				b.Failed++
			}
		default:
			if b != nil {
				b.Unknown++
			}
		}
		if b != nil {
			lat := float64(e.Time-inv.Time) / 1e6
			b.Lat[latBin(lat)]++
			b.MaxMs = max(b.MaxMs, lat)
		}
	case history.Lost:
		delete(cs.open, e.Key)
	case history.WorkerExit:
		clear(cs.open)
		s.abandon(cs)
	}
}

// abandon counts a client's pending acquire that will never complete as
// unknown at its invocation.
func (s *Series) abandon(cs *seriesClient) {
	if cs.pending != nil && cs.pending.F == history.Acquire {
		if b := s.bucket(cs.pending.Time); b != nil {
			b.Unknown++
		}
	}
	cs.pending = nil
}

// Finish settles what the history left pending; call it once, after the
// last Add.
func (s *Series) Finish() {
	for _, cs := range s.clients {
		s.abandon(cs)
	}
}

func latBin(ms float64) int {
	if ms <= latLoMs {
		return 0
	}
	i := int(math.Log10(ms/latLoMs) * latBinsPerDecade)
	return min(max(i, 0), latBins-1)
}

// Completed counts the bucket's completed acquires (those with a latency).
func (b *SeriesBucket) Completed() int {
	n := 0
	for _, c := range b.Lat {
		n += int(c)
	}
	return n
}

// Quantile is the q-quantile (0 < q ≤ 1) of the bucket's acquire latencies
// in ms, to the resolution of its histogram; 0 when none completed in it.
func (b *SeriesBucket) Quantile(q float64) float64 {
	n := b.Completed()
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(n)))
	seen := 0
	for i, c := range b.Lat {
		seen += int(c)
		if seen >= max(rank, 1) {
			return math.Min(latLoMs*math.Pow(10, float64(i+1)/latBinsPerDecade), b.MaxMs)
		}
	}
	return b.MaxMs
}
