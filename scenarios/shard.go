package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Shard says which part of a matrix a summary holds: shard Index of Count
// (1-based), of the matrix whose cells are Planned (every cell's name, in
// the order of the unsharded matrix).
type Shard struct {
	Index   int      `json:"index"`
	Count   int      `json:"count"`
	Planned []string `json:"planned"`
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard reads --shard I/N: 1 ≤ I ≤ N.
func ParseShard(v string) (index, count int, err error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("--shard %q: want I/N, e.g. 2/3 (the second of three shards)", v)
	case n < 1:
		return 0, 0, fmt.Errorf("--shard %q: want at least 1 shard", v)
	case i < 1 || i > n:
		return 0, 0, fmt.Errorf("--shard %q: the shard index counts from 1 to %d", v, n)
	}
	return i, n, nil
}

// ShardOf returns the cells of shard index (1-based) of count. Which shard a
// cell falls in depends only on the names of the matrix's cells, never on
// timings or the machine (Deal): the catalogue first (its runs are the
// longest), then the grid cells that run, then those that do not (n/a,
// skipped), so that every shard gets its share of each. Every cell is in
// exactly one shard.
func ShardOf(cells []Cell, index, count int) []Cell {
	return Deal(cells, func(c Cell) string { return c.Name }, func(c Cell) int {
		switch {
		case c.Kind == KindCatalogue && c.Skip == "":
			return 0
		case c.Skip == "":
			return 1
		}
		return 2
	}, index, count)
}

// Deal returns the items of shard index (1-based) of count, in their
// order: the items are dealt out in turn, group by group (lowest group
// first), ordered within a group by a hash of their name, so that which
// shard an item falls in depends only on the names and groups of all the
// items, and every shard gets its share of each group. It is the one rule
// of --shard I/N, for chaos's cells and for audit's and compare's.
func Deal[T any](items []T, name func(T) string, group func(T) int, index, count int) []T {
	if count <= 1 {
		return items
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ia, ib := items[order[a]], items[order[b]]
		if ga, gb := group(ia), group(ib); ga != gb {
			return ga < gb
		}
		na, nb := name(ia), name(ib)
		if ha, hb := nameHash(na), nameHash(nb); ha != hb {
			return ha < hb
		}
		return na < nb
	})
	mine := map[int]bool{}
	for r, i := range order {
		if r%count == index-1 {
			mine[i] = true
		}
	}
	var out []T
	for i, x := range items { // in the items' order
		if mine[i] {
			out = append(out, x)
		}
	}
	return out
}

func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// Fingerprint identifies the configuration of a matrix: its cells, what
// each expects and how each runs (duration, seed, backend), and the flags
// that decide outcomes. Shards merge only when they share it. Paths are
// left out, so checkouts in different folders agree.
func Fingerprint(cells []Cell, quick, allowInconclusive bool) string {
	h := sha256.New()
	fmt.Fprintf(h, "quick=%v allow-inconclusive=%v\n", quick, allowInconclusive)
	for _, c := range cells {
		fmt.Fprintf(h, "%s|%s|%s|%s|%s|%d|%s|%s|%d|%s|%s\n", c.Name, c.Kind, c.Lock, c.Nemesis, c.Expect, c.Seeds,
			c.Skip, c.Config.Duration, c.Config.Seed, c.Config.Backend, c.Config.Image)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Names returns the cells' names in order.
func Names(cells []Cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.Name
	}
	return out
}

// MergeError is a set of summaries that cannot be merged: not shards of
// one matrix, or overlapping.
type MergeError struct{ msg string }

func (e MergeError) Error() string { return e.msg }

// Merge joins the summaries of the shards of one matrix (names[i] is
// where sums[i] came from, for messages) into the summary an unsharded run
// would have written: the same cells in the same order, tallied again.
// Shards that are missing leave their cells not-run (the matrix then fails
// as incomplete); missing lists them. Summaries of different matrices, or
// two holding the same shard or cell, are a MergeError.
func Merge(names []string, sums []Summary) (merged Summary, missing []string, err error) {
	if len(sums) == 0 {
		return Summary{}, nil, MergeError{"nothing to merge"}
	}
	first := sums[0]
	count := 1
	if first.Shard != nil {
		count = first.Shard.Count
	}
	seenShard := map[int]string{}
	seenCell := map[string]string{}
	var planned []string
	for i, s := range sums {
		if s.Plan == "" {
			return Summary{}, nil, MergeError{fmt.Sprintf("%s: its summary has no plan fingerprint (written by an older lockchaos): run it again", names[i])}
		}
		n, idx := 1, 1
		if s.Shard != nil {
			n, idx = s.Shard.Count, s.Shard.Index
		}
		if s.Plan != first.Plan || n != count || s.Quick != first.Quick || s.AllowInconclusive != first.AllowInconclusive {
			return Summary{}, nil, MergeError{fmt.Sprintf("%s (%s) and %s (%s) are shards of different configurations: run every shard with the same flags and build",
				names[0], describeConfig(first), names[i], describeConfig(s))}
		}
		if prev, ok := seenShard[idx]; ok {
			return Summary{}, nil, MergeError{fmt.Sprintf("%s and %s both hold shard %d/%d: give each shard once", prev, names[i], idx, n)}
		}
		seenShard[idx] = names[i]
		for _, c := range s.Cells {
			if prev, ok := seenCell[c.Name]; ok {
				return Summary{}, nil, MergeError{fmt.Sprintf("%s and %s both hold cell %s: the shards overlap", prev, names[i], c.Name)}
			}
			seenCell[c.Name] = names[i]
		}
		if s.Shard != nil && len(s.Shard.Planned) > len(planned) {
			planned = s.Shard.Planned
		}
	}
	byName := map[string]CellResult{}
	var hosts []string
	var begin, end time.Time
	var cells wallSpan
	for _, s := range sums {
		for _, c := range s.Cells {
			byName[c.Name] = c
			cells.add(c)
		}
		if s.Host != "" && !contains(hosts, s.Host) {
			hosts = append(hosts, s.Host)
		}
		if t, err := time.Parse(time.RFC3339, s.Started); err == nil {
			if begin.IsZero() || t.Before(begin) {
				begin = t
			}
			if e := t.Add(time.Duration(s.Seconds * float64(time.Second))); e.After(end) {
				end = e
			}
		}
	}
	merged = Summary{
		Quick: first.Quick, AllowInconclusive: first.AllowInconclusive, Plan: first.Plan,
		Host: strings.Join(hosts, ", "), Locks: first.Locks, Nemeses: first.Nemeses,
	}
	// The shards' starts are whole seconds; their cells' are exact.
	if !cells.first.IsZero() && (begin.IsZero() || cells.first.Before(begin)) {
		begin = cells.first
	}
	if cells.last.After(end) {
		end = cells.last
	}
	if !begin.IsZero() {
		merged.Started, merged.Seconds = begin.Format(time.RFC3339), end.Sub(begin).Seconds()
	}
	if planned == nil { // one unsharded summary
		planned = make([]string, 0, len(first.Cells))
		for _, c := range first.Cells {
			planned = append(planned, c.Name)
		}
	}
	for idx := 1; idx <= count; idx++ {
		if _, ok := seenShard[idx]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", idx, count))
		}
	}
	for _, name := range planned {
		c, ok := byName[name]
		if !ok {
			c = CellResult{Name: name, Status: StatusNotRun, Detail: "its shard (one of " + strings.Join(missing, ", ") + ") is missing from the merge"}
			if l, n, grid := strings.Cut(name, "+"); grid && contains(first.Locks, l) {
				c.Kind, c.Lock, c.Nemesis = KindGrid, l, n
			} else {
				c.Kind = KindCatalogue
			}
		}
		merged.Cells = append(merged.Cells, c)
		delete(byName, name)
	}
	if len(byName) > 0 {
		var extra []string
		for n := range byName {
			extra = append(extra, n)
		}
		sort.Strings(extra)
		return Summary{}, nil, MergeError{fmt.Sprintf("cells %s are not in the shards' plan: the shards are of different configurations", strings.Join(extra, ", "))}
	}
	merged.tally()
	return merged, missing, nil
}

func describeConfig(s Summary) string {
	d := "plan " + s.Plan
	if s.Shard != nil {
		d += ", shard " + s.Shard.String()
	} else {
		d += ", unsharded"
	}
	if s.Quick {
		d += ", --quick"
	}
	if s.AllowInconclusive {
		d += ", --allow-inconclusive"
	}
	return d
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
