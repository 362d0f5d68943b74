package shrink

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// DDMin is Zeller and Hildebrandt's delta debugging ("Simplifying and
// Isolating Failure-Inducing Input", 2002): it returns a subset of items,
// in their order, that still fails and is 1-minimal — removing any single
// item of it makes test pass — unless ctx ends first, when it returns the
// smallest failing subset found so far. test reports whether a subset
// still fails (here: still violates); items itself is taken to fail and is
// never tested. Tests counts the calls of test: a subset already tested is
// never tested again.
//
// The search splits the current failing set into n parts and tests each
// part, then each complement (the set without one part); a failing one
// becomes the current set. When none fails it doubles n, up to one item a
// part, where the complements are the set less each single item: the
// definition of 1-minimal. A set of one item has the empty set as its one
// complement, so a failure that needs no item at all ends empty.
//
// Plain delta debugging rather than a property-testing shrinker (such as
// rapid's): each test here is a real run of seconds against real
// redis-server processes, an external and expensive oracle that answers
// with some noise, whereas rapid's shrinker works on the random bytes it
// generated itself, inside a property test, with the property evaluated in
// process thousands of times. ddmin's number of tests is what matters, and
// it bounds it: at most n² tests for n items, about log n when one item
// alone fails.
func DDMin[T any](ctx context.Context, items []T, test func([]T) bool) (subset []T, tests int) {
	tested := map[string]bool{}
	try := func(idx []int) bool {
		k := key(idx)
		if v, ok := tested[k]; ok {
			return v
		}
		if ctx.Err() != nil {
			return false
		}
		sub := make([]T, len(idx))
		for i, j := range idx {
			sub[i] = items[j]
		}
		tests++
		v := test(sub)
		tested[k] = v
		return v
	}
	cur := make([]int, len(items))
	for i := range cur {
		cur[i] = i
	}
	tested[key(cur)] = true
	n := 2
	for len(cur) > 0 && ctx.Err() == nil {
		n = min(n, len(cur))
		parts := split(cur, n)
		var next []int
		found := false
		if n > 1 { // with one part, that part is the whole set
			for _, p := range parts {
				if try(p) {
					next, n, found = p, 2, true
					break
				}
			}
		}
		for i := 0; i < len(parts) && !found; i++ {
			if c := complement(parts, i); try(c) {
				next, n, found = c, max(n-1, 2), true
			}
		}
		if found {
			cur = next
			continue
		}
		if n >= len(cur) {
			break // 1-minimal: no single item can go
		}
		n = min(2*n, len(cur))
	}
	out := make([]T, len(cur))
	for i, j := range cur {
		out[i] = items[j]
	}
	return out, tests
}

// split cuts idx into n parts of nearly equal size, in order.
func split(idx []int, n int) [][]int {
	var parts [][]int
	start := 0
	for i := 0; i < n; i++ {
		end := start + (len(idx)-start)/(n-i)
		parts = append(parts, idx[start:end])
		start = end
	}
	return parts
}

// complement is every part but part i, joined in order.
func complement(parts [][]int, i int) []int {
	var out []int
	for j, p := range parts {
		if j != i {
			out = append(out, p...)
		}
	}
	return slices.Clip(out)
}

func key(idx []int) string {
	var b strings.Builder
	for _, i := range idx {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(',')
	}
	return b.String()
}
