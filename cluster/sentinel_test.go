package cluster

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
)

// A sentinel started through either backend watches the primary it was
// given, answers on loopback with the id its configuration gave it (so an
// impostor on its port is refused), logs to a host file, and leaves nothing
// behind when stopped. On docker it is a container of the nodes' image.
func TestSentinelOnEachBackendWatchesItsPrimaryAndCleansUp(t *testing.T) {
	for _, name := range []string{"local", "docker"} {
		t.Run(name, func(t *testing.T) {
			var b Backend
			if name == "docker" {
				b = newDocker(t)
			} else {
				local, err := NewLocal()
				if err != nil {
					t.Fatal(err)
				}
				b = local
			}
			ctx := context.Background()
			n, err := b.StartNode(ctx, NodeSpec{Name: "primary"})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Stop()
			s, err := StartSentinel(ctx, b, SentinelSpec{
				Name: "sentinel0", Masters: []Monitor{{Name: "m0", Addr: n.Addr(), Quorum: 1}},
				DownAfter: 250 * time.Millisecond, FailoverTimeout: time.Minute,
			})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Dir(s.Log())
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
			defer c.Close()
			got, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m0").StringSlice()
			if err != nil || strings.Join(got, ":") != n.Addr() {
				t.Errorf("the sentinel names %v (%v) as m0's primary, want %s", got, err, n.Addr())
			}
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if err := waitReady(wctx, s.Addr(), sentinelIdentity(strings.Repeat("0", 40)), nil); !errors.Is(err, errImpostor) {
				t.Errorf("another sentinel's id: %v, want errImpostor", err)
			}
			if b, _ := os.ReadFile(s.Log()); !strings.Contains(string(b), "+monitor master m0") {
				t.Errorf("the sentinel's log %s does not show it monitoring m0: %q", s.Log(), tail(b))
			}
			var id string
			if ds, ok := s.(*DockerSentinel); ok {
				id = ds.ContainerID()
				info, err := ds.d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if mode := info.Container.HostConfig.NetworkMode; mode != "host" {
					t.Errorf("network mode %q, want host", mode)
				}
				// Its main process is the server in sentinel mode.
				cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(info.Container.State.Pid) + "/cmdline")
				if !strings.Contains(string(cmdline), "[sentinel]") {
					t.Errorf("the container's main process is %q, not a sentinel", cmdline)
				}
			} else if name == "docker" {
				t.Errorf("the docker backend started a %T, not a container", s)
			}
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("sentinel directory %s left behind", dir)
			}
			if d, ok := b.(*Docker); ok {
				for _, left := range containers(t, d.RunID()) {
					if left == id {
						t.Errorf("Stop left the sentinel's container %s", short(id))
					}
				}
			}
		})
	}
}

// A server that refuses the identity request (a sentinel older than Redis
// 6.2 has no SENTINEL MYID) is not ready, and the error says why instead of
// waiting for lines that never come.
func TestIdentifyReportsARefusedRequest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("+PONG\r\n-ERR Unknown sentinel subcommand 'myid'\r\n"))
			c.Close()
		}
	}()
	err = identify(l.Addr().String(), sentinelIdentity(strings.Repeat("a", 40)))
	if err == nil || !strings.Contains(err.Error(), "SENTINEL MYID refused: -ERR Unknown sentinel subcommand") || errors.Is(err, errImpostor) {
		t.Errorf("identify: %v", err)
	}
}
