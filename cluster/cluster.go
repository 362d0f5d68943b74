// Package cluster starts the Redis nodes a run needs and gives the nemeses
// their handles: an address on loopback and the process behind it.
package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/internal/logtail"
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

// Known says whether a backend called name is registered; the error lists
// the known ones.
func Known(name string) error {
	if _, ok := backends[name]; ok {
		return nil
	}
	return fmt.Errorf("unknown backend %q; known backends: %s", name, strings.Join(BackendNames(), ", "))
}

// BackendNames lists the registered backends, in order.
func BackendNames() []string {
	var names []string
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open returns the backend called name; the error lists the known ones. It
// first removes what coordinators killed outright left in the scratch
// directory (RemoveOrphanDirs): a failure there costs this run nothing.
func Open(name string, opts BackendOptions) (Backend, error) {
	_, _ = RemoveOrphanDirs()
	if err := Known(name); err != nil {
		return nil, err
	}
	return backends[name](opts)
}

// Node is one running server of a run: a redis-server (a lock node, a
// replica, the resource), or a member of another store's ensemble (an etcd
// member, a ZooKeeper server, a PostgreSQL postmaster).
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
	// Log is the host path of the node's log, every start of it appended
	// (the runner keeps a copy before Stop removes it).
	Log() string
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

// identity is what a server must answer to prove it is the one we started:
// when our server fails to bind its port because another process took it,
// that process may be another run's Redis, or a proxy in front of one, and
// would answer PING just as well. The zero identity checks PING only.
type identity struct {
	request string // sent after PING
	lines   int    // lines of its reply
	want    string // one of those lines
}

// nodeIdentity: a node's dbfilename is ident.rdb.
func nodeIdentity(ident string) identity {
	// *2 $10 dbfilename $N <name>: five lines.
	return identity{request: "CONFIG GET dbfilename\r\n", lines: 5, want: ident + ".rdb"}
}

// sentinelIdentity: a sentinel's id is the one its configuration gave it.
func sentinelIdentity(myid string) identity {
	// $40 <id>: two lines.
	return identity{request: "SENTINEL MYID\r\n", lines: 2, want: myid}
}

// waitReady polls addr until the server there answers and proves its
// identity, or ctx ends, or exited closes.
func waitReady(ctx context.Context, addr string, id identity, exited <-chan struct{}) error {
	var last error
	for {
		if last = identify(addr, id); last == nil {
			return nil
		}
		if errors.Is(last, errImpostor) {
			return fmt.Errorf("%s: %w", addr, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis at %s did not answer PING: %w (last: %v)", addr, ctx.Err(), last)
		case <-exited:
			return fmt.Errorf("redis at %s exited during start-up", addr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

var errImpostor = errors.New("another server answers on this port (the port was taken before our server could bind it)")

// identify sends PING and the identity's request in one round trip and
// checks both replies.
func identify(addr string, id identity) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n" + id.request)); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("unexpected reply %q", line)
	}
	if id.request == "" {
		return nil
	}
	var reply strings.Builder
	for i := 0; i < id.lines; i++ {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if i == 0 && strings.HasPrefix(line, "-") {
			// A server too old for the request (SENTINEL MYID is Redis 6.2+).
			return fmt.Errorf("%s refused: %s", strings.TrimSpace(id.request), strings.TrimSpace(line))
		}
		reply.WriteString(line)
	}
	if !strings.Contains("\r\n"+reply.String(), "\r\n"+id.want+"\r\n") {
		return errImpostor
	}
	return nil
}

// ping checks that a server answers PING on addr.
func ping(addr string) error { return identify(addr, identity{}) }

// logTail is tail of the log file at path, for an error.
func logTail(path string) string {
	return strings.Join(logtail.File(path, 3, nil), " | ")
}

// tail is the last three non-empty lines of b (a server's log), joined.
func tail(b []byte) string {
	return strings.Join(logtail.Lines(b, 3, nil), " | ")
}

// onOwnPort starts a node again on the ports it must keep (a restart, a
// rejoin), and when the start fails because the port is still taken
// (taken(err): what the server's log said), waits until they are free
// and starts it again, three tries in all. On a busy machine a killed
// server's processes may hold their listening socket for seconds after the
// kill is sent, and another run's server may take the port meanwhile: the
// wait names what it waited for.
func onOwnPort(ctx context.Context, ports []int, start func() error, taken func(error) bool) error {
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		for _, port := range ports {
			if werr := waitPortFree(ctx, port, 30*time.Second); werr != nil {
				if err != nil {
					return fmt.Errorf("%w; then %w", err, werr)
				}
				return werr
			}
		}
		if err = start(); err == nil || !taken(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// waitPortFree waits until 127.0.0.1:port can be bound, for at most limit.
func waitPortFree(ctx context.Context, port int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			return l.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("port %d is still taken after %s (%v): a process of an earlier server of ours, or another program, holds it", port, limit, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for port %d to be free: %w", port, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
