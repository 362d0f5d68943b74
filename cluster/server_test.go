package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A store in a folder of its own builds its members from StartServers: a
// real server (redis-server here, standing in for any) on its own port and
// directory, which the nemeses can pause, kill and restart in place, and
// which Stop removes.
func TestServersStartPauseRestartAndStop(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (make setup)")
	}
	local, err := NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ping := func(ctx context.Context, addr string) error {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
		defer c.Close()
		return c.Ping(ctx).Err()
	}
	ss, err := StartServers(ctx, local, 2, ServerSpec{
		Store: "throwaway", Name: "tw",
		Command: func(dir string, port int) *exec.Cmd {
			return exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no")
		},
		Ready: func(ctx context.Context, addr, dir string) error {
			// Ours: the server on addr keeps its files in dir.
			c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
			defer c.Close()
			got, err := c.ConfigGet(ctx, "dir").Result()
			if err != nil {
				return err
			}
			if got["dir"] != dir {
				return fmt.Errorf("another server on %s (dir %q)", addr, got["dir"])
			}
			return nil
		},
		HoldsLease: func(ctx context.Context, addr, key, token string) (bool, error) { return false, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	var e Ensemble = ss
	if len(e.Members()) != 2 || len(e.Serving()) != 2 || e.Members()[1].Name() != "tw1" {
		t.Fatalf("members %v", e.Members())
	}
	s := ss[0]
	if _, ok := Node(s).(LeaseHolder); !ok {
		t.Error("a server is not a LeaseHolder: the nemeses would ask it as a Redis node")
	}
	if err := s.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	if ping(short, s.Addr()) == nil {
		t.Error("a paused server answered")
	}
	cancel()
	if err := s.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := ping(ctx, s.Addr()); err != nil {
		t.Errorf("resumed server: %v", err)
	}
	pid := s.Pid()
	if err := s.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Pid() == pid || ping(ctx, s.Addr()) != nil {
		t.Errorf("restart: pid %d (was %d), ping %v", s.Pid(), pid, ping(ctx, s.Addr()))
	}
	if b, _ := os.ReadFile(s.Log()); len(b) == 0 {
		t.Errorf("no log at %s", s.Log())
	}
	dir := s.Dir()
	for _, s := range ss {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stop left %s", dir)
	}
	if err := s.Signal(syscall.SIGCONT); !errors.Is(err, ErrNotRunning) {
		t.Errorf("signal after Stop: %v, want ErrNotRunning", err)
	}
}

// A server that its own settings refuse exits during its start: the error
// quotes its log and names a taken port only as one possible reason (a new
// store's author reads it first), not as the cause.
func TestAServerThatExitsAtStartSaysWhy(t *testing.T) {
	local, err := NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	_, err = StartServer(context.Background(), local, ServerSpec{
		Store: "throwaway", Name: "tw",
		Command: func(dir string, port int) *exec.Cmd {
			return exec.Command("sh", "-c", "echo can\\'t run as root without the -u switch >&2; exit 64")
		},
		Ready:      func(ctx context.Context, addr, dir string) error { return errors.New("no answer") },
		HoldsLease: func(ctx context.Context, addr, key, token string) (bool, error) { return false, nil },
	})
	if err == nil {
		t.Fatal("a server that exits at once started")
	}
	for _, want := range []string{"start throwaway member tw: it exited before it was ready", "its log says why", "can't run as root without the -u switch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// A taken port stays one reason it is tried again: Restart waits for
	// its own port on that error.
	if !errors.Is(err, errPortTaken) {
		t.Errorf("error %q is not tried on other ports (errPortTaken)", err)
	}
}
