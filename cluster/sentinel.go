package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/internal/ports"
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

// Sentinel is one running Redis Sentinel on 127.0.0.1, started by this run:
// a local redis-sentinel process, or a container.
type Sentinel interface {
	Name() string
	// Addr is the sentinel's own address, always on 127.0.0.1.
	Addr() string
	// Log is the host path of the sentinel's log file, which says how it
	// saw a failover.
	Log() string
	// Stop ends the sentinel and removes what it left on disk.
	Stop() error
}

// SentinelBackend is a backend that runs sentinels itself (as containers, …).
// StartSentinel uses local redis-sentinel processes for one that does not.
type SentinelBackend interface {
	StartSentinel(ctx context.Context, spec SentinelSpec) (Sentinel, error)
}

// StartSentinel starts one sentinel on b's terms: b's own when it is a
// SentinelBackend, otherwise a local redis-sentinel process. Either way it
// answers on a free port on 127.0.0.1 and has proved its identity.
func StartSentinel(ctx context.Context, b Backend, spec SentinelSpec) (Sentinel, error) {
	if sb, ok := b.(SentinelBackend); ok {
		return sb.StartSentinel(ctx, spec)
	}
	return startLocalSentinel(ctx, spec)
}

// sentinelConf is a sentinel's configuration file: port, its directory (dir,
// as the sentinel sees it), its log in that directory, its id (checked by
// waitReady) and the primaries it watches.
func sentinelConf(spec SentinelSpec, port int, dir, myid string) (string, error) {
	var conf strings.Builder
	fmt.Fprintf(&conf, "port %d\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\ndir %s\nlogfile %s\nsentinel myid %s\n",
		port, dir, path.Join(dir, "sentinel.log"), myid)
	for _, m := range spec.Masters {
		host, p, ok := strings.Cut(m.Addr, ":")
		if !ok || host != "127.0.0.1" {
			return "", fmt.Errorf("sentinel %s: primary %s must be on 127.0.0.1", spec.Name, m.Addr)
		}
		fmt.Fprintf(&conf, "sentinel monitor %s %s %s %d\n", m.Name, host, p, m.Quorum)
		fmt.Fprintf(&conf, "sentinel down-after-milliseconds %s %d\n", m.Name, max(spec.DownAfter.Milliseconds(), 1))
		fmt.Fprintf(&conf, "sentinel failover-timeout %s %d\n", m.Name, max(spec.FailoverTimeout.Milliseconds(), 1000))
		fmt.Fprintf(&conf, "sentinel parallel-syncs %s 1\n", m.Name)
	}
	return conf.String(), nil
}

// newSentinelDir makes a sentinel's host directory and writes its
// configuration there (Sentinel rewrites the file: it must be writable and
// its own, in a directory it may create files in). The configuration names
// the directory as dir, or as confDir when the sentinel sees it elsewhere
// (a container's /data). It returns the directory and the sentinel's id.
func newSentinelDir(spec SentinelSpec, port int, confDir string) (dir, myid string, err error) {
	dir, err = mkScratch(spec.Name)
	if err != nil {
		return "", "", fmt.Errorf("make a directory for sentinel %s: %w", spec.Name, err)
	}
	if confDir == "" {
		confDir = dir
	}
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	myid = hex.EncodeToString(b)
	conf, err := sentinelConf(spec, port, confDir, myid)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "sentinel.conf"), []byte(conf), 0o644)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("write the configuration of sentinel %s: %w", spec.Name, err)
	}
	return dir, myid, nil
}

// localSentinel is a redis-sentinel child process.
type localSentinel struct {
	name string
	port int
	dir  string
	proc process
}

// startLocalSentinel starts Debian's redis-sentinel on a free port and waits
// until it answers.
func startLocalSentinel(ctx context.Context, spec SentinelSpec) (Sentinel, error) {
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		return nil, errors.New("redis-sentinel not found in PATH: install it with `apt-get install -y redis-sentinel` (Debian/Ubuntu), or run `make setup` as root")
	}
	s, err := ports.Retry(ctx, func(port int) (*localSentinel, error) { return launchLocalSentinel(ctx, bin, spec, port) })
	if err != nil {
		return nil, fmt.Errorf("start sentinel %s: %w", spec.Name, err)
	}
	return s, nil
}

func launchLocalSentinel(ctx context.Context, bin string, spec SentinelSpec, port int) (*localSentinel, error) {
	dir, myid, err := newSentinelDir(spec, port, "")
	if err != nil {
		return nil, err
	}
	s := &localSentinel{name: spec.Name, port: port, dir: dir}
	if err := s.proc.start(exec.Command(bin, filepath.Join(dir, "sentinel.conf"))); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("exec %s: %w", bin, err)
	}
	readyCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := waitReady(readyCtx, s.Addr(), sentinelIdentity(myid), s.proc.done()); err != nil {
		log := logTail(s.Log())
		s.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, log)
	}
	return s, nil
}

func (s *localSentinel) Name() string { return s.name }
func (s *localSentinel) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }
func (s *localSentinel) Log() string  { return filepath.Join(s.dir, "sentinel.log") }

// Stop kills the sentinel and removes its directory.
func (s *localSentinel) Stop() error {
	s.proc.kill()
	return os.RemoveAll(s.dir)
}
