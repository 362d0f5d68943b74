package history

import (
	"golang.org/x/sys/unix"

	// It builds only for Linux: a build for another system stops there.
	_ "github.com/lockchaos/lockchaos/internal/linuxonly"
)

// Now reads CLOCK_MONOTONIC in nanoseconds. All processes on one host share
// this clock and no nemesis touches it: the clock nemeses shift only the
// wall clock of Redis nodes.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("history: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}
