package checker

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/lockchaos/lockchaos/history"
)

// ms turns the milliseconds of a hand-written history into the monotonic
// nanoseconds of events.
func ms(t float64) int64 { return int64(t * 1e6) }

// hist builds a history by hand, in milliseconds since run start (t=0).
type hist struct{ events []history.Event }

func (h *hist) add(e history.Event) *hist { h.events = append(h.events, e); return h }

func (h *hist) op(c int, kind history.Kind, f, key string, t float64) *hist {
	return h.add(history.Event{Time: ms(t), Kind: kind, Client: c, F: f, Key: key})
}

// start begins a run that asked for no nemesis (its faults, if any, come
// from elsewhere); asked begins one that asked for these nemeses.
func (h *hist) start() *hist { return h.asked() }

func (h *hist) asked(nemeses ...string) *hist {
	return h.add(history.Event{Time: 0, Kind: history.RunStart, Client: history.NoClient,
		Run: &history.RunInfo{Lock: "redlock", Nemesis: append([]string{}, nemeses...), Seed: 7, Clients: 2}})
}

// leaseless starts a run of a lock without a lease.
func (h *hist) leaseless() *hist {
	h.start()
	h.events[len(h.events)-1].Run.Leaseless = true
	return h
}

func (h *hist) end(t float64) *hist {
	return h.add(history.Event{Time: ms(t), Kind: history.RunEnd, Client: history.NoClient})
}

// acquire: invoke at inv, ok at ok.
func (h *hist) acquire(c int, key string, inv, ok float64) *hist {
	return h.op(c, history.Invoke, history.Acquire, key, inv).op(c, history.OK, history.Acquire, key, ok)
}

func (h *hist) acquireAnswer(c int, key string, inv, done float64, kind history.Kind) *hist {
	return h.op(c, history.Invoke, history.Acquire, key, inv).op(c, kind, history.Acquire, key, done)
}

// release: invoke at inv, ok at done.
func (h *hist) release(c int, key string, inv, done float64) *hist {
	return h.op(c, history.Invoke, history.Release, key, inv).op(c, history.OK, history.Release, key, done)
}

func (h *hist) releaseNotHeld(c int, key string, inv, done float64) *hist {
	h.op(c, history.Invoke, history.Release, key, inv)
	return h.add(history.Event{Time: ms(done), Kind: history.Fail, Client: c, F: history.Release, Key: key, Error: history.ErrNotHeld})
}

// hold is a whole critical section: acquire invoked 1 ms before ok, release
// answered 1 ms after its invoke.
func (h *hist) hold(c int, key string, from, to float64) *hist {
	return h.acquire(c, key, from-1, from).release(c, key, to, to+1)
}

func (h *hist) lost(c int, key string, t float64) *hist {
	return h.op(c, history.Lost, "", key, t)
}

func (h *hist) exit(c int, t float64, expected bool) *hist {
	return h.add(history.Event{Time: ms(t), Kind: history.WorkerExit, Client: c, Expected: expected})
}

func (h *hist) fault(id int, name string, clients []int, from, to float64) *hist {
	f := &history.Fault{ID: id, Name: name, Target: "worker", Clients: clients}
	h.add(history.Event{Time: ms(from), Kind: history.FaultStart, Client: history.NoClient, Fault: f})
	if to >= 0 {
		h.add(history.Event{Time: ms(to), Kind: history.FaultEnd, Client: history.NoClient, Fault: f})
	}
	return h
}

func (h *hist) write(c int, key string, inv, done float64, kind history.Kind, value, fence int64) *hist {
	h.add(history.Event{Time: ms(inv), Kind: history.Invoke, Client: c, F: history.Write, Key: key, Value: history.Int64(value), Fence: fence})
	return h.add(history.Event{Time: ms(done), Kind: kind, Client: c, F: history.Write, Key: key})
}

func (h *hist) read(c int, key string, inv, done float64, value, fence int64) *hist {
	h.op(c, history.Invoke, history.Read, key, inv)
	return h.add(history.Event{Time: ms(done), Kind: history.OK, Client: c, F: history.Read, Key: key, Value: history.Int64(value), Fence: fence})
}

func (h *hist) probeResource(key string, t float64, value int64) *hist {
	return h.add(history.Event{Time: ms(t), Kind: history.Probe, Client: history.NoClient, F: "resource", Key: key, Value: history.Int64(value)})
}

func (h *hist) probeLock(key string, t float64, pttl ...int64) *hist {
	return h.add(history.Event{Time: ms(t), Kind: history.Probe, Client: history.NoClient, F: "lock", Key: key, PTTL: pttl})
}

// shuffle returns events in another arrival order that a real history file
// could have: each worker's own events stay in order (one pipe per worker),
// while the coordinator's events (faults, exits, probes, run start and end)
// may land anywhere.
func shuffle(events []history.Event, pick func(n int) int) []history.Event {
	streams := map[int][]history.Event{}
	var order [][]history.Event
	for _, e := range events {
		if e.Client == history.NoClient || e.Kind == history.WorkerExit {
			order = append(order, []history.Event{e})
			continue
		}
		streams[e.Client] = append(streams[e.Client], e)
	}
	for _, c := range sortedKeys(streams) {
		order = append(order, streams[c])
	}
	out := make([]history.Event, 0, len(events))
	for len(order) > 0 {
		i := pick(len(order))
		out = append(out, order[i][0])
		if order[i] = order[i][1:]; len(order[i]) == 0 {
			order = slices.Delete(order, i, i+1)
		}
	}
	return out
}

func randomPick(seed uint64) func(int) int {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return r.IntN
}

// comparable drops what legitimately differs between two checks of the
// same history.
func comparable(r Result) Result {
	r.Mutex.CheckMs = 0
	return r
}

// stall records that client c (-1: the coordinator) could not run from
// from to to.
func (h *hist) stall(c int, from, to float64) *hist {
	return h.add(history.Event{Time: ms(to), Kind: history.Stall, Client: c, StallNs: ms(to - from)})
}

// stretch records a step of a fault keeping client c inside its hold at t:
// "on" (the request taken), "holding" (the hold waits to be let go), "off".
func (h *hist) stretch(c int, msg string, t float64) *hist {
	return h.add(history.Event{Time: ms(t), Kind: history.Stretch, Client: c, Key: "lock:0", Message: msg})
}

// nodeStall records that lock node n waited on the run queue from..to.
func (h *hist) nodeStall(n string, from, to float64) *hist {
	return h.add(history.Event{Time: ms(to), Kind: history.Stall, Client: history.NoClient, Node: n, StallNs: ms(to - from)})
}

// aimed records a fault aimed at client c's hold of key that began (its
// acquire returned) at since, with what the nemesis saw it do (nil: said
// nothing).
func (h *hist) aimed(id int, name string, c int, key string, since, from, to float64, effect *history.Effect) *hist {
	f := &history.Fault{ID: id, Name: name, Target: "lock node 0", Aim: &history.Aim{Client: c, Key: key, Since: ms(since)}}
	h.add(history.Event{Time: ms(from), Kind: history.FaultStart, Client: history.NoClient, Fault: f})
	return h.add(history.Event{Time: ms(to), Kind: history.FaultEnd, Client: history.NoClient, Fault: f, Effect: effect})
}

// slowReply records a slow-reply fault on client c's links from..to, aimed
// at its hold of key that began at since, which landed; the servers had
// answered that hold's acquire at answered (its nemesis measured it).
func (h *hist) slowReply(id, c int, key string, since, from, to, answered float64) *hist {
	f := &history.Fault{ID: id, Name: "slow-reply", Action: history.ActionNetwork, Target: "links of client " + fmt.Sprint(c),
		Clients: []int{c}, Aim: &history.Aim{Client: c, Key: key, Since: ms(since)}}
	h.add(history.Event{Time: ms(from), Kind: history.FaultStart, Client: history.NoClient, Fault: f})
	return h.add(history.Event{Time: ms(to), Kind: history.FaultEnd, Client: history.NoClient, Fault: f,
		Effect: &history.Effect{Landed: true, Answered: ms(answered)}})
}

// blind marks the run begun last as one of a lock whose release ends
// whoever's lock (history.RunInfo.BlindRelease).
func (h *hist) blind() *hist {
	h.lastRun().BlindRelease = true
	return h
}

// lastRun is the run-start of the run begun last.
func (h *hist) lastRun() *history.RunInfo {
	for i := len(h.events) - 1; i >= 0; i-- {
		if h.events[i].Kind == history.RunStart {
			return h.events[i].Run
		}
	}
	panic("hist: no run-start")
}

// releaseTimedOut: a release invoked at inv whose client gave up on it at
// done, not knowing whether it ran.
func (h *hist) releaseTimedOut(c int, key string, inv, done float64) *hist {
	h.op(c, history.Invoke, history.Release, key, inv)
	return h.add(history.Event{Time: ms(done), Kind: history.Fail, Client: c, F: history.Release, Key: key, Error: "read timed out"})
}

// ttl sets the lease of the run begun last (its run-start's TTL), in ms.
func (h *hist) ttl(leaseMs int64) *hist {
	h.lastRun().TTLms = leaseMs
	return h
}

// linkFault records fault id, a slowed or cut link (it delays, it frees
// no key), active from..to.
func (h *hist) linkFault(id int, name string, from, to float64) *hist {
	f := &history.Fault{ID: id, Name: name, Target: "lock node 0", Action: history.ActionNetwork}
	h.add(history.Event{Time: ms(from), Kind: history.FaultStart, Client: history.NoClient, Fault: f})
	return h.add(history.Event{Time: ms(to), Kind: history.FaultEnd, Client: history.NoClient, Fault: f})
}
