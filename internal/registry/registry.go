// Package registry is the one registry of named things — locks, nemeses,
// stores — each package keeping one of its own kind: Add at start-up, then
// Lookup by name and All in name order.
package registry

import (
	"fmt"
	"github.com/lockchaos/lockchaos/internal/suggest"
	"sort"
	"strings"
	"sync"
)

// Of is a registry of values of kind T, safe for concurrent use.
type Of[T any] struct {
	// Unknown is the error for a name not registered, given the known
	// names in order; nil says "unknown KIND %q; did you mean ...? known:
	// ..." (suggest.Hint).
	Unknown func(name string, known []string) error
	kind    string
	mu      sync.Mutex
	byName  map[string]T
}

// New is an empty registry of kind (a word for errors: "lock").
func New[T any](kind string) *Of[T] {
	return &Of[T]{kind: kind, byName: map[string]T{}}
}

// Add registers v as name; an error when the name is taken.
func (r *Of[T]) Add(name string, v T) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("duplicate %s %s", r.kind, name)
	}
	r.byName[name] = v
	return nil
}

// Remove unregisters name (a test's own entry, when the test ends).
func (r *Of[T]) Remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byName, name)
}

// Lookup finds name; the error lists the known names.
func (r *Of[T]) Lookup(name string) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.byName[name]; ok {
		return v, nil
	}
	var zero T
	known := r.namesLocked()
	if r.Unknown != nil {
		return zero, r.Unknown(name, known)
	}
	return zero, fmt.Errorf("unknown %s %q%s; known: %s", r.kind, name, suggest.Hint(name, known, "%q"), strings.Join(known, ", "))
}

// All is every value, in name order.
func (r *Of[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []T
	for _, n := range r.namesLocked() {
		out = append(out, r.byName[n])
	}
	return out
}

// Names is every name, in order.
func (r *Of[T]) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.namesLocked()
}

func (r *Of[T]) namesLocked() []string {
	ns := make([]string, 0, len(r.byName))
	for n := range r.byName {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}
