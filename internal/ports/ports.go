// Package ports hands out TCP ports on 127.0.0.1 below the kernel's
// ephemeral range, for every listener of a run that must keep its port:
// nodes (a crashed node restarts on the same port) and the per-link
// proxies (a link re-pointed after a failover, or re-enabled after a
// partition, listens again on the same port). Ports that listen(":0") and
// outgoing connections take come from the ephemeral range, so no client
// connection can take such a port while its listener is closed.
package ports

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Free finds a free TCP port on 127.0.0.1 below the ephemeral range. Two
// runs may still pick the same port at the same moment; the loser's bind
// fails, and callers retry (Retry).
func Free() (int, error) {
	lo, hi := 10000, EphemeralLow()
	if hi-lo < 1000 {
		lo = 1024
	}
	for i := 0; i < 200; i++ {
		port := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("find a free port on 127.0.0.1 between %d and %d: 200 tries, all taken", lo, hi)
}

// Retry calls start with a free port until it succeeds, five times at
// most: another run may bind the same port first.
func Retry[T any](ctx context.Context, start func(port int) (T, error)) (T, error) {
	var zero T
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := Free()
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
