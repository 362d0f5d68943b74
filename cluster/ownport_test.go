package cluster

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/ports"
)

// A restart on a port that a killed server's process still holds waits
// until the port is let go, then starts; a start that loses the port to
// another program after the wait starts again (issue 42: a rejoined
// PostgreSQL member exited with "could not create listen socket").
func TestOnOwnPortWaitsForThePort(t *testing.T) {
	port, err := ports.Free(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	held, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(300 * time.Millisecond); held.Close() }()
	var got net.Listener
	starts := 0
	taken := func(err error) bool { return strings.Contains(err.Error(), "address already in use") }
	err = onOwnPort(context.Background(), []int{port}, func() error {
		starts++
		if starts == 1 {
			// Another program takes the port between the wait and the bind.
			thief, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("take the port: %v", err)
			}
			go func() { time.Sleep(200 * time.Millisecond); thief.Close() }()
		}
		l, err := net.Listen("tcp", addr)
		got = l
		return err
	}, taken)
	if err != nil {
		t.Fatalf("onOwnPort: %v", err)
	}
	defer got.Close()
	if starts != 2 {
		t.Errorf("%d starts, want 2 (the first lost the port)", starts)
	}

	// A start that fails for another reason is not tried again.
	other, err := ports.Free(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	starts = 0
	err = onOwnPort(context.Background(), []int{other}, func() error {
		starts++
		return net.ErrClosed
	}, taken)
	if err == nil || starts != 1 {
		t.Errorf("a start failing for another reason: %v after %d starts, want its error after 1", err, starts)
	}
}
