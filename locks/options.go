package locks

import (
	"fmt"
	"strconv"
)

// Count is an option that counts something (replicas, retries): a whole
// number, 0 or more.
type Count int

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Count) UnmarshalText(b []byte) error {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return fmt.Errorf("want a whole number, 0 or more")
	}
	*c = Count(n)
	return nil
}

// PositiveCount is an option that counts something there must be at least
// one of (attempts): a whole number, 1 or more.
type PositiveCount int

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *PositiveCount) UnmarshalText(b []byte) error {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 1 {
		return fmt.Errorf("want a whole number, at least 1")
	}
	*c = PositiveCount(n)
	return nil
}
