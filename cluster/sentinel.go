package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Monitor is one primary a sentinel watches, under the name clients ask for.
type Monitor struct {
	Name   string
	Addr   string // 127.0.0.1:port of the primary itself, not a proxy
	Quorum int
}

// SentinelSpec says how to start one redis-sentinel.
type SentinelSpec struct {
	Name    string
	Masters []Monitor
	// DownAfter is how long a primary must not answer before this sentinel
	// thinks it is down.
	DownAfter time.Duration
	// FailoverTimeout bounds one failover; Sentinel also refuses to fail the
	// same primary over again within twice this time, and re-points replicas
	// that replicate from another address (our replication proxies) after
	// it, so keep it longer than the run.
	FailoverTimeout time.Duration
}

// Sentinel is a redis-sentinel process on 127.0.0.1, started by this run.
type Sentinel struct {
	name   string
	port   int
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartSentinel starts Debian's redis-sentinel on a free port and waits until
// it answers PING.
func StartSentinel(ctx context.Context, spec SentinelSpec) (*Sentinel, error) {
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		return nil, errors.New("redis-sentinel not found in PATH: install it with `apt-get install -y redis-sentinel` (Debian/Ubuntu), or run `make setup` as root")
	}
	s, err := onFreePort(ctx, func(port int) (*Sentinel, error) { return startSentinel(ctx, bin, spec, port) })
	if err != nil {
		return nil, fmt.Errorf("start sentinel %s: %w", spec.Name, err)
	}
	return s, nil
}

func startSentinel(ctx context.Context, bin string, spec SentinelSpec, port int) (*Sentinel, error) {
	dir, err := os.MkdirTemp("", "lockchaos-"+spec.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("make a directory for sentinel %s: %w", spec.Name, err)
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, "port %d\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\ndir %s\nlogfile %s\n",
		port, dir, filepath.Join(dir, "sentinel.log"))
	for _, m := range spec.Masters {
		host, p, ok := strings.Cut(m.Addr, ":")
		if !ok || host != "127.0.0.1" {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("sentinel %s: primary %s must be on 127.0.0.1", spec.Name, m.Addr)
		}
		fmt.Fprintf(&conf, "sentinel monitor %s %s %s %d\n", m.Name, host, p, m.Quorum)
		fmt.Fprintf(&conf, "sentinel down-after-milliseconds %s %d\n", m.Name, max(spec.DownAfter.Milliseconds(), 1))
		fmt.Fprintf(&conf, "sentinel failover-timeout %s %d\n", m.Name, max(spec.FailoverTimeout.Milliseconds(), 1000))
		fmt.Fprintf(&conf, "sentinel parallel-syncs %s 1\n", m.Name)
	}
	// Sentinel rewrites its configuration file: it must be writable and its own.
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("write sentinel configuration: %w", err)
	}
	cmd := exec.Command(bin, path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("exec %s: %w", bin, err)
	}
	s := &Sentinel{name: spec.Name, port: port, dir: dir, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(s.exited) }()
	readyCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Sentinels have no dbfilename to check; their ports come from the same
	// range as the nodes', out of the proxies' reach.
	if err := waitReady(readyCtx, s.Addr(), "", s.exited); err != nil {
		tail := s.logTail()
		s.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, tail)
	}
	return s, nil
}

func (s *Sentinel) Name() string { return s.name }
func (s *Sentinel) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Log is the sentinel's log file, which says how it saw a failover.
func (s *Sentinel) Log() string { return filepath.Join(s.dir, "sentinel.log") }

func (s *Sentinel) logTail() string {
	b, _ := os.ReadFile(s.Log())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// Stop kills the sentinel and removes its directory.
func (s *Sentinel) Stop() error {
	_ = s.cmd.Process.Kill()
	<-s.exited
	return os.RemoveAll(s.dir)
}
