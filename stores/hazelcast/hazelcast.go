// Package hazelcast is the Hazelcast store: three members of Hazelcast 5.4
// (JVMs, children of the coordinator, each on a free port) whose CP
// Subsystem keeps the locks in a Raft group, and its lock, the FencedLock
// (adapters/java/hazelcast-fenced-lock).
//
// 5.4.0 is the last open-source release with the CP Subsystem (from 5.5 it
// is Hazelcast Enterprise's); its one jar is the member and the client.
// It comes from Maven Central into the local Maven repository: make setup
// fetches it, and so does the first run that needs it (Jar).
package hazelcast

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/jvmcds"
	"github.com/lockchaos/lockchaos/internal/logtail"
	"github.com/lockchaos/lockchaos/internal/ports"
)

// Name is the store's name (a lock's Store).
const Name = "hazelcast"

// Version is the Hazelcast release the members run, the one the adapter's
// pom.xml pins.
const Version = "5.4.0"

// Cluster is the members' cluster name, which a client must give.
const Cluster = "lockchaos"

// Fetch puts the member's jar into the local Maven repository.
const Fetch = "mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get -Dartifact=com.hazelcast:hazelcast:" + Version + " -Dtransitive=false"

func init() {
	cluster.RegisterStore(cluster.Store{
		Name:        Name,
		Description: "Hazelcast " + Version + "'s CP Subsystem: three members (JVMs) keep the locks in a Raft group, held by clients' CP sessions; failover kills the leader of the locks' group",
		// Maven fetches the jar; its package brings a JRE to run it.
		Packages: []string{"maven"},
		Installed: func() bool {
			_, java := exec.LookPath("java")
			_, mvn := exec.LookPath("mvn")
			return java == nil && mvn == nil
		},
		References: []string{"hazelcast-fenced-lock", "etcd-mutex-fenced"},
		Fenced:     "hazelcast-fenced-lock",
		NoClock:    "the clock shim is not put under the Hazelcast members yet (their CP sessions expire by the Raft leader's wall clock, which a clock fault could move)",
		AdapterInit: func([]string) map[string]any {
			return map[string]any{"cluster": Cluster}
		},
		FailsOver: true,
		JVM:       true,
		Start:     start,
	})
}

// Jar is the member's jar in the local Maven repository. Maven's
// repository is under Java's user.home, the home the password database
// gives, which need not be $HOME (a CI job or a test may set HOME
// elsewhere): Jar looks under both. When the jar is in neither, Jar
// fetches it once (Fetch, as an adapter is built on first use) and says so.
func Jar() (string, error) {
	jarMu.Lock()
	defer jarMu.Unlock()
	if jar := findJar(); jar != "" {
		return jar, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", fmt.Errorf("Hazelcast %s is not in the local Maven repository (%s) and mvn is not in PATH to fetch it: install it with `apt-get install -y maven` (make setup does)", Version, strings.Join(homes(), ", "))
	}
	fmt.Fprintf(os.Stderr, "lockchaos: Hazelcast %s is not in the local Maven repository: fetching it now with %s (first use; this can take a minute)\n", Version, Fetch)
	args := strings.Fields(Fetch)
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("fetch Hazelcast %s with `%s`: %v\n%s", Version, Fetch, err, out)
	}
	if jar := findJar(); jar != "" {
		return jar, nil
	}
	return "", fmt.Errorf("`%s` succeeded but Hazelcast %s's jar is in none of %s: is Maven's localRepository set elsewhere (settings.xml)?", Fetch, Version, strings.Join(homes(), ", "))
}

var jarMu sync.Mutex

// findJar is the jar in the Maven repository of one of homes, or "".
func findJar() string {
	for _, h := range homes() {
		jar := filepath.Join(h, ".m2", "repository", "com", "hazelcast", "hazelcast", Version, "hazelcast-"+Version+".jar")
		if _, err := os.Stat(jar); err == nil {
			return jar
		}
	}
	return ""
}

// homes are $HOME and the password database's home of this user (Java's
// user.home), each once.
func homes() []string {
	var hs []string
	if h, err := os.UserHomeDir(); err == nil {
		hs = append(hs, h)
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" && !slices.Contains(hs, u.HomeDir) {
		hs = append(hs, u.HomeDir)
	}
	return hs
}

// Timing. A CP session lives SessionTTL (the run's lease in whole seconds,
// at least 2: it must outlast a heartbeat, one a second). A Raft follower
// that missed 3 heartbeats of 500 ms starts an election, which waits a
// second for votes. A member silent for 10 s leaves the cluster (longer
// than a paused member's pause); a CP member that left is removed from
// the CP groups after a minute, unless a restarted member takes its place
// first (ready).
const (
	heartbeat   = time.Second
	autoRemoval = time.Minute
)

// SessionTTL is the CP session's time to live for a run's lease.
func SessionTTL(lease time.Duration) time.Duration {
	s := (lease + time.Second - 1) / time.Second * time.Second
	return max(s, 2*heartbeat)
}

// ensemble is the members, all CP members of one CP Subsystem of three:
// each serves clients, and forwards what they ask to the Raft group's
// leader.
type ensemble struct {
	java, jar string
	ttl       time.Duration

	mu      sync.Mutex
	members []*cluster.Server
	starts  map[string]int64 // a member's directory -> its log's length when it last started
	addrs   map[int]string   // a member's index -> its address (once it had a port)
	// firstPort is closed once member 0 has its port: the others then start.
	firstPort chan struct{}
	firstOnce sync.Once
	formed    atomic.Bool // the CP Subsystem formed: a member that starts now is promoted
	failMu    sync.Mutex
}

func start(ctx context.Context, backend cluster.Backend, spec cluster.EnsembleSpec) (cluster.Ensemble, error) {
	jar, err := Jar()
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java not found in PATH: install it with `apt-get install -y default-jdk-headless`")
	}
	warm(java, jar)
	n := spec.Members
	if n == 0 {
		n = 3
	}
	if n < 3 {
		return nil, fmt.Errorf("hazelcast: the CP Subsystem needs at least 3 members, not %d", n)
	}
	// The lease the run records is the session's TTL, or the verdict's
	// account of what expired when would be wrong.
	if spec.Lease > 0 && SessionTTL(spec.Lease) != spec.Lease {
		return nil, fmt.Errorf("hazelcast: a CP session lives whole seconds, at least 2 s: a lease (--ttl) of %s cannot be one; give --ttl %s", spec.Lease, SessionTTL(spec.Lease))
	}
	e := &ensemble{java: java, jar: jar, ttl: SessionTTL(spec.Lease), starts: map[string]int64{}, addrs: map[int]string{}, firstPort: make(chan struct{})}
	fail := func(err error) (cluster.Ensemble, error) {
		for _, m := range e.Members() {
			m.(*cluster.Server).Stop()
		}
		return nil, err
	}
	// Member 0 starts first, and the others as soon as it has its port,
	// each listing it: the JVMs warm up side by side (each takes seconds
	// of CPU before it listens). A joining member waits for member 0 to
	// listen (the join's connection timeout) rather than form a cluster
	// of its own.
	type started struct {
		s   *cluster.Server
		err error
	}
	results := make([]chan started, n)
	for i := range n {
		results[i] = make(chan started, 1)
		go func() {
			s, err := cluster.StartServer(ctx, backend, cluster.ServerSpec{
				Store: Name, Name: "hz" + strconv.Itoa(i),
				Command:    func(dir string, port int) *exec.Cmd { return e.command(i, dir, port) },
				Ready:      e.ready,
				HoldsLease: holdsLease,
				// A member restarted by a heal is a JVM that joins anew and
				// waits to be listed among the CP members: over a minute on
				// containers beside the CPU hogs while Go compiled (2026-11-30).
				StartTimeout: 2 * time.Minute,
			})
			results[i] <- started{s, err}
		}()
		if i == 0 {
			select {
			case <-e.firstPort:
			case r := <-results[0]:
				results[0] <- r // it failed before it had a port
			}
		}
	}
	var errs []error
	for i := range n {
		r := <-results[i]
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		e.mu.Lock()
		e.members = append(e.members, r.s)
		e.mu.Unlock()
	}
	if len(errs) > 0 {
		return fail(errors.Join(errs...))
	}
	// The CP Subsystem forms once cp-member-count members have joined and
	// agreed on who they are (CP discovery: a member killed before that
	// ends makes the others terminate), which each logs,
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, s := range e.members {
		for {
			log, err := os.ReadFile(s.Log())
			if err == nil && bytes.Contains(log, []byte("CP Subsystem is initialized with")) {
				break
			}
			select {
			case <-fctx.Done():
				return fail(fmt.Errorf("hazelcast: %s did not log that the CP Subsystem formed within a minute (log: %s)", s.Name(), tail(s.Log())))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	// and its METADATA group has elected a leader, which the members log.
	for {
		_, err := e.Leader(fctx)
		if err == nil {
			break
		}
		select {
		case <-fctx.Done():
			return fail(fmt.Errorf("hazelcast: no leader after a minute: %v", err))
		case <-time.After(100 * time.Millisecond):
		}
	}
	e.formed.Store(true)
	return e, nil
}

func (e *ensemble) Members() []cluster.Node {
	e.mu.Lock()
	defer e.mu.Unlock()
	ns := make([]cluster.Node, len(e.members))
	for i, m := range e.members {
		ns[i] = m
	}
	return ns
}

// Serving is every member: a client talks to one and moves to another
// when its connection fails.
func (e *ensemble) Serving() []cluster.Node { return e.Members() }

func (e *ensemble) Close() error { return nil }

// command writes the member's configuration and returns its JVM's command.
// A member lists itself and member 0, the one the others join; once the
// cluster formed (a restart), every member.
func (e *ensemble) command(i int, dir string, port int) *exec.Cmd {
	e.mu.Lock()
	self := "127.0.0.1:" + strconv.Itoa(port)
	e.addrs[i] = self
	if i == 0 {
		defer e.firstOnce.Do(func() { close(e.firstPort) })
	}
	peers := []string{self}
	if i != 0 {
		peers = append(peers, e.addrs[0])
	}
	// Until the cluster formed, member 0 is the one to join: two others
	// listing each other could form a second cluster while it starts.
	for j, a := range e.addrs {
		if j != i && j != 0 && e.formed.Load() {
			peers = append(peers, a)
		}
	}
	log := filepath.Join(dir, "server.log")
	if st, err := os.Stat(log); err == nil {
		e.starts[dir] = st.Size()
	}
	e.mu.Unlock()
	conf := filepath.Join(dir, "member.yaml")
	if err := os.WriteFile(conf, []byte(config(port, peers, e.ttl)), 0o644); err != nil {
		// The member then fails to start, and says why in its log.
		fmt.Fprintf(os.Stderr, "hazelcast: write %s: %v\n", conf, err)
	}
	return memberCommand(e.java, e.jar, conf, jvmcds.Flags(e.java, e.jar))
}

// memberCommand runs a member of configuration conf, the JVM's flags first.
func memberCommand(java, jar, conf string, flags []string) *exec.Cmd {
	args := append(flags,
		"-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		// No hsperfdata file in /tmp, which a SIGKILLed JVM would leave.
		"-XX:-UsePerfData",
		"-Dhazelcast.config="+conf,
		"-cp", jar, "com.hazelcast.core.server.HazelcastMemberStarter")
	return exec.Command(java, args...)
}

var warmMu sync.Mutex

// warm writes the members' class-data archive (jvmcds) unless it exists:
// once on a machine, before the first ensemble starts (seconds), a lone
// member started with the flags that write it, and stopped once it
// started (SIGTERM: a normal exit, which writes it). Its members then
// start on half the CPU. A failure only means they start slower.
func warm(java, jar string) {
	warmMu.Lock()
	defer warmMu.Unlock()
	dir, err := os.MkdirTemp("", "lockchaos-hz-warm-")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	lease := ports.NewLease()
	defer lease.Release()
	_ = jvmcds.Write(java, jar, func(flags []string) error {
		port, err := ports.Free(ports.WithLease(context.Background(), lease))
		if err != nil {
			return err
		}
		conf := filepath.Join(dir, "member.yaml")
		if err := os.WriteFile(conf, []byte(config(port, []string{"127.0.0.1:" + strconv.Itoa(port)}, 2*heartbeat)), 0o644); err != nil {
			return err
		}
		log := filepath.Join(dir, "server.log")
		out, err := os.Create(log)
		if err != nil {
			return err
		}
		defer out.Close()
		cmd := memberCommand(java, jar, conf, flags)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		started := []byte("[127.0.0.1]:" + strconv.Itoa(port) + " is STARTED")
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if b, _ := os.ReadFile(log); bytes.Contains(b, started) {
				break
			}
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			return <-done
		}
	})
}

// config is a member's configuration: its port on 127.0.0.1 only, the
// others found by TCP/IP at the listed addresses, the REST endpoints the
// store reads and writes (CP), and the CP Subsystem's timing.
func config(port int, peers []string, ttl time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, `hazelcast:
  cluster-name: %s
  properties:
    hazelcast.phone.home.enabled: false
    hazelcast.logging.type: jdk
    hazelcast.heartbeat.interval.seconds: 1
    hazelcast.max.no.heartbeat.seconds: 10
  network:
    port: {auto-increment: false, port: %d}
    interfaces: {enabled: true, interfaces: [127.0.0.1]}
    join:
      auto-detection: {enabled: false}
      multicast: {enabled: false}
      tcp-ip:
        enabled: true
        connection-timeout-seconds: 30
        member-list:
`, Cluster, port)
	for _, p := range peers {
		fmt.Fprintf(&b, "          - %s\n", p)
	}
	fmt.Fprintf(&b, `    rest-api:
      enabled: true
      endpoint-groups:
        CP: {enabled: true}
  cp-subsystem:
    cp-member-count: 3
    session-time-to-live-seconds: %d
    session-heartbeat-interval-seconds: %d
    missing-cp-member-auto-removal-seconds: %d
    raft-algorithm:
      leader-election-timeout-in-millis: 1000
      leader-heartbeat-period-in-millis: 500
      max-missed-leader-heartbeat-count: 3
`, int(ttl/time.Second), int(heartbeat/time.Second), int(autoRemoval/time.Second))
	return b.String()
}

// ready: the member's log, since this start, says it started on its port
// (the proof it is ours: another run's member would log elsewhere). Once
// the CP Subsystem formed, a member that starts again starts as a new
// member, no CP member, while its old self still counts in the CP groups:
// ready removes that (a crashed member may be removed) and promotes it, as
// an operator would, and waits until it is a CP member.
func (e *ensemble) ready(ctx context.Context, addr, dir string) error {
	e.mu.Lock()
	from := e.starts[dir]
	e.mu.Unlock()
	log, err := os.ReadFile(filepath.Join(dir, "server.log"))
	if err != nil {
		return err
	}
	if int64(len(log)) < from || !bytes.Contains(log[from:], []byte(addr2hz(addr)+" is STARTED")) {
		return fmt.Errorf("not started yet")
	}
	if !e.formed.Load() {
		return nil
	}
	var local struct{ UUID string }
	if err := get(ctx, addr, "/hazelcast/rest/cp-subsystem/members/local", &local); err == nil {
		// A CP member, by the CP Subsystem's word; it takes part once it
		// runs a Raft node of every group the others run (a view of each
		// in its log): a leader killed before that would leave two of
		// three, one without the group's log — no majority.
		for _, g := range e.groupsElsewhere(addr) {
			if !bytes.Contains(log[from:], []byte("CP Group Members {groupId: "+g+"(")) {
				return fmt.Errorf("a CP member, not yet in group %s", g)
			}
		}
		return nil
	}
	// The others know the CP Subsystem's members; this one, not yet one of
	// them, may still take its old self, at its own address, for one.
	var cp []struct{ UUID, Address string }
	var peer string
	var errs []error
	for _, m := range e.Members() {
		if m.Addr() == addr {
			continue
		}
		if err := get(ctx, m.Addr(), "/hazelcast/rest/cp-subsystem/members", &cp); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name(), err))
			continue
		}
		peer = m.Addr()
		break
	}
	if peer == "" {
		return fmt.Errorf("no other member lists the CP members: %w", errors.Join(errs...))
	}
	for _, m := range cp {
		if m.Address == addr2hz(addr) {
			if err := post(ctx, peer, "/hazelcast/rest/cp-subsystem/members/"+m.UUID+"/remove"); err != nil {
				return fmt.Errorf("remove its old self %s from the CP Subsystem: %w", m.UUID, err)
			}
		}
	}
	if err := post(ctx, addr, "/hazelcast/rest/cp-subsystem/members"); err != nil {
		return fmt.Errorf("promote it to a CP member: %w", err)
	}
	return fmt.Errorf("promoted, not yet a CP member")
}

// groupsElsewhere are the CP groups the members but the one at addr log
// views of (METADATA, and default once a lock was taken).
func (e *ensemble) groupsElsewhere(addr string) []string {
	seen := map[string]bool{}
	for _, m := range e.Members() {
		if m.Addr() == addr {
			continue
		}
		log, _ := os.ReadFile(m.Log())
		for _, v := range groupView.FindAllSubmatch(log, -1) {
			seen[string(v[1])] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// addr2hz writes 127.0.0.1:5701 as Hazelcast's logs do: [127.0.0.1]:5701.
func addr2hz(addr string) string { return "[" + strings.Replace(addr, ":", "]:", 1) }

// groupView is a CP group's members as a member logs them at each change:
//
//	CP Group Members {groupId: default(8454), size:3, term:2, logIndex:0} [
//		CPMember{uuid=…, address=[127.0.0.1]:15702} - LEADER
//		CPMember{uuid=…, address=[127.0.0.1]:15703} - FOLLOWER this
//	]
var groupView = regexp.MustCompile(`CP Group Members \{groupId: (\w+)\(\d+\), size:\d+, term:(\d+), logIndex:\d+\} \[\n((?:\s+CPMember\{[^\n]*\n)*)\]`)

var leaderLine = regexp.MustCompile(`address=\[([\d.]+)\]:(\d+)\} - LEADER`)

// Leader is the member that leads the locks' CP group ("default", made at
// the first lock; until then the METADATA group) in the newest term any
// member logged, and that still runs.
func (e *ensemble) Leader(ctx context.Context) (int, error) {
	members := e.Members()
	best, bestTerm, bestGroup := -1, int64(-1), ""
	for _, m := range members {
		log, err := os.ReadFile(m.Log())
		if err != nil {
			continue
		}
		for _, v := range groupView.FindAllSubmatch(log, -1) {
			group, term := string(v[1]), atoi(v[2])
			if group != "default" && group != "METADATA" {
				continue
			}
			// default outranks METADATA; then the newer term.
			if bestGroup == "default" && group != "default" {
				continue
			}
			if group == bestGroup && term < bestTerm {
				continue
			}
			l := leaderLine.FindSubmatch(v[3])
			if l == nil {
				continue
			}
			for i, n := range members {
				if n.Addr() == string(l[1])+":"+string(l[2]) {
					best, bestTerm, bestGroup = i, term, group
				}
			}
		}
	}
	if best < 0 {
		return -1, errors.New("hazelcast: no member logged a leader of the CP groups")
	}
	if members[best].(*cluster.Server).Signal(0) != nil {
		return -1, fmt.Errorf("hazelcast: %s led the %s group in term %d and is not running; no newer leader logged", members[best].Name(), bestGroup, bestTerm)
	}
	return best, nil
}

func atoi(b []byte) int64 { n, _ := strconv.ParseInt(string(b), 10, 64); return n }

// FailOver kills the locks' group's leader (SIGKILL) and waits until
// another member logs that it leads. heal restarts the old leader, which
// comes back as a new member and is promoted into the CP Subsystem in its
// old self's place (ready).
func (e *ensemble) FailOver(ctx context.Context) (from, to int, heal func(context.Context) error, err error) {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	return cluster.KillLeader(ctx, Name, e.Members(), e.Leader, 30*time.Second)
}

// holdsLease: the CP session the lease's token names (FENCE/SESSION, as
// the adapter hands it out) is alive in the locks' group, asked of the
// member at addr (which asks the group's leader). The members free a
// session's locks when it expires or closes.
func holdsLease(ctx context.Context, addr, key, token string) (bool, error) {
	_, session, ok := strings.Cut(token, "/")
	if !ok {
		return false, fmt.Errorf("hazelcast: token %q is not FENCE/SESSION", token)
	}
	id, err := strconv.ParseInt(session, 10, 64)
	if err != nil {
		return false, fmt.Errorf("hazelcast: token %q: %w", token, err)
	}
	var sessions []struct{ ID int64 }
	err = get(ctx, addr, "/hazelcast/rest/cp-subsystem/groups/default/sessions", &sessions)
	if errors.Is(err, errNotFound) {
		// No group "default" yet (no lock was ever taken), if a CP member
		// says so; a member that is none (restarted, not yet promoted)
		// cannot say.
		var local struct{ UUID string }
		if lerr := get(ctx, addr, "/hazelcast/rest/cp-subsystem/members/local", &local); lerr != nil {
			return false, fmt.Errorf("hazelcast: %s is no CP member, and cannot say which sessions live: %w", addr, lerr)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, s := range sessions {
		if s.ID == id {
			return true, nil
		}
	}
	return false, nil
}

// get reads a member's REST answer at path into v, within 2 s and ctx.
func get(ctx context.Context, addr, path string, v any) error {
	body, err := call(ctx, http.MethodGet, addr, path)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// post sends a CP management request, which carries the cluster's name
// and (empty) password as its body.
func post(ctx context.Context, addr, path string) error {
	_, err := call(ctx, http.MethodPost, addr, path)
	return err
}

// errNotFound: the member answered 404 (no such group, or not a CP member).
var errNotFound = errors.New("404 Not Found")

func call(ctx context.Context, method, addr, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(Cluster + "&")
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, body)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%s %s: %w", method, path, errNotFound)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// tail is the end of a member's log, for an error.
func tail(path string) string { return strings.Join(logtail.File(path, 5, nil), " | ") }
