package cluster

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/ports"
)

func TestLocalNodeStartsPausesRestartsAndCleansUp(t *testing.T) {
	local, err := NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	n, err := local.StartNode(context.Background(), NodeSpec{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ln := n.(*LocalNode)
	if err := ping(n.Addr()); err != nil {
		t.Fatalf("fresh node does not answer: %v", err)
	}
	if err := n.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := ping(n.Addr()); err == nil {
		t.Error("a SIGSTOPped node answered PING")
	}
	if err := n.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := ping(n.Addr()); err != nil {
		t.Errorf("resumed node does not answer: %v", err)
	}
	old := ln.Pid()
	if err := ln.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ln.Pid() == old || ping(n.Addr()) != nil {
		t.Error("restart did not bring up a new process on the same address")
	}
	pid := ln.Pid()
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(ln.dir); !os.IsNotExist(err) {
		t.Errorf("node directory %s left behind", ln.dir)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("redis-server pid %d still running after Stop", pid)
	}
}

func TestMissingRedisServerSaysWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := NewLocal()
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y redis-server") {
		t.Errorf("error = %v", err)
	}
}

// A server that answers on a node's port but is not the node we started (the
// port was taken before our server could bind it) is refused, not mistaken
// for ours: two runs sharing a Redis would corrupt each other's verdicts.
func TestWaitReadyRefusesAnImpostor(t *testing.T) {
	local, err := NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	n, err := local.StartNode(context.Background(), NodeSpec{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	ln := n.(*LocalNode)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := waitReady(ctx, n.Addr(), nodeIdentity(ln.ident()), nil); err != nil {
		t.Fatalf("our own node: %v", err)
	}
	err = waitReady(ctx, n.Addr(), nodeIdentity("lockchaos-someone-else"), nil)
	if !errors.Is(err, errImpostor) {
		t.Fatalf("another node's ident: %v, want errImpostor", err)
	}
	if port, _ := strconv.Atoi(strings.TrimPrefix(n.Addr(), "127.0.0.1:")); port >= ports.EphemeralLow() {
		t.Errorf("node port %d is in the ephemeral range (from %d), where proxies can take it", port, ports.EphemeralLow())
	}
}
