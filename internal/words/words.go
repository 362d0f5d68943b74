// Package words spells counts in the messages and pages lockchaos writes.
package words

import "fmt"

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n with its noun: "1 seed", "3 seeds".
func Count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, Plural(n, one, many))
}
