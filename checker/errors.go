package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// LockError is one kind of error the lock under test answered with: an
// operation that got no answer it could read (an info completion) carries
// the library's own error text. Errors of one kind differ only in their
// numbers (ports, counts, times), so "dial tcp 127.0.0.1:7001: connection
// refused" and the same on port 7002 are one kind.
type LockError struct {
	Op string `json:"op"`
	// Error is the first error of the kind, as the lock said it.
	Error string `json:"error"`
	Count int    `json:"count"`
	// FirstMs is when the first one came; Client who got it.
	FirstMs float64 `json:"first_ms"`
	Client  int     `json:"client"`
}

// maxErrorKinds bounds the kinds kept: a lock that puts a fresh word in
// every error would otherwise grow the result without end. Errors of
// further kinds are counted into the last one kept.
const maxErrorKinds = 32

// errorLog collects the errors of a history by kind, in order of first
// appearance.
type errorLog struct {
	kinds []LockError
	first []int64 // the first error's time, per kind
	index map[string]int
}

func (l *errorLog) add(op, text string, client int, t int64) {
	if l.index == nil {
		l.index = map[string]int{}
	}
	k := op + "\x00" + errorShape(text)
	i, ok := l.index[k]
	if !ok && len(l.kinds) >= maxErrorKinds {
		i, ok = len(l.kinds)-1, true
	}
	if !ok {
		i = len(l.kinds)
		l.index[k] = i
		l.kinds = append(l.kinds, LockError{Op: op, Error: text, Client: client})
		l.first = append(l.first, t)
	}
	l.kinds[i].Count++
}

// result lists the kinds, the most frequent first.
func (l *errorLog) result(tl timeline) []LockError {
	out := make([]LockError, len(l.kinds))
	for i, k := range l.kinds {
		k.FirstMs = tl.ms(l.first[i])
		out[i] = k
	}
	slices.SortStableFunc(out, func(a, b LockError) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// errorShape is text with every run of digits replaced by one '#': the
// shape errors of one kind share.
func errorShape(text string) string {
	var b strings.Builder
	digits := false
	for _, r := range text {
		if r >= '0' && r <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	return b.String()
}

// errorsSentence says in a few words what the lock answered with errors:
// the two most frequent kinds, and how many others there were.
func errorsSentence(errs []LockError) string {
	if len(errs) == 0 {
		return ""
	}
	var parts []string
	for _, e := range errs[:min(2, len(errs))] {
		text := e.Error
		if len(text) > 160 {
			text = text[:157] + "…"
		}
		parts = append(parts, fmt.Sprintf("%s ended in an error, %q (first at t=%s, client %d)",
			plural(e.Count, e.Op, e.Op+"s"), text, Seconds(e.FirstMs), e.Client))
	}
	s := "lock errors: " + strings.Join(parts, "; ")
	if n := len(errs) - 2; n > 0 {
		s += fmt.Sprintf("; %s more (result.json: errors)", plural(n, "kind", "kinds"))
	}
	return s
}
