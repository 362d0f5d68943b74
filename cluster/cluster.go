// Package cluster starts the Redis nodes a run needs and gives the nemeses
// their handles: an address on loopback and the process behind it.
package cluster

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"time"
)

// Node is one running redis-server.
type Node interface {
	// Name is stable within a run ("n0", "n1", …, "resource").
	Name() string
	// Addr is the node's own address, always on 127.0.0.1.
	Addr() string
	// Signal sends sig to the node's process (SIGSTOP, SIGCONT, SIGKILL).
	Signal(sig syscall.Signal) error
	// Stop ends the node and removes what it left on disk.
	Stop() error
}

// NodeSpec says how to start one node.
type NodeSpec struct {
	Name string
	// AOF turns on append-only persistence: "" (off), "everysec", "always".
	AOF string
}

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
