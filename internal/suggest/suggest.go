// Package suggest finds, for a name nobody knows, the known names it was
// probably meant to be: "redis-lock" → redislock, "--lokc" → --lock,
// "pause" → pause-client, pause-node. Every "unknown …" error of the CLI
// and the registries asks it, so they all guess the same way.
package suggest

import (
	"fmt"
	"sort"
	"strings"
)

// Closest is at most three known names close to name, the closest first:
// equal but for case and punctuation, or within an edit distance of about
// a third of the name (a swap of two neighbours counts one); failing
// those, names of three letters or more that contain it or that it
// contains.
func Closest(name string, known []string) []string {
	n := fold(name)
	if n == "" {
		return nil
	}
	type cand struct {
		name string
		d    int
	}
	// Names within a few edits; only when none is, names that contain it
	// or that it contains (a name of a single letter is near nothing).
	var near, within []cand
	limit := max(1, len(n)/3)
	for _, k := range known {
		f := fold(k)
		if f == "" || k == name {
			continue
		}
		d := distance(n, f)
		switch {
		case d <= limit && d < len(n) && d < len(f):
			near = append(near, cand{k, d})
		case len(n) >= 3 && (strings.Contains(f, n) || strings.Contains(n, f) && len(f) >= 3):
			within = append(within, cand{k, abs(len(f) - len(n))})
		}
	}
	cands := near
	if len(cands) == 0 {
		cands = within
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for _, c := range cands {
		if len(out) == 3 {
			break
		}
		out = append(out, c.name)
	}
	return out
}

// Hint is " (did you mean X?)" (or "X or Y?") for name, each candidate
// written through format (`%q`, `--%s`), or "" when nothing is close.
func Hint(name string, known []string, format string) string {
	c := Closest(name, known)
	if len(c) == 0 {
		return ""
	}
	for i := range c {
		c[i] = fmt.Sprintf(format, c[i])
	}
	last := c[len(c)-1]
	if len(c) > 1 {
		last = strings.Join(c[:len(c)-1], ", ") + " or " + last
	}
	return " (did you mean " + last + "?)"
}

// fold drops case and the punctuation people vary: "Redis_Lock" and
// "redis-lock" are "redislock".
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', '.', ' ':
			return -1
		}
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// distance is the optimal string alignment distance of a and b (bytes):
// insertions, deletions, substitutions and swaps of neighbours.
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
