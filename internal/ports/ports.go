// Package ports hands out TCP ports on 127.0.0.1 below the kernel's
// ephemeral range, for every listener of a run that must keep its port:
// nodes (a crashed node restarts on the same port) and the per-link
// proxies (a link re-pointed after a failover, or re-enabled after a
// partition, listens again on the same port). Ports that listen(":0") and
// outgoing connections take come from the ephemeral range, so no client
// connection can take such a port while its listener is closed.
//
// A port handed out stays reserved until its lease is released, across
// every lockchaos process on the machine: a byte-range lock on one file in
// the temporary directory, one byte per port, which the kernel drops when
// the process ends however it ends. Without it, another run (another test
// package, a matrix beside the tests) could pick the port of a node that a
// nemesis has killed, while it is down, and the node could not come back.
package ports

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	_ "github.com/lockchaos/lockchaos/internal/linuxonly" // syscall.FcntlFlock
)

// A Lease holds the ports handed out to one owner (a run, a set of
// proxies) until Release.
type Lease struct {
	mu    sync.Mutex
	ports []int
}

// NewLease is an empty lease.
func NewLease() *Lease { return &Lease{} }

// Release gives the lease's ports back: the owner no longer listens on
// them, and will not again.
func (l *Lease) Release() {
	l.mu.Lock()
	ps := l.ports
	l.ports = nil
	l.mu.Unlock()
	for _, p := range ps {
		unreserve(p)
	}
}

type leaseKey struct{}

// WithLease is ctx with lease: Free and Retry under it reserve ports in
// that lease.
func WithLease(ctx context.Context, lease *Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, lease)
}

// process is the lease of ports asked for under no lease: held until the
// process ends.
var process = NewLease()

func leaseOf(ctx context.Context) *Lease {
	if l, ok := ctx.Value(leaseKey{}).(*Lease); ok && l != nil {
		return l
	}
	return process
}

// Free reserves a free TCP port on 127.0.0.1 below the ephemeral range, in
// ctx's lease (or for the life of the process when ctx has none). No other
// lockchaos process, and no other lease of this one, is handed it until
// the lease is released. A program that is not lockchaos may still bind
// it: callers check that the server answering is theirs, and retry (Retry).
func Free(ctx context.Context) (int, error) {
	lo, hi := 10000, EphemeralLow()
	if hi-lo < 1000 {
		lo = 1024
	}
	for i := 0; i < 200; i++ {
		port := lo + rand.IntN(hi-lo)
		if !reserve(port) {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			unreserve(port)
			continue
		}
		l.Close()
		lease := leaseOf(ctx)
		lease.mu.Lock()
		lease.ports = append(lease.ports, port)
		lease.mu.Unlock()
		return port, nil
	}
	return 0, fmt.Errorf("find a free port on 127.0.0.1 between %d and %d: 200 tries, all taken or reserved", lo, hi)
}

// Retry calls start with a free port (Free, in ctx's lease) until it
// succeeds, five times at most: a program that is not lockchaos may bind
// the same port first.
func Retry[T any](ctx context.Context, start func(port int) (T, error)) (T, error) {
	var zero T
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := Free(ctx)
		if err != nil {
			return zero, err
		}
		v, err := start(port)
		if err == nil {
			return v, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return zero, lastErr
}

// The reservations: held is this process's; the lock file's byte ranges
// are every process's.
var (
	mu       sync.Mutex
	held     = map[int]bool{}
	file     *os.File
	fileOnce sync.Once
)

// lockFile opens the file whose bytes stand for the ports, once. It stays
// open for the life of the process: closing any descriptor of it would
// drop every lock the process holds on it. When it cannot be opened (a
// file another user made, a read-only temporary directory) reservations
// hold within this process only.
func lockFile() *os.File {
	fileOnce.Do(func() {
		path := filepath.Join(os.TempDir(), "lockchaos-ports.lock")
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return
		}
		_ = f.Chmod(0o666) // other users' runs lock it too (umask took bits)
		file = f
	})
	return file
}

// reserve takes port for this process, unless this process or another
// holds it.
func reserve(port int) bool {
	mu.Lock()
	defer mu.Unlock()
	if held[port] {
		return false
	}
	if f := lockFile(); f != nil {
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: int64(port), Len: 1}
		err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
		if err == syscall.EAGAIN || err == syscall.EACCES {
			return false // another process holds it
		}
		// any other error (a file system without record locks): the
		// reservation holds within this process only
	}
	held[port] = true
	return true
}

func unreserve(port int) {
	mu.Lock()
	defer mu.Unlock()
	if !held[port] {
		return
	}
	delete(held, port)
	if f := lockFile(); f != nil {
		lk := syscall.Flock_t{Type: syscall.F_UNLCK, Whence: 0, Start: int64(port), Len: 1}
		_ = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
	}
}

// EphemeralLow is the start of the kernel's ephemeral port range.
func EphemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 1024 {
				return n
			}
		}
	}
	return 32768
}
