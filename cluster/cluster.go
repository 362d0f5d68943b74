// Package cluster starts the Redis nodes a run needs and gives the nemeses
// their handles: an address on loopback and the process behind it.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Backend starts Redis nodes: local processes, containers, … Each backend
// registers itself under a name (--backend NAME).
type Backend interface {
	StartNode(ctx context.Context, spec NodeSpec) (Node, error)
	// Close releases what the backend itself holds (not the nodes).
	Close() error
}

// BackendOptions configure a backend.
type BackendOptions struct {
	// Image is the container image, for backends that run containers.
	Image string
}

var backends = map[string]func(BackendOptions) (Backend, error){}

// RegisterBackend adds a backend under name; call it from an init function.
func RegisterBackend(name string, open func(BackendOptions) (Backend, error)) {
	if _, dup := backends[name]; dup {
		panic("cluster: duplicate backend " + name)
	}
	backends[name] = open
}

// Open returns the backend called name; the error lists the known ones.
func Open(name string, opts BackendOptions) (Backend, error) {
	open, ok := backends[name]
	if !ok {
		var names []string
		for n := range backends {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown backend %q; known backends: %s", name, strings.Join(names, ", "))
	}
	return open(opts)
}

// Node is one running redis-server.
type Node interface {
	// Name is stable within a run ("n0", "n1", …, "resource").
	Name() string
	// Addr is the node's own address, always on 127.0.0.1.
	Addr() string
	// Signal sends sig to the node's process (SIGSTOP, SIGCONT, SIGKILL).
	Signal(sig syscall.Signal) error
	// Restart starts the node again at the same address after it was
	// killed (its data survives only as far as its persistence allows).
	Restart(ctx context.Context) error
	// Stop ends the node and removes what it left on disk.
	Stop() error
}

// NodeSpec says how to start one node.
type NodeSpec struct {
	Name string
	// AOF turns on append-only persistence: "" (off), "everysec", "always".
	AOF string
	// ClockShim is the clock shim library (cluster/clockshim) that
	// redis-server loads with LD_PRELOAD, and ClockFile its control file,
	// passed in $LOCKCHAOS_CLOCK_FILE; "" for none. Container backends
	// bind-mount both at their host paths, ClockFile by its directory: the
	// nemesis replaces the file with rename(2).
	ClockShim string
	ClockFile string
}

// ErrNotRunning: the node's process is not running (it was killed and not
// yet restarted), so a signal has nothing to reach.
var ErrNotRunning = errors.New("node not running")

// waitReady polls addr until Redis answers PING or ctx ends.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}) error {
	for {
		if err := ping(addr); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis at %s did not answer PING: %w", addr, ctx.Err())
		case <-exited:
			return fmt.Errorf("redis at %s exited during start-up", addr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != "+PONG\r\n" {
		return fmt.Errorf("unexpected reply %q", buf[:n])
	}
	return nil
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1. Another process
// may take it before it is used; callers retry on a bind failure.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
