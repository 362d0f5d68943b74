package workload

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// The slow-hold nemesis stretches a client's critical section without
// pausing its process: SIGUSR1 turns the stretch on, SIGUSR2 turns it off.
// While it is on, a client whose hold time is up stays in its critical
// section, running normally (a watchdog keeps renewing), as a slow business
// operation would. This is the whole hook: a flag, set by signals.
var stretching atomic.Bool

// watchStretch starts listening for the two signals; Main calls it, so the
// coordinator, which imports this package, never catches them.
func watchStretch() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for s := range ch {
			stretching.Store(s == syscall.SIGUSR1)
		}
	}()
}

// stretchHold waits while the stretch is on. It returns false when the
// client learned meanwhile that it lost the lease (lost closed), so it must
// not touch the resource.
func (w *worker) stretchHold(lost <-chan struct{}) bool {
	for stretching.Load() && !w.stop.Load() {
		select {
		case <-lost:
			return false
		case <-time.After(time.Millisecond):
		}
	}
	return true
}
