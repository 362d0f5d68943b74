package compare

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/scenarios"
)

// ShardOf returns the cells of shard index (1-based) of count, chosen by
// the cells' names as chaos's are (scenarios.Deal): the cells that run
// first, then those that do not, so that every shard gets its share of
// the runs. Every seed of a cell runs in its shard, so a cell stops early
// as it would unsharded.
func ShardOf(cells []Cell, index, count int) []Cell {
	return scenarios.Deal(cells, Cell.Name, func(c Cell) int {
		if c.Skip == "" {
			return 0
		}
		return 1
	}, index, count)
}

// Fingerprint identifies the configuration of a comparison: its spec
// (but for --parallel, which changes no outcome) and its cells as
// planned. Shards merge only when they share it. Paths (a --lock-file's)
// are left out, so checkouts in different folders agree.
func Fingerprint(spec Spec, cells []Cell) string {
	h := sha256.New()
	spec.Parallel = 0
	b, _ := json.Marshal(spec)
	h.Write(b)
	for _, c := range cells {
		cfg := c.Config
		cfg.LockFile, cfg.Out = "", ""
		b, _ := json.Marshal(cfg)
		fmt.Fprintf(h, "\n%s|%s|%s|%s", c.Name(), c.Skip, c.Why, b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// MarkShard marks c as shard sh of the comparison of spec whose cells were
// planned (before ShardOf chose cmp's).
func (c *Comparison) MarkShard(sh scenarios.Shard, planned []Cell) {
	names := make([]string, len(planned))
	for i, p := range planned {
		names[i] = p.Name()
	}
	sh.Planned = names
	c.Shard, c.Plan = &sh, Fingerprint(c.Spec, planned)
}

// Merge joins the comparisons of the shards of one plan (names[i] is where
// cmps[i] came from, for messages) into the comparison an unsharded run
// would have written: the same cells and rows in the same order. A
// missing shard leaves its cells not run (SkipMissing); missing lists it.
// Comparisons that are not shards, shards of different plans or builds,
// or two holding the same shard or cell are an error.
func Merge(names []string, cmps []Comparison) (merged Comparison, missing []string, err error) {
	if len(cmps) == 0 {
		return Comparison{}, nil, fmt.Errorf("nothing to merge")
	}
	first := cmps[0]
	seenShard := map[int]string{}
	seenCell := map[string]string{}
	cells := map[string]Cell{}
	rows := map[string]Row{}
	var hosts, starts []string
	var seconds []float64
	for i, c := range cmps {
		if c.Shard == nil || c.Plan == "" {
			return Comparison{}, nil, fmt.Errorf("%s is not a shard (--shard I/N writes one): only shards are merged", names[i])
		}
		if c.Plan != first.Plan || c.Shard.Count != first.Shard.Count || c.Version != first.Version {
			return Comparison{}, nil, fmt.Errorf("%s (%s) and %s (%s) are shards of different configurations: run every shard with the same flags and build",
				names[0], describe(first), names[i], describe(c))
		}
		if prev, ok := seenShard[c.Shard.Index]; ok {
			return Comparison{}, nil, fmt.Errorf("%s and %s both hold shard %s: give each shard once", prev, names[i], c.Shard)
		}
		seenShard[c.Shard.Index] = names[i]
		if len(c.Cells) != len(c.Rows) {
			return Comparison{}, nil, fmt.Errorf("%s: %d cells but %d rows: the shard did not finish writing", names[i], len(c.Cells), len(c.Rows))
		}
		for k, cell := range c.Cells {
			if prev, ok := seenCell[cell.Name()]; ok {
				return Comparison{}, nil, fmt.Errorf("%s and %s both hold cell %s: the shards overlap", prev, names[i], cell.Name())
			}
			seenCell[cell.Name()] = names[i]
			cells[cell.Name()], rows[cell.Name()] = cell, c.Rows[k]
		}
		if c.Host != "" && !contains(hosts, c.Host) {
			hosts = append(hosts, c.Host)
		}
		starts, seconds = append(starts, c.Started), append(seconds, c.Seconds)
		merged.Interrupted = merged.Interrupted || c.Interrupted
	}
	for idx := 1; idx <= first.Shard.Count; idx++ {
		if _, ok := seenShard[idx]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", idx, first.Shard.Count))
		}
	}
	// The cells of a missing shard: the plan is every lock against every
	// fault, in that order (Plan), so their names give them back.
	planned := map[string]Cell{}
	for _, l := range first.Spec.Locks {
		for _, n := range first.Spec.Nemeses {
			c := Cell{Lock: l, Nemesis: n, Skip: SkipMissing, Why: "not run: its shard (one of " + strings.Join(missing, ", ") + ") is missing from the merge"}
			planned[c.Name()] = c
		}
	}
	merged.Schema, merged.Version, merged.Host, merged.Spec = Schema, first.Version, strings.Join(hosts, ", "), first.Spec
	merged.Started, merged.Seconds = Span(starts, seconds)
	for _, name := range first.Shard.Planned {
		c, ok := cells[name]
		r := rows[name]
		if !ok {
			if c, ok = planned[name]; !ok {
				return Comparison{}, nil, fmt.Errorf("cell %s of the shards' plan is not a lock against a fault of their spec", name)
			}
			r = rowOf(c, nil, first.Spec.Seeds, false)
		}
		merged.Cells, merged.Rows = append(merged.Cells, c), append(merged.Rows, r)
		delete(cells, name)
	}
	if len(cells) > 0 {
		return Comparison{}, nil, fmt.Errorf("cells not in the shards' plan: the shards are of different configurations")
	}
	return merged, missing, nil
}

func describe(c Comparison) string {
	return fmt.Sprintf("plan %s, shard %s, lockchaos %s", c.Plan, c.Shard, c.Version)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Span is the time from the earliest start (RFC 3339) to the latest end
// of the parts (shards) that started at starts[i] and took seconds[i].
func Span(starts []string, seconds []float64) (started string, secs float64) {
	var begin, end time.Time
	for i, s := range starts {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			continue
		}
		if begin.IsZero() || t.Before(begin) {
			begin = t
		}
		if e := t.Add(time.Duration(seconds[i] * float64(time.Second))); e.After(end) {
			end = e
		}
	}
	if begin.IsZero() {
		return "", 0
	}
	return begin.Format(time.RFC3339), end.Sub(begin).Seconds()
}
