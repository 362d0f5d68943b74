package nemesis

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/option"
)

// Plan says when one nemesis injects its faults: the option
// `NAME.schedule`. Every mode waits for a fault to heal before the next one,
// so the faults of one nemesis never overlap; different nemeses run side by
// side and do.
type Plan struct {
	// Mode is "every" (the zero value), "at" or "random".
	Mode string
	// Every is the quiet time before each fault in mode every; 0 uses the
	// run's fault interval.
	Every time.Duration
	// At are the injection times in mode at, since the schedule started.
	At []time.Duration
	// Min and Max bound the random quiet gaps; 0 derives them from the
	// run's fault interval (half of it to one and a half).
	Min, Max time.Duration
	// Seed makes the random gaps and the nemesis's own choices of target
	// repeatable: the same run seed gives the same schedule.
	Seed uint64
	// Replay, when set, are the steps to take instead, in order: those a
	// run executed (its schedule.json), taken again.
	Replay []Step
}

// ParsePlan reads a schedule option: "every", "every=500ms", "at=1s,3s",
// "random" or "random=100ms-2s"; every time is an option.Span, so "every=2ttl"
// means twice ttl. runSeed and name seed the nemesis's own random source, so
// one nemesis's draws do not depend on another's.
func ParsePlan(s string, ttl time.Duration, runSeed int64, name string) (Plan, error) {
	h := fnv.New64a()
	h.Write([]byte(name))
	p := Plan{Seed: uint64(runSeed) ^ h.Sum64()}
	mode, arg, hasArg := strings.Cut(strings.TrimSpace(s), "=")
	bad := func(why string) (Plan, error) {
		return Plan{}, fmt.Errorf("option %s.schedule=%q: %s; want every, every=DUR, at=DUR,DUR,… or random[=MIN-MAX] (DUR: %s)", name, s, why, option.SpanHint)
	}
	span := func(s string) (time.Duration, error) {
		v, err := option.ParseSpan(s)
		return v.Resolve(ttl), err
	}
	switch mode {
	case "", "every":
		p.Mode = "every"
		if hasArg {
			d, err := span(arg)
			if err != nil || d <= 0 {
				return bad("every= needs a positive duration")
			}
			p.Every = d
		}
	case "at":
		p.Mode = "at"
		if !hasArg || arg == "" {
			return bad("at= needs times")
		}
		for _, f := range strings.Split(arg, ",") {
			d, err := span(f)
			if err != nil || d < 0 {
				return bad(fmt.Sprintf("%q is not a time since the start", f))
			}
			p.At = append(p.At, d)
		}
		slices.Sort(p.At)
	case "random":
		p.Mode = "random"
		if hasArg {
			lo, hi, ok := strings.Cut(arg, "-")
			a, err1 := span(lo)
			b, err2 := span(hi)
			if !ok || err1 != nil || err2 != nil || a < 0 || b < a || b == 0 {
				return bad("random= needs MIN-MAX, e.g. 100ms-2s")
			}
			p.Min, p.Max = a, b
		}
	default:
		return bad("unknown mode " + mode)
	}
	return p, nil
}

// String is the plan as the option would say it.
func (p Plan) String() string {
	if p.Replay != nil {
		return fmt.Sprintf("replay of %d steps", len(p.Replay))
	}
	switch p.Mode {
	case "at":
		var ts []string
		for _, d := range p.At {
			ts = append(ts, d.String())
		}
		return "at=" + strings.Join(ts, ",")
	case "random":
		if p.Max > 0 {
			return fmt.Sprintf("random=%v-%v", p.Min, p.Max)
		}
		return "random"
	}
	if p.Every > 0 {
		return "every=" + p.Every.String()
	}
	return "every"
}

// Step is one fault of a nemesis's schedule: when, and at whom. Every
// decision is drawn from the run's seed before the fault, whatever the
// workload does meanwhile, so the same seed gives the same steps: the same
// client, key and node, after the same quiet time. When the fault then
// happens is relative to the workload's events: a nemesis that aims at a
// lease waits, after the quiet time, for Client's next hold of Key.
type Step struct {
	Nemesis string `json:"nemesis"`
	// N counts the nemesis's steps from 1.
	N int `json:"n"`
	// Gap is the quiet time before the step: since the previous step of
	// this nemesis ended (modes every and random), or since the start of
	// the workload (mode at).
	Gap time.Duration `json:"gap_ns"`
	// Client, Key and Node are the step's target choices; a nemesis uses
	// those that apply to it (an option that names a node or client wins).
	Client int    `json:"client"`
	Key    string `json:"key"`
	Node   int    `json:"node"`
	// Seed is the step's own random source, for any other choice it makes.
	Seed uint64 `json:"seed"`
}

// Rand is the step's own random source: choices made with it depend on the
// seed and on nothing the workload did.
func (s Step) Rand() *rand.Rand { return rand.New(rand.NewPCG(s.Seed, 0x73746570)) }

// Shape is what a step chooses from.
type Shape struct {
	Clients, Keys, LockNodes int
	// KeyName names key index i.
	KeyName func(i int) string
}

// planner hands out the steps of one nemesis's schedule.
type planner struct {
	p        Plan
	name     string
	shape    Shape
	interval time.Duration
	rng      *rand.Rand
	n        int // steps handed out
}

func (p Plan) planner(name string, shape Shape, interval time.Duration) *planner {
	return &planner{p: p, name: name, shape: shape, interval: interval, rng: rand.New(rand.NewPCG(p.Seed, 0x67617073))}
}

// next returns the next step; false when the plan has no more.
func (pl *planner) next() (Step, bool) {
	if pl.p.Replay != nil {
		if pl.n >= len(pl.p.Replay) {
			return Step{}, false
		}
		s := pl.p.Replay[pl.n]
		pl.n++
		return s, true
	}
	var gap time.Duration
	switch pl.p.Mode {
	case "at":
		if pl.n >= len(pl.p.At) {
			return Step{}, false
		}
		gap = pl.p.At[pl.n]
	case "random":
		lo, hi := pl.p.Min, pl.p.Max
		if hi == 0 {
			lo, hi = pl.interval/2, pl.interval*3/2
		}
		gap = lo + time.Duration(pl.rng.Int64N(int64(hi-lo)+1))
	default:
		gap = pl.interval
		if pl.p.Every > 0 {
			gap = pl.p.Every
		}
	}
	pl.n++
	s := Step{Nemesis: pl.name, N: pl.n, Gap: gap,
		Client: pl.rng.IntN(max(pl.shape.Clients, 1)), Node: pl.rng.IntN(max(pl.shape.LockNodes, 1)), Seed: pl.rng.Uint64()}
	k := pl.rng.IntN(max(pl.shape.Keys, 1))
	if pl.shape.KeyName != nil {
		s.Key = pl.shape.KeyName(k)
	}
	return s, true
}

// Steps returns the first n steps of the plan for a run of this shape: what
// "the same seed gives the same schedule" promises.
func (p Plan) Steps(name string, shape Shape, interval time.Duration, n int) []Step {
	pl := p.planner(name, shape, interval)
	var out []Step
	for i := 0; i < n; i++ {
		s, ok := pl.next()
		if !ok {
			break
		}
		out = append(out, s)
	}
	return out
}
