package nemesis

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
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
}

// ParsePlan reads a schedule option: "every", "every=500ms", "at=1s,3s",
// "random" or "random=100ms-2s". runSeed and name seed the nemesis's own
// random source, so one nemesis's draws do not depend on another's.
func ParsePlan(s string, runSeed int64, name string) (Plan, error) {
	h := fnv.New64a()
	h.Write([]byte(name))
	p := Plan{Seed: uint64(runSeed) ^ h.Sum64()}
	mode, arg, hasArg := strings.Cut(strings.TrimSpace(s), "=")
	bad := func(why string) (Plan, error) {
		return Plan{}, fmt.Errorf("option %s.schedule=%q: %s; want every, every=DUR, at=DUR,DUR,… or random[=MIN-MAX]", name, s, why)
	}
	switch mode {
	case "", "every":
		p.Mode = "every"
		if hasArg {
			d, err := time.ParseDuration(arg)
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
			d, err := time.ParseDuration(strings.TrimSpace(f))
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
			a, err1 := time.ParseDuration(lo)
			b, err2 := time.ParseDuration(hi)
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

// planner hands out the waits of one nemesis's schedule.
type planner struct {
	p        Plan
	interval time.Duration
	start    time.Time
	rng      *rand.Rand
	next     int // the next entry of At
}

func (p Plan) planner(interval time.Duration, start time.Time) *planner {
	return &planner{p: p, interval: interval, start: start, rng: rand.New(rand.NewPCG(p.Seed, 0x67617073))}
}

// wait returns how long to stay quiet before the next fault, measured from
// now; false when the plan has no more faults.
func (pl *planner) wait(now time.Time) (time.Duration, bool) {
	switch pl.p.Mode {
	case "at":
		if pl.next >= len(pl.p.At) {
			return 0, false
		}
		at := pl.start.Add(pl.p.At[pl.next])
		pl.next++
		return max(at.Sub(now), 0), true
	case "random":
		lo, hi := pl.p.Min, pl.p.Max
		if hi == 0 {
			lo, hi = pl.interval/2, pl.interval*3/2
		}
		return lo + time.Duration(pl.rng.Int64N(int64(hi-lo)+1)), true
	}
	if pl.p.Every > 0 {
		return pl.p.Every, true
	}
	return pl.interval, true
}

// Gaps returns the first n quiet times the plan would wait after the
// previous fault healed (for at: the offsets themselves): what "the same
// seed gives the same schedule" promises.
func (p Plan) Gaps(n int, interval time.Duration) []time.Duration {
	start := time.Unix(0, 0)
	pl := p.planner(interval, start)
	var out []time.Duration
	for i := 0; i < n; i++ {
		w, ok := pl.wait(start)
		if !ok {
			break
		}
		out = append(out, w)
	}
	return out
}

// targetRand is the nemesis's own source for choosing targets.
func (p Plan) targetRand() *rand.Rand {
	return rand.New(rand.NewPCG(p.Seed, 0x74617267))
}
