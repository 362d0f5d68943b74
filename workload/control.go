package workload

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// The coordinator talks to a worker on its standard input, one line each:
//
//	{config as JSON}          the first line
//	go                        start the workload (the run's clock starts now)
//	stretch KEY MAX REST      keep the holds of KEY begun from now on inside the critical section
//	                          (REST > 0: begun after the worker has first held nothing for REST)
//	stretch KEY MAX REST stop the same, and the first one to get there waits for a pause (SIGSTOP)
//	unstretch                 let them go
//	cancel release AFTER      cancel the next release in flight AFTER ns from its invoke
//	cancel acquire AFTER      the same for the next acquire
//	stop                      (or the end of input) finish the iteration and exit
//
// The worker answers on its events, in the history: it writes a Ready line
// (read by the coordinator, never recorded) once it can start, and a
// history.Stretch event when it takes a stretch or lets one go, so a nemesis
// knows that every hold of KEY whose acquire returns from then on is held.
const (
	CmdGo        = "go"
	CmdStretch   = "stretch"
	CmdUnstretch = "unstretch"
	CmdStop      = "stop"
	CmdCancel    = "cancel"
)

// CancelCommand is the line that asks a worker to cancel its next op
// (history.Release or history.Acquire) in flight, after from its invoke (0:
// before its lock's call runs). The op is recorded as info with an error
// that begins with history.ErrCancelled, and the worker then does what a
// careful caller of a call whose outcome it does not know does: it releases
// again at once; after an acquire, it releases the lease the lock named
// when it answered cancelled (an adapter's token), if it named one.
func CancelCommand(op string, after time.Duration) string {
	return fmt.Sprintf("%s %s %d", CmdCancel, op, after.Nanoseconds())
}

// CancelAsked begins the message of an op's invoke that a nemesis
// asked to cancel (CancelCommand), followed by how long after the invoke.
const CancelAsked = "to be cancelled after "

// errCancelledByNemesis is the cause of a call's context that a nemesis
// cancelled.
var errCancelledByNemesis = errors.New("cancelled by a nemesis (cancel-client)")

// StretchHolding is the message of the stretch event a worker writes when a
// stretched hold reaches the end of its work and waits, before its write;
// StretchStopping, when it waits there for a pause; StretchResting, when it
// begins the rest a stretch asked for (its "on" follows the rest).
const (
	StretchHolding  = "holding"
	StretchStopping = "stopping"
	StretchResting  = "resting"
)

// Ready is the kind of the one line a worker writes when it has built its
// lock and waits for go. The coordinator consumes it; it is not history.
const Ready history.Kind = "ready"

// StretchCommand is the line that asks a worker to keep each hold of key in
// its critical section, once its hold time is up, for at most max from the
// invoke of the acquire that began it. The bound is the worker's own: a
// nemesis that asks for less than the lease can never, however late it or
// the coordinator runs, make a hold outlive its lease by stretching it.
//
// With stop, the first such hold to reach the end of its work says so and
// waits there, without the bound, until the stretch is withdrawn: the
// nemesis stops the process (SIGSTOP) while it waits, so that the pause
// lands exactly between the client's check and its write whatever the
// coordinator's speed, and withdraws the stretch before resuming it.
//
// With rest > 0 the worker first finishes what it is doing and then holds
// nothing and acquires nothing for rest; the stretch begins when the rest
// ends, and its event says so then. A lock library's background work left
// from the client's earlier holds (Redisson 3.52 keeps a renewal timer of
// each grant running until it fires while the client holds nothing) is
// over by the time the aimed hold begins.
func StretchCommand(key string, max, rest time.Duration, stop bool) string {
	cmd := fmt.Sprintf("%s %s %d %d", CmdStretch, key, max.Nanoseconds(), rest.Nanoseconds())
	if stop {
		cmd += " stop"
	}
	return cmd
}

// stretch is the state the control lines set: which key's holds stay in
// their critical section, and for how long at most. Only holds whose
// acquire was invoked after the stretch was taken (since) stay: a hold
// already under way when a nemesis asked was not what it aimed at.
type stretch struct {
	mu      sync.Mutex
	key     string
	max     time.Duration
	since   int64
	stop    bool          // wait for a pause at the wait, once
	rest    time.Duration // to rest before since is set (since is then in the future)
	changed chan struct{} // closed and replaced on every change
}

func newStretch() *stretch { return &stretch{changed: make(chan struct{})} }

// set takes a stretch (or, with key "", drops it) and returns when. With
// rest > 0 it applies to no hold yet: rested begins it once the worker
// has rested.
func (s *stretch) set(key string, max, rest time.Duration, stop bool) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key, s.max, s.since, s.stop, s.rest = key, max, history.Now(), stop, rest
	if rest > 0 {
		s.since = math.MaxInt64
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return s.since
}

// toRest says how long the worker must rest before its next acquire, the
// stretch's key, and the channel that closes if it changes meanwhile.
func (s *stretch) toRest() (time.Duration, string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rest, s.key, s.changed
}

// rested begins the stretch whose rest is over, unless it changed since
// toRest (changed closed), and returns when (0: it did not).
func (s *stretch) rested(changed <-chan struct{}) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-changed:
		return 0
	default:
	}
	s.rest, s.since = 0, history.Now()
	return s.since
}

// current returns the stretch for a hold of key whose acquire was invoked
// at invoked (0: none) and a channel closed at the next change.
func (s *stretch) current(key string, invoked int64) (time.Duration, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != key || invoked < s.since {
		return 0, s.changed
	}
	return s.max, s.changed
}

// takeStop says whether the hold that just reached its wait must wait for a
// pause, and spends the stop: it happens once per stretch.
func (s *stretch) takeStop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	stop := s.stop
	s.stop = false
	return stop
}

// control reads the coordinator's lines after the config: it returns when
// go arrives (true) or the input ends first (false); a goroutine then
// follows the rest, and the end of input or a stop line sets w.stop.
func (w *worker) control(in *bufio.Reader) bool {
	for {
		line, err := in.ReadString('\n')
		cmd := strings.TrimSpace(line)
		if cmd == CmdGo {
			break
		}
		if err != nil || cmd == CmdStop {
			return false
		}
	}
	go func() {
		for {
			line, err := in.ReadString('\n')
			f := strings.Fields(line)
			switch {
			case (len(f) == 4 || len(f) == 5 && f[4] == "stop") && f[0] == CmdStretch:
				ns, perr := strconv.ParseInt(f[2], 10, 64)
				rest, rerr := strconv.ParseInt(f[3], 10, 64)
				if perr != nil || ns <= 0 || rerr != nil || rest < 0 {
					fmt.Fprintf(w.log, "worker %d: bad control line %q\n", w.cfg.Client, line)
					continue
				}
				// The event's time is after the stretch was taken: every
				// acquire invoked after it is stretched. Taking it under
				// the emit lock keeps any acquire's invoke from falling
				// between the two, so the holds stretched are exactly
				// those invoked after the event — the ones the nemesis
				// waits for (an acquire invoked in between used to be
				// kept inside without the nemesis knowing it, until the
				// stretch's bound ran out and the fault was dropped).
				// With a rest, the run loop says "on" once it has rested.
				w.mu.Lock()
				w.stretch.set(f[1], time.Duration(ns), time.Duration(rest), len(f) == 5)
				if rest == 0 {
					w.emitLocked(history.Event{Kind: history.Stretch, Key: f[1], Message: "on"})
				}
				w.mu.Unlock()
			case len(f) == 3 && f[0] == CmdCancel && (f[1] == history.Release || f[1] == history.Acquire):
				ns, perr := strconv.ParseInt(f[2], 10, 64)
				if perr != nil || ns < 0 {
					fmt.Fprintf(w.log, "worker %d: bad control line %q\n", w.cfg.Client, line)
					continue
				}
				after := time.Duration(ns)
				if f[1] == history.Acquire {
					w.cancelAcquire.Store(&after)
				} else {
					w.cancelNext.Store(&after)
				}
			case len(f) == 1 && f[0] == CmdUnstretch:
				w.stretch.set("", 0, 0, false)
				w.emit(history.Event{Kind: history.Stretch, Message: "off"})
			case err != nil || (len(f) == 1 && f[0] == CmdStop):
				w.stop.Store(true)
				close(w.stopped)
				w.stretch.set("", 0, 0, false) // a held client must not wait for a nemesis that is gone
				return
			case len(f) > 0:
				fmt.Fprintf(w.log, "worker %d: unknown control line %q\n", w.cfg.Client, line)
			}
		}
	}()
	return true
}

// rest rests before the next acquire when a stretch asks for it: it holds
// nothing and acquires nothing for the rest's time, then begins the
// stretch and says so ("on"), so that the acquire that follows is the
// first the stretch keeps inside. A stretch withdrawn or replaced meanwhile
// ends the rest at once.
func (w *worker) rest() {
	d, key, changed := w.stretch.toRest()
	if d <= 0 {
		return
	}
	w.emit(history.Event{Kind: history.Stretch, Key: key, Message: StretchResting})
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-changed:
		return
	case <-w.stopped:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stretch.rested(changed) != 0 {
		w.emitLocked(history.Event{Kind: history.Stretch, Key: key, Message: "on"})
	}
}

// stretchHold keeps the critical section of h going, running normally (a
// watchdog keeps renewing), while a nemesis asks for it: until the stretch
// is withdrawn, its bound since the acquire's invoke passes, the worker is
// told to stop (the run ends), or the client learns it lost the lease. It
// returns false in the last case: the client must not touch the resource
// any more.
func (w *worker) stretchHold(h *heldLock) bool {
	said := false
	for !w.stop.Load() {
		max, changed := w.stretch.current(h.key, h.invoked)
		if max <= 0 {
			return true
		}
		left := time.Duration(h.invoked + max.Nanoseconds() - history.Now())
		if left <= 0 {
			return true
		}
		if !said {
			// A nemesis may want to act exactly here: past the hold's
			// work, before its write (a GC pause between a check and a
			// write).
			said = true
			if w.stretch.takeStop() {
				// The nemesis stops this process here: wait for it, and
				// for its resume, however late it comes (the wait is the
				// pause's, from now on).
				w.emit(history.Event{Kind: history.Stretch, Key: h.key, Message: StretchStopping})
				select {
				case <-h.lostCh:
					return false
				case <-changed:
				case <-w.stopped: // the run ends: no pause will come
				}
				continue
			}
			w.emit(history.Event{Kind: history.Stretch, Key: h.key, Message: StretchHolding})
		}
		t := time.NewTimer(left)
		select {
		case <-h.lostCh:
			t.Stop()
			return false
		case <-changed:
			t.Stop()
		case <-w.stopped:
			t.Stop()
		case <-t.C:
			return true
		}
	}
	return true
}

// StallThreshold is the least lateness a worker or the coordinator records
// as a stall, for a run with this TTL: a twentieth of it, at least 10 ms.
// Shorter delays are the noise of a busy machine and cannot explain a hold
// outliving its lease.
func StallThreshold(ttl time.Duration) time.Duration {
	return max(10*time.Millisecond, ttl/20)
}

// WatchStalls records, through emit, every time the calling process could
// not run for at least threshold: a ticker that fires late says the process
// (or the Go runtime in it) was descheduled. It runs until done is closed.
func WatchStalls(threshold time.Duration, done <-chan struct{}, emit func(history.Event)) {
	period := max(threshold/2, time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	last := history.Now()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		now := history.Now()
		if late := now - last - period.Nanoseconds(); late >= threshold.Nanoseconds() {
			emit(history.Event{Time: now, Kind: history.Stall, StallNs: late})
		}
		last = now
	}
}
