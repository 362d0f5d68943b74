package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// Liveness: a lock that nobody can take is no safe lock. For every key the
// stream measures the spans in which nobody held it while clients were
// trying to (an acquire in flight, or invoked, while it was free), and how
// much of each lay outside every fault window. A key that stayed
// unavailable that long outside faults — StuckAfter: three leases, or
// five seconds for a lock without a lease — is stuck: the lock broke its
// liveness (an orphaned ZooKeeper node, a renewal that outlived its
// release, a key left without expiry). Unavailability inside a fault
// window (a partition, a node down) is what the fault does, not a finding.
//
// Nor is unavailability that the harness measured itself causing: a lock
// node's server ready to run but waiting for a CPU, the coordinator (which
// forwards every request) unable to run, or a client unable to run while
// its acquire or release of the key was in flight (not an acquire refused
// in the end: it set nothing and kept nobody out; one that got no answer
// may have set the key). A span counts against the lock only for its time
// outside faults and outside such stalls, each discounted for the time it
// was measured, never more. A span stuck by its time outside faults but
// not once the stalls are taken out is no evidence either way
// (LivenessResult.Stalled): neither stuck nor shown available.

// StuckLeases and StuckLeaseless set the threshold (StuckAfter).
const (
	StuckLeases         = 3
	StuckLeaselessMs    = 5000
	maxFreeSpansKept    = 256 // per key: the longest are kept
	freeSpanKeepDivisor = 2   // spans shorter than threshold/2 are not kept
)

// StuckAfter is how long, in ms, a key must stay unavailable outside
// faults to be stuck, for a run with these settings.
func StuckAfter(run *history.RunInfo) float64 {
	if run == nil || run.Leaseless || run.Lease() <= 0 {
		return StuckLeaselessMs
	}
	return float64(StuckLeases * run.Lease())
}

// KeyAvailability is one key's longest unavailable span.
type KeyAvailability struct {
	Key string `json:"key"`
	// LongestMs is the longest span in which nobody held the key while
	// clients tried to take it; FromMs when it began; Tries the acquires
	// invoked in it; OutsideFaultsMs how much of it lay outside every
	// fault window.
	LongestMs       float64 `json:"longest_ms"`
	FromMs          float64 `json:"from_ms"`
	Tries           int     `json:"tries"`
	OutsideFaultsMs float64 `json:"outside_faults_ms"`
}

// StuckKey is a span in which a key stayed unavailable past StuckAfter
// outside faults.
type StuckKey struct {
	Key             string  `json:"key"`
	FromMs          float64 `json:"from_ms"`
	ToMs            float64 `json:"to_ms"`
	OutsideFaultsMs float64 `json:"outside_faults_ms"`
	// StalledMs is how much of OutsideFaultsMs measured stalls of the
	// harness cover (stalledFor): only the rest counts against the lock.
	StalledMs float64 `json:"stalled_ms,omitempty"`
	Tries     int     `json:"tries"`
	// Faults are the faults after which it got stuck: active during the
	// span or ended less than a lease before it began. Each landed: it
	// broke the lock's liveness.
	Faults []int `json:"faults,omitempty"`
}

// freeSpan is a span of a key with no holder while clients tried.
type freeSpan struct {
	from, to int64
	tries    int
}

// keyLive is what the stream keeps of a key for the liveness check.
type keyLive struct {
	open     int   // holds of the key
	inflight int   // acquires of the key in flight
	trying   int64 // since when clients tried while it was free; 0: not
	lastTry  int64 // the latest invoke or answer of an acquire since then
	tries    int
	spans    []freeSpan // the longest, at least keep long
	longest  freeSpan
	// unknown is the invoke of the latest acquire whose outcome is unknown
	// (it may hold the key, unseen).
	unknown int64
}

// liveEvent is one change the liveness check sees. The events of one
// instant arrive in any order of clients, so they are applied at the end
// of the instant in one order (liveOrder): holds that end, acquires that
// complete, acquires invoked, holds that begin.
type liveEvent struct {
	ks    *keyState
	t     int64
	order int
}

const (
	liveEnded = iota
	liveCompleted
	liveInvoked
	liveStarted
)

func (s *Stream) liveNote(ks *keyState, t int64, order int) {
	s.liveEvents = append(s.liveEvents, liveEvent{ks: ks, t: t, order: order})
}

// liveSettle applies the events of the instants before now.
func (s *Stream) liveSettle() {
	if len(s.liveEvents) == 0 {
		return
	}
	slices.SortStableFunc(s.liveEvents, func(a, b liveEvent) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.order, b.order), cmp.Compare(a.ks.key, b.ks.key))
	})
	for _, e := range s.liveEvents {
		kl := &e.ks.live
		switch e.order {
		case liveEnded:
			if kl.open--; kl.open == 0 {
				kl.trying, kl.tries = 0, 0
				if kl.inflight > 0 {
					// Acquires already waiting try from now on.
					kl.trying, kl.lastTry, kl.tries = e.t, e.t, kl.inflight
				}
			}
		case liveCompleted:
			kl.inflight--
			if kl.open == 0 && kl.trying > 0 {
				kl.lastTry = max(kl.lastTry, e.t)
			}
		case liveInvoked:
			kl.inflight++
			if kl.open == 0 {
				if kl.trying == 0 {
					kl.trying = e.t
				}
				kl.lastTry = max(kl.lastTry, e.t)
				kl.tries++
			}
		case liveStarted:
			if kl.open == 0 && kl.trying > 0 {
				s.freeSpanEnded(kl, kl.trying, e.t)
			}
			kl.trying, kl.tries = 0, 0
			kl.open++
		}
	}
	clear(s.liveEvents)
	s.liveEvents = s.liveEvents[:0]
}

func (s *Stream) freeSpanEnded(kl *keyLive, from, to int64) {
	sp := freeSpan{from: from, to: to, tries: kl.tries}
	if to-from > kl.longest.to-kl.longest.from {
		kl.longest = sp
	}
	keep := int64(StuckAfter(s.runInfo())*1e6) / freeSpanKeepDivisor
	if to-from < keep {
		return
	}
	kl.spans = append(kl.spans, sp)
	if len(kl.spans) > maxFreeSpansKept {
		slices.SortFunc(kl.spans, func(a, b freeSpan) int { return cmp.Compare(b.to-b.from, a.to-a.from) })
		kl.spans = kl.spans[:maxFreeSpansKept]
	}
}

func (s *Stream) runInfo() *history.RunInfo {
	if s.runStart == nil {
		return nil
	}
	return s.runStart.Run
}

// liveness ends the free spans still open at end (the workload's stop),
// and finds each key's longest unavailable span and the stuck ones.
// It marks the faults after which a key got stuck as landed.
func (s *Stream) liveness(end int64, faults []FaultWindow, spans []faultSpan, stalls []stall, tl timeline) LivenessResult {
	after := StuckAfter(s.runInfo())
	res := LivenessResult{DeadlockedKeys: deadlockedKeys(s.probes), StuckAfterMs: after, Keys: []KeyAvailability{}}
	var lease int64
	if run := s.runInfo(); run != nil && !run.Leaseless {
		lease = run.Lease() * 1e6
	}
	s.liveSettle()
	for _, k := range sortedKeys(s.keys) {
		ks := s.keys[k]
		kl := &ks.live
		if kl.open == 0 && kl.trying > 0 {
			// Clients tried until the end, or until their last acquire
			// was answered (the last client died, or gave up).
			to := kl.lastTry
			if kl.inflight > 0 {
				to = end
			}
			if to > kl.trying {
				s.freeSpanEnded(kl, kl.trying, to)
				if out := float64(outside(kl.trying, to, spans)) / 1e6; out < after {
					// Too short to be stuck because the run ended: after
					// a fault, the run cannot tell.
					if ids := faultsAround(kl.trying, to, lease, faults, spans); len(ids) > 0 {
						res.Unfinished = append(res.Unfinished, StuckKey{Key: k, FromMs: tl.ms(kl.trying), ToMs: tl.ms(to), OutsideFaultsMs: out, Tries: kl.tries, Faults: ids})
					}
				}
			}
			kl.trying = 0
		}
		if kl.longest.to > kl.longest.from {
			l := kl.longest
			res.Keys = append(res.Keys, KeyAvailability{Key: k, LongestMs: float64(l.to-l.from) / 1e6, FromMs: tl.ms(l.from),
				Tries: l.tries, OutsideFaultsMs: float64(outside(l.from, l.to, spans)) / 1e6})
		}
		slices.SortFunc(kl.spans, func(a, b freeSpan) int { return cmp.Compare(a.from, b.from) })
		for _, sp := range kl.spans {
			out := float64(outside(sp.from, sp.to, spans)) / 1e6
			if out < after {
				continue
			}
			st := StuckKey{Key: k, FromMs: tl.ms(sp.from), ToMs: tl.ms(sp.to), OutsideFaultsMs: out, Tries: sp.tries, Faults: faultsAround(sp.from, sp.to, lease, faults, spans)}
			st.StalledMs = float64(stalledFor(k, sp.from, sp.to, spans, stalls)) / 1e6
			if out-st.StalledMs < after {
				// Stuck but for what the harness's stalls explain: no
				// evidence either way, and no fault broke anything.
				res.Stalled = append(res.Stalled, st)
				continue
			}
			for i := range faults {
				f := &faults[i]
				// A fault broke the key's liveness only if the key was
				// available until about when it began: a span that had
				// lasted more than a third of the stuck threshold (a
				// lease) when the fault came — a lock nobody could take
				// from the start — was not its doing.
				if slices.Contains(st.Faults, f.ID) && sp.from+int64(after*1e6)/StuckLeases >= spans[i].start {
					f.Landed = true
					note := fmt.Sprintf("afterwards nobody held %s for %s while clients tried %d acquires: the fault broke the lock's liveness", k, Millis(float64(sp.to-sp.from)/1e6), sp.tries)
					if f.Effect == "" {
						f.Effect = note
					} else if !strings.Contains(f.Effect, note) {
						f.Effect += "; " + note
					}
				}
			}
			res.Stuck = append(res.Stuck, st)
		}
		if o := orphan(k, ks, s.probes); o != "" {
			res.Orphans = append(res.Orphans, o)
		}
	}
	return res
}

// orphan says, of a key the end-of-run probe found held on a majority of
// the lock's nodes although its last holder's release had answered (ok,
// or not held), that nobody the history knows held it: the lock keeps a
// key alive on its own (a renewal that outlived its release, a release
// that missed a node). "" otherwise. Only stores whose probe reads the
// key (Redis: its PTTL) can say.
func orphan(k string, ks *keyState, probes []history.Event) string {
	if len(ks.recent) == 0 {
		return ""
	}
	last := ks.recent[len(ks.recent)-1]
	if last.how != EndRelease && last.how != EndReleaseNotHeld || ks.live.unknown > last.end {
		return "" // the last holder may still hold it, or an acquire that got no answer may
	}
	for i := len(probes) - 1; i >= 0; i-- {
		p := probes[i]
		if p.F != "lock" || p.Key != k || len(p.PTTL) == 0 {
			continue
		}
		present, left := 0, int64(-1)
		for _, v := range p.PTTL {
			if v >= -1 {
				present++
				left = max(left, v)
			}
		}
		if present*2 <= len(p.PTTL) && !(present == 1 && len(p.PTTL) == 1) {
			return ""
		}
		when := "no expiry"
		if left >= 0 {
			when = Millis(float64(left)) + " left"
		}
		return fmt.Sprintf("%s was held by nobody the history knows at the end: its last holder, client %d, had released it, yet it was on %d of %d nodes (%s)", k, last.client, present, len(p.PTTL), when)
	}
	return ""
}

// faultsAround are the faults active during [from, to] or ended less than
// a lease before it began: the ones that may have left a key unavailable.
func faultsAround(from, to, lease int64, faults []FaultWindow, spans []faultSpan) []int {
	var ids []int
	for i, f := range faults {
		if fs := spans[i]; fs.start < to && fs.end+lease > from {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

// stalledFor is how much of [from, to] outside every fault span the
// harness measured stalls that may have kept key k from its clients: a
// lock node's server waiting for a CPU, the coordinator unable to run (it
// forwards every request), or a client unable to run while its acquire
// of k (one not refused in the end: the replay clears the key of a stall
// in a refused one) or its release of k was in flight. Each covers the
// time it was measured.
func stalledFor(k string, from, to int64, spans []faultSpan, stalls []stall) int64 {
	var faults, both [][2]int64
	for _, f := range spans {
		if lo, hi := max(f.start, from), min(f.end, to); lo < hi {
			faults = append(faults, [2]int64{lo, hi})
		}
	}
	both = append(both, faults...)
	for _, x := range stalls {
		lo := x.start
		switch {
		case x.client < 0:
		case x.key == k:
			lo = max(lo, x.since)
		default:
			continue
		}
		if lo, hi := max(lo, from), min(x.end, to); lo < hi {
			both = append(both, [2]int64{lo, hi})
		}
	}
	return union(both) - union(faults)
}

// outside is how much of [from, to] no fault span covers.
func outside(from, to int64, spans []faultSpan) int64 {
	var parts [][2]int64
	for _, f := range spans {
		if lo, hi := max(f.start, from), min(f.end, to); lo < hi {
			parts = append(parts, [2]int64{lo, hi})
		}
	}
	return to - from - union(parts)
}

// stuckSentence says which keys got stuck, and which were left held by
// nobody the history knows, for the summary.
func stuckSentence(l LivenessResult) string {
	if len(l.Stuck) == 0 && len(l.Stalled) > 0 {
		return "liveness: " + StalledSentence(l)
	}
	if len(l.Stuck) == 0 {
		// Most runs end during or just after a fault; the summary tells
		// of a cut span only when the key stayed free for a lease after
		// the fault healed (a lock that recovers takes it sooner).
		if len(l.Unfinished) > 0 && l.Unfinished[0].OutsideFaultsMs >= l.StuckAfterMs/StuckLeases {
			return "liveness: " + UnfinishedSentence(l)
		}
		if len(l.Orphans) > 0 {
			return "liveness: " + l.Orphans[0]
		}
		return ""
	}
	x := l.Stuck[0]
	out := Millis(x.OutsideFaultsMs) + " of it outside faults"
	if x.StalledMs > 0 {
		out += fmt.Sprintf(", %s outside measured stalls of the harness too", Millis(x.OutsideFaultsMs-x.StalledMs))
	}
	s := fmt.Sprintf("liveness: stuck — nobody held %s for %s from t=%s (%s) while clients tried %d acquires; a key is stuck after %s",
		x.Key, Millis(x.ToMs-x.FromMs), Seconds(x.FromMs), out, x.Tries, Millis(l.StuckAfterMs))
	if n := len(l.Stuck) - 1; n > 0 {
		s += fmt.Sprintf(" (%s more)", plural(n, "stuck span", "stuck spans"))
	}
	if len(l.Orphans) > 0 {
		s += "; " + l.Orphans[0]
	}
	return s
}

// StalledSentence says of the first span that only the harness's stalls
// kept from being stuck that it is no evidence either way; "" when none.
func StalledSentence(l LivenessResult) string {
	if len(l.Stalled) == 0 {
		return ""
	}
	x := l.Stalled[0]
	s := fmt.Sprintf("no evidence — nobody held %s for %s from t=%s while clients tried %d acquires, %s of it outside faults, but measured stalls of the harness cover %s of that, and the %s left is under the %s after which a key is stuck",
		x.Key, Millis(x.ToMs-x.FromMs), Seconds(x.FromMs), x.Tries, Millis(x.OutsideFaultsMs), Millis(x.StalledMs), Millis(x.OutsideFaultsMs-x.StalledMs), Millis(l.StuckAfterMs))
	if n := len(l.Stalled) - 1; n > 0 {
		s += fmt.Sprintf(" (%s more)", plural(n, "such span", "such spans"))
	}
	return s
}

// UnfinishedSentence says of the first span the run's end cut short that
// the run cannot tell whether the key got stuck; "" when none was.
func UnfinishedSentence(l LivenessResult) string {
	if len(l.Unfinished) == 0 {
		return ""
	}
	x := l.Unfinished[0]
	ids := make([]string, len(x.Faults))
	for i, id := range x.Faults {
		ids[i] = strconv.Itoa(id)
	}
	faults := "fault " + strings.Join(ids, ", ")
	if len(ids) > 1 {
		faults = "faults " + strings.Join(ids, ", ")
	}
	return fmt.Sprintf("too soon to tell — nobody held %s from t=%s after %s to the end of the run, %s outside faults while clients tried %d acquires; a key is stuck after %s",
		x.Key, Seconds(x.FromMs), faults, Millis(x.OutsideFaultsMs), x.Tries, Millis(l.StuckAfterMs))
}

// AvailabilitySentence says how often an acquire got the lock while a
// fault was active and outside faults: "acquires granted during faults
// 36 % (outside 60 %)"; "" without faults.
func AvailabilitySentence(a AcquireStats) string {
	d := a.DuringFaults
	if d.Attempted == 0 {
		return ""
	}
	s := fmt.Sprintf("acquires granted during faults %.0f %% (%d of %d)", 100*float64(d.OK)/float64(d.Attempted), d.OK, d.Attempted)
	if out := a.Attempted - d.Attempted; out > 0 {
		s += fmt.Sprintf(", outside faults %.0f %% (%d of %d)", 100*float64(a.OK-d.OK)/float64(out), a.OK-d.OK, out)
	}
	return s
}
