package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockchaos/lockchaos/internal/ports"
)

// StoreZooKeeper is the store of the ZooKeeper locks: one ensemble of
// ZooKeeper servers, each a JVM child of the coordinator.
const StoreZooKeeper = "zookeeper"

// ZooKeeper's timing. A session's timeout is negotiated within
// [ZKMinSession, ZKMaxSession]; the server's defaults (2 and 20 ticks of
// 2 s) would turn a run's sub-second TTL into a 4 s session, so the tick
// is short and the bounds are set explicitly. locks/zk.go reports the
// clamped timeout as the lease.
const (
	zkTick       = 100 * time.Millisecond
	ZKMinSession = 2 * zkTick
	ZKMaxSession = 10 * time.Minute
)

// zkInstall installs the server and the jars it needs.
const zkInstall = "apt-get install -y zookeeper"

// zkJars are the server and a logging backend: zookeeper.jar's manifest
// names the rest of its classpath (/usr/share/java), and slf4j-simple
// writes the server's log to stderr, which goes to the member's log file.
var zkJars = []string{"/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"}

func init() {
	RegisterStore(Store{
		Name:        StoreZooKeeper,
		Description: "Apache ZooKeeper: an ensemble of servers (3 by default), each a JVM; failover kills the leader",
		Packages:    []string{"zookeeper"},
		Installed: func() bool {
			_, err := os.Stat(zkJars[0])
			return err == nil
		},
		Services:    []string{"zookeeper"},
		Modules:     []string{"github.com/go-zookeeper/zk"},
		References:  []string{"zk-lock", "zk-lock-fenced"},
		Fenced:      "zk-lock-fenced",
		NoClock:     "ZooKeeper expires sessions on the JVM's monotonic clock (System.nanoTime), which the clock shim leaves alone (it moves the wall clock only)",
		AdapterInit: func(addrs []string) map[string]any { return map[string]any{"connect": strings.Join(addrs, ",")} },
		FailsOver:   true,
		JVM:         true,
		Start:       startZooKeeper,
	})
}

func startZooKeeper(ctx context.Context, backend Backend, spec EnsembleSpec) (Ensemble, error) {
	box, err := storeBox(ctx, backend, StoreZooKeeper)
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java not found in PATH: install ZooKeeper with `%s`", zkInstall)
	}
	for _, j := range zkJars {
		if _, err := os.Stat(j); err != nil {
			return nil, fmt.Errorf("%s missing: install ZooKeeper with `%s`", j, zkInstall)
		}
	}
	n := spec.Members
	if n == 0 {
		n = 3
	}
	// Another run may take one of the 3n ports between our check and a
	// server's bind: the server exits (ZooKeeper exits when it cannot bind
	// its client, quorum or election port) or an impostor answers, and the
	// whole ensemble starts again on fresh ports.
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		e, err := launchZKEnsemble(ctx, box, java, n)
		if err == nil {
			return e, nil
		}
		last = err
		if ctx.Err() != nil || !errors.Is(err, errZKPort) {
			break
		}
	}
	return nil, fmt.Errorf("start zookeeper ensemble of %d: %w", n, last)
}

// errZKPort: a server exited during start-up or another answered on its
// port, the signs of a port taken by someone else.
var errZKPort = errors.New("port conflict")

func launchZKEnsemble(ctx context.Context, box *storeContainers, java string, n int) (*zkEnsemble, error) {
	e := &zkEnsemble{}
	for i := 0; i < n; i++ {
		s := &zkServer{name: "zk" + strconv.Itoa(i), id: i + 1, java: java, ens: e}
		for _, p := range []*int{&s.clientPort, &s.peerPort, &s.electionPort} {
			var err error
			if *p, err = ports.Free(ctx); err != nil {
				return nil, err
			}
		}
		e.members = append(e.members, s)
	}
	fail := func(err error) (*zkEnsemble, error) {
		for _, s := range e.members {
			if s.dir != "" {
				s.Stop()
			}
		}
		return nil, err
	}
	for _, s := range e.members {
		dir, err := mkScratch(s.name)
		if err != nil {
			return fail(fmt.Errorf("make a directory for zookeeper server %s: %w", s.name, err))
		}
		s.dir = dir
		s.proc.box = box.member(s.name, s.dir)
		if err := s.writeConfig(); err != nil {
			return fail(err)
		}
	}
	// All servers start before any is waited on: none serves before a
	// quorum of them has elected a leader.
	for _, s := range e.members {
		if err := s.start(); err != nil {
			return fail(err)
		}
	}
	readyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, s := range e.members {
		if err := s.waitServing(readyCtx); err != nil {
			return fail(err)
		}
	}
	if _, err := e.Leader(readyCtx); err != nil {
		return fail(err)
	}
	return e, nil
}

// zkEnsemble is a ZooKeeper ensemble: local processes, or containers.
type zkEnsemble struct {
	members []*zkServer
}

func (e *zkEnsemble) Members() []Node { return asNodes(e.members) }

// Serving is every member: ZooKeeper's clients pick a server and move to
// another when theirs fails.
func (e *zkEnsemble) Serving() []Node { return e.Members() }

// Close: the members are all the ensemble holds.
func (e *zkEnsemble) Close() error { return nil }

// Leader asks every member its mode (srvr). A leader cut off from its
// followers still says "leader" until it notices, so when two answer
// leader, the one whose last zxid is highest (the newest epoch) wins. When
// none answered leader because reads timed out (a JVM in a container on a
// loaded machine can take more than the second each read gets), it asks
// again, three times in all, within ctx: a slow answer is not "no leader".
func (e *zkEnsemble) Leader(ctx context.Context) (int, error) {
	for attempt := 1; ; attempt++ {
		i, timedOut, err := e.leader(ctx)
		if err == nil || !timedOut || attempt == 3 || ctx.Err() != nil {
			return i, err
		}
	}
}

// leader is one round of Leader; timedOut says some member's read timed out.
func (e *zkEnsemble) leader(ctx context.Context) (best int, timedOut bool, err error) {
	type answer struct {
		mode string
		zxid int64
		err  error
	}
	answers := make([]answer, len(e.members))
	var wg sync.WaitGroup
	for i, s := range e.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &answers[i]
			a.mode, a.zxid, a.err = s.mode(ctx)
		}()
	}
	wg.Wait()
	best = -1
	var errs []string
	for i, a := range answers {
		switch {
		case a.err != nil:
			var ne net.Error
			timedOut = timedOut || errors.Is(a.err, context.DeadlineExceeded) || (errors.As(a.err, &ne) && ne.Timeout())
			errs = append(errs, fmt.Sprintf("%s: %v", e.members[i].name, a.err))
		case a.mode == "leader" || a.mode == "standalone":
			if best < 0 || a.zxid > answers[best].zxid {
				best = i
			}
		default:
			errs = append(errs, fmt.Sprintf("%s: %s", e.members[i].name, a.mode))
		}
	}
	if best < 0 {
		return -1, timedOut, fmt.Errorf("no zookeeper server leads (%s)", strings.Join(errs, "; "))
	}
	return best, false, nil
}

// FailOver kills the leader (SIGKILL) and waits until the others elected
// one of themselves. heal restarts the old leader, which rejoins as a
// follower.
func (e *zkEnsemble) FailOver(ctx context.Context) (from, to int, heal func(context.Context) error, err error) {
	from, err = e.Leader(ctx)
	if err != nil {
		return -1, -1, nil, fmt.Errorf("zookeeper failover: %w", err)
	}
	old := e.members[from]
	if err := old.Signal(syscall.SIGKILL); err != nil {
		return from, -1, nil, fmt.Errorf("zookeeper failover: kill leader %s: %w", old.name, err)
	}
	<-old.proc.done()
	heal = func(ctx context.Context) error { return old.Restart(ctx) }
	to, err = AwaitNewLeader(ctx, e.Leader, from, 30*time.Second)
	if err != nil {
		return from, -1, heal, fmt.Errorf("zookeeper failover: no new leader after killing %s: %w", old.name, err)
	}
	return from, to, heal, nil
}

// zkServer is one ZooKeeper server, a JVM child process.
type zkServer struct {
	name                               string
	id                                 int // its myid, 1-based
	java                               string
	dir                                string
	clientPort, peerPort, electionPort int
	ens                                *zkEnsemble
	proc                               process // the JVM
}

func (s *zkServer) Name() string { return s.name }
func (s *zkServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.clientPort) }
func (s *zkServer) Log() string  { return filepath.Join(s.dir, "zookeeper.log") }

func (s *zkServer) writeConfig() error {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", zkTick.Milliseconds())
	// A follower has initLimit ticks to sync with a new leader and
	// syncLimit ticks of silence before it is dropped: sized for three JVMs
	// on a loaded two-core machine, not for the tick.
	b.WriteString("initLimit=100\nsyncLimit=30\n")
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", ZKMinSession.Milliseconds(), ZKMaxSession.Milliseconds())
	fmt.Fprintf(&b, "dataDir=%s\n", s.dir)
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=127.0.0.1\n", s.clientPort)
	// Every client of a run is one process per worker, through its own
	// proxy: all from 127.0.0.1.
	b.WriteString("maxClientCnxns=0\n")
	b.WriteString("admin.enableServer=false\n4lw.commands.whitelist=srvr,conf,ruok\n")
	for _, m := range s.ens.members {
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", m.id, m.peerPort, m.electionPort)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write zookeeper config for %s: %w", s.name, err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "myid"), []byte(strconv.Itoa(s.id)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write zookeeper myid for %s: %w", s.name, err)
	}
	return nil
}

// start launches the JVM; it does not wait.
func (s *zkServer) start() error {
	logf, err := os.OpenFile(s.Log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log of zookeeper server %s: %w", s.name, err)
	}
	defer logf.Close()
	cmd := exec.Command(s.java,
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		// No hsperfdata file in /tmp, which a SIGKILLed JVM would leave.
		"-XX:-UsePerfData",
		// Transaction logs are preallocated 64 MB at a time, in memory
		// (ScratchDir): 1 MB is plenty for a run's locks.
		"-Dzookeeper.preAllocSize=1024",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-cp", strings.Join(zkJars, ":"),
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(s.dir, "zoo.cfg"))
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := s.proc.start(cmd); err != nil {
		return fmt.Errorf("exec %s for zookeeper server %s: %w", s.java, s.name, err)
	}
	return nil
}

// waitIdentified polls until the server on the client port shows this
// member's data directory (conf), the proof it is ours: another run may
// have bound the port first, and its ZooKeeper would answer just as well.
func (s *zkServer) waitIdentified(ctx context.Context) error {
	exited := s.proc.done()
	want := "dataDir=" + filepath.Join(s.dir, "version-2") + "\n"
	var last error
	for {
		out, err := fourLetter(ctx, s.Addr(), "conf")
		switch {
		case err != nil:
			last = err
		case strings.Contains(out, want):
			return nil
		case out != "" && !strings.Contains(out, "not currently serving"):
			s.proc.kill()
			return fmt.Errorf("zookeeper server %s at %s: %w: %w", s.name, s.Addr(), errImpostor, errZKPort)
		default:
			last = fmt.Errorf("answered %q", strings.TrimSpace(out))
		}
		select {
		case <-ctx.Done():
			s.proc.kill()
			return fmt.Errorf("zookeeper server %s at %s did not answer: %w (last: %v; log: %s)", s.name, s.Addr(), ctx.Err(), last, s.logTail())
		case <-exited:
			return fmt.Errorf("zookeeper server %s at %s exited during start-up: %w (log: %s)", s.name, s.Addr(), errZKPort, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitServing waits until the server is ours and serves clients: a
// follower or leader of a quorum.
func (s *zkServer) waitServing(ctx context.Context) error {
	if err := s.waitIdentified(ctx); err != nil {
		return err
	}
	exited := s.proc.done()
	var last error
	for {
		mode, _, err := s.mode(ctx)
		if err == nil && mode != "" {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("zookeeper server %s at %s does not serve (no quorum?): %w (last: %v; log: %s)", s.name, s.Addr(), ctx.Err(), last, s.logTail())
		case <-exited:
			return fmt.Errorf("zookeeper server %s at %s exited before serving (log: %s)", s.name, s.Addr(), s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// mode is the server's own word on its role (srvr): leader, follower or
// standalone, with its last zxid; an error while it serves no clients.
func (s *zkServer) mode(ctx context.Context) (string, int64, error) {
	out, err := fourLetter(ctx, s.Addr(), "srvr")
	if err != nil {
		return "", 0, err
	}
	var mode string
	var zxid int64
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "Mode: "); ok {
			mode = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "Zxid: "); ok {
			zxid, _ = strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(v), "0x"), 16, 64)
		}
	}
	switch mode {
	case "leader", "follower", "standalone":
		return mode, zxid, nil
	}
	return "", 0, fmt.Errorf("not serving: %q", strings.TrimSpace(out))
}

// fourLetter sends one of ZooKeeper's four-letter commands and reads the
// answer to the end, within 1 s and ctx.
func fourLetter(ctx context.Context, addr, cmd string) (string, error) {
	deadline := time.Now().Add(time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var d net.Dialer
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil && len(b) == 0 {
		return "", err
	}
	return string(b), nil
}

func (s *zkServer) logTail() string { return logTail(s.Log()) }

// Signal sends sig to this server's JVM only, by its pid.
func (s *zkServer) Signal(sig syscall.Signal) error {
	return s.proc.signal("zookeeper server "+s.name, sig)
}

// Pid is the process id of the server's JVM.
func (s *zkServer) Pid() int { return s.proc.pid() }

// Restart starts the server again with its configuration and data, on
// the same ports, and waits until it proves it is ours and serves. A
// server that is ours but does not serve within 30 s (no quorum: the
// other members are down too) is left running, so that it joins them when
// they return, and the error says so.
func (s *zkServer) Restart(ctx context.Context) error {
	s.proc.kill()
	if err := s.start(); err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return s.waitServing(waitCtx)
}

// Stop kills the server and removes its directory.
func (s *zkServer) Stop() error {
	s.proc.kill()
	return os.RemoveAll(s.dir)
}

// HoldsLease says whether this server has the lock node token (its path,
// as locks/zk.go hands it out), asked of this server alone through a
// session of its own. A server outside the quorum serves no session and
// gives an error, not an answer.
func (s *zkServer) HoldsLease(ctx context.Context, key, token string) (bool, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	dialer := func(network, addr string, _ time.Duration) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	conn, events, err := zk.Connect([]string{s.Addr()}, time.Until(dl)+ZKMinSession,
		zk.WithDialer(dialer), zk.WithLogger(zkSilent{}), zk.WithLogInfo(false))
	if err != nil {
		return false, err
	}
	// Close waits up to a second for the server to end the session; the
	// caller need not.
	defer func() { go conn.Close() }()
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-ctx.Done():
			return false, fmt.Errorf("zookeeper server %s: no session: %w", s.name, ctx.Err())
		}
	}
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, _, err := conn.Exists(token)
		done <- result{ok, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return false, fmt.Errorf("zookeeper server %s: exists %s: %w", s.name, token, r.err)
		}
		return r.ok, nil
	case <-ctx.Done():
		return false, fmt.Errorf("zookeeper server %s: exists %s: %w", s.name, token, ctx.Err())
	}
}

// zkSilent drops the client library's log lines (one per reconnect).
type zkSilent struct{}

func (zkSilent) Printf(string, ...any) {}
