package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/internal/ports"
)

// Local starts redis-server processes on this host: the embedded default
// backend. Each node gets a free port on 127.0.0.1 and a temporary directory.
type Local struct {
	bin string
}

func init() {
	RegisterBackend("local", func(BackendOptions) (Backend, error) { return NewLocal() })
}

// Close implements Backend; local nodes are stopped one by one.
func (l *Local) Close() error { return nil }

// NewLocal finds redis-server, or says how to install it.
func NewLocal() (*Local, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found in PATH: install it with `apt-get install -y redis-server` (Debian/Ubuntu), or run `make setup` as root")
	}
	return &Local{bin: bin}, nil
}

// StartNode starts one redis-server and waits until it answers PING.
func (l *Local) StartNode(ctx context.Context, spec NodeSpec) (Node, error) {
	n, err := ports.Retry(ctx, func(port int) (*LocalNode, error) { return l.start(ctx, spec, port) })
	if err != nil {
		return nil, fmt.Errorf("start redis node %s: %w", spec.Name, err)
	}
	return n, nil
}

// LocalNode is a redis-server child process.
type LocalNode struct {
	spec NodeSpec
	bin  string
	port int
	dir  string
	id   string // ident when dir is not the host's (a container's /data)
	proc process
}

func (l *Local) start(ctx context.Context, spec NodeSpec, port int) (*LocalNode, error) {
	dir, err := mkScratch(spec.Name)
	if err != nil {
		return nil, fmt.Errorf("make a directory for redis node %s: %w", spec.Name, err)
	}
	n := &LocalNode{spec: spec, bin: l.bin, port: port, dir: dir}
	if err := n.launch(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return n, nil
}

// ident names this node uniquely: its directory's base name (on the host,
// also for a container, whose /data it is).
func (n *LocalNode) ident() string {
	if n.id != "" {
		return n.id
	}
	return filepath.Base(n.dir)
}

func (n *LocalNode) args() []string {
	args := []string{
		"--port", strconv.Itoa(n.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", n.dir,
		"--logfile", n.Log(),
		"--save", "",
		// A name unique to this node, so waitReady can tell our server from
		// whatever else might answer on its port.
		"--dbfilename", n.ident() + ".rdb",
		// A replica's first full synchronisation starts at once, not after
		// Redis 7's default 5 s wait for more replicas to join it.
		"--repl-diskless-sync-delay", "0",
	}
	if n.spec.AOF != "" {
		args = append(args, "--appendonly", "yes", "--appendfsync", n.spec.AOF)
	} else {
		args = append(args, "--appendonly", "no")
	}
	return args
}

func (n *LocalNode) launch(ctx context.Context) error {
	cmd := exec.Command(n.bin, n.args()...)
	if n.spec.ClockShim != "" {
		cmd.Env = append(os.Environ(), "LD_PRELOAD="+n.spec.ClockShim, ClockFileEnv+"="+n.spec.ClockFile)
	}
	if err := n.proc.start(cmd); err != nil {
		return fmt.Errorf("exec %s: %w", n.bin, err)
	}
	readyCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := waitReady(readyCtx, n.Addr(), nodeIdentity(n.ident()), n.proc.done()); err != nil {
		n.proc.kill()
		return fmt.Errorf("%w (log: %s)", err, n.logTail())
	}
	return nil
}

func (n *LocalNode) Log() string { return filepath.Join(n.dir, "redis.log") }

func (n *LocalNode) logTail() string { return logTail(n.Log()) }

func (n *LocalNode) Name() string { return n.spec.Name }
func (n *LocalNode) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// Pid is the process id of the running redis-server.
func (n *LocalNode) Pid() int { return n.proc.pid() }

// Signal sends sig to this node's own process only, by its pid. A node
// whose process has exited (killed, not yet restarted) gives ErrNotRunning.
func (n *LocalNode) Signal(sig syscall.Signal) error {
	return n.proc.signal("redis node "+n.spec.Name, sig)
}

// Restart starts the node again on the same port and directory after it was
// killed, so clients and proxies find it where it was.
func (n *LocalNode) Restart(ctx context.Context) error {
	n.proc.kill()
	return n.launch(ctx)
}

// Stop kills the node and removes its directory.
func (n *LocalNode) Stop() error {
	n.proc.kill()
	return os.RemoveAll(n.dir)
}
