package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lockchaos/lockchaos/internal/ports"
)

// StoreEtcd is the store of the etcd locks: one etcd cluster of
// EnsembleSpec.Members members, started as local processes.
const StoreEtcd = "etcd"

func init() {
	RegisterStore(Store{
		Name:        StoreEtcd,
		Packages:    []string{"etcd-server"},
		Installed:   onPath("etcd"),
		Services:    []string{"etcd"},
		Modules:     []string{"go.etcd.io/etcd/client/v3"},
		References:  []string{"etcd-mutex", "etcd-mutex-fenced"},
		Fenced:      "etcd-mutex-fenced",
		NoClock:     "etcd is a Go binary, which reads time through the vDSO: the LD_PRELOAD clock shim cannot move its clock",
		Description: "an etcd cluster (raft): every member serves clients; the leader is killed to fail over",
		FailsOver:   true,
		Start:       startEtcd,
	})
}

// Raft timings. The server's shortest lease is 1.5 × election timeout (in
// heartbeats) × heartbeat = 750 ms with these, so the 1 s leases of a short
// TTL are granted as asked; with etcd's defaults (100 ms, 1 s) the server
// would silently stretch every lease to 1.5 s. A failover also takes about
// an election timeout, so a run sees several in seconds.
const (
	etcdHeartbeat       = "50"
	etcdElectionTimeout = "500"
)

// etcdStartTimeout bounds how long an ensemble, or a restarted member, may
// take to answer with a leader. A healthy start takes about 1.3 s; a
// member restarted after a kill rejoins in about 1 s.
const etcdStartTimeout = 30 * time.Second

// etcdPorts picks a client and a peer port for each of n members; tests
// replace it to hand out a port that is taken.
var etcdPorts = func(ctx context.Context, n int) ([]int, error) {
	ps := make([]int, 2*n)
	for i := range ps {
		p, err := ports.Free(ctx)
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

func startEtcd(ctx context.Context, backend Backend, spec EnsembleSpec) (Ensemble, error) {
	box, err := storeBox(ctx, backend, StoreEtcd)
	if err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, errors.New("etcd not found in PATH: install it with `apt-get install -y etcd-server` (Debian/Ubuntu)")
	}
	if spec.Members < 1 {
		return nil, fmt.Errorf("an etcd ensemble needs at least one member, not %d", spec.Members)
	}
	ctx, cancel := context.WithTimeout(ctx, etcdStartTimeout)
	defer cancel()
	// Another run may bind one of the 2×Members ports between FreePort and
	// our bind: that member exits at once, and the whole ensemble starts
	// again on other ports (its members' peer URLs are in each other's
	// flags, so one member cannot move alone).
	var errs []error
	for attempt := 0; attempt < 5; attempt++ {
		e, err := tryStartEtcd(ctx, box, bin, spec.Members)
		if err == nil {
			return e, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("start etcd ensemble: %w", errors.Join(errs...))
}

// errPortTaken: a member could not have its ports, so the ensemble may
// start again on others.
var errPortTaken = errors.New("port taken")

func tryStartEtcd(ctx context.Context, box *storeContainers, bin string, members int) (*EtcdEnsemble, error) {
	ps, err := etcdPorts(ctx, members)
	if err != nil {
		return nil, err
	}
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	e := &EtcdEnsemble{token: "lockchaos-" + hex.EncodeToString(token)}
	var peers []string
	for i := 0; i < members; i++ {
		m := &EtcdMember{
			name: "etcd" + strconv.Itoa(i), bin: bin,
			clientPort: ps[2*i], peerPort: ps[2*i+1],
		}
		// The member's etcd name is unique to this ensemble: the identity
		// check finds it in the member list of whatever answers on the
		// client port, which another run's etcd0 would not pass.
		m.etcdName = m.name + "-" + e.token
		peers = append(peers, m.etcdName+"=http://127.0.0.1:"+strconv.Itoa(m.peerPort))
		e.members = append(e.members, m)
	}
	stopAll := func() {
		for _, m := range e.members {
			if m.dir != "" {
				m.Stop()
			}
		}
	}
	for _, m := range e.members {
		m.initialCluster, m.token = strings.Join(peers, ","), e.token
		if m.dir, err = mkScratch(m.name); err != nil {
			stopAll()
			return nil, fmt.Errorf("make a directory for etcd member %s: %w", m.name, err)
		}
		m.proc.box = box.member(m.name, m.dir)
		if err := m.spawn(); err != nil {
			stopAll()
			return nil, err
		}
	}
	// No member serves clients before a quorum has elected a leader, so all
	// start first and are then waited for together; the first to fail ends
	// the wait (the others may never see a quorum without it).
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(e.members))
	for _, m := range e.members {
		go func() {
			err := m.waitReady(wctx)
			if err != nil {
				cancel()
			}
			errc <- err
		}()
	}
	var errs, cancelled []error
	for range e.members {
		if err := <-errc; errors.Is(err, context.Canceled) {
			cancelled = append(cancelled, err)
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = cancelled
	}
	if len(errs) == 0 {
		if _, err := e.waitLeader(ctx, -1); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		var tails []string
		for _, m := range e.members {
			tails = append(tails, m.name+": "+m.logTail())
		}
		stopAll()
		return nil, fmt.Errorf("%w (logs: %s)", errors.Join(errs...), strings.Join(tails, "; "))
	}
	return e, nil
}

// EtcdEnsemble is one etcd cluster: local processes, or containers.
type EtcdEnsemble struct {
	token   string // --initial-cluster-token, unique to this ensemble
	members []*EtcdMember
}

func (e *EtcdEnsemble) Members() []Node { return asNodes(e.members) }

// Serving is every member: the client spreads its requests over all.
func (e *EtcdEnsemble) Serving() []Node { return e.Members() }

func (e *EtcdEnsemble) Close() error { return nil }

// Leader asks every member, with a deadline each (a SIGSTOPped member never
// answers), whom it follows, and returns the member a majority of all
// members names. A member that still names a leader the others deposed is
// outvoted; with no majority there is no leader a client could rely on.
// While there is none it asks again, for up to leaderWait: on a busy
// machine a member that waited for a CPU past its election timeout starts
// an election, and until it ends the others name no leader (beside 8 CPU
// hogs one of three named one, seconds after the ensemble had agreed).
func (e *EtcdEnsemble) Leader(ctx context.Context) (int, error) {
	wctx, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	return e.waitLeader(wctx, -1)
}

// leaderWait bounds how long Leader waits for an election to end.
const leaderWait = 10 * time.Second

// leader is Leader without the member at index skip (-1: none), which was
// just killed: its vote is missing, not a dissent.
func (e *EtcdEnsemble) leader(ctx context.Context, skip int) (int, error) {
	type vote struct {
		leader uint64
		err    error
	}
	votes := make([]vote, len(e.members))
	var wg sync.WaitGroup
	for i, m := range e.members {
		if i == skip {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := m.status(ctx)
			if err == nil {
				votes[i].leader = st.Leader
			}
			votes[i].err = err
		}()
	}
	wg.Wait()
	count := map[uint64]int{}
	var errs []error
	for i, v := range votes {
		if i == skip {
			continue
		}
		if v.err != nil {
			errs = append(errs, v.err)
		} else if v.leader != 0 {
			count[v.leader]++
		}
	}
	for id, n := range count {
		if 2*n <= len(e.members) {
			continue
		}
		for i, m := range e.members {
			if m.ID() == id && i != skip {
				return i, nil
			}
		}
	}
	return -1, fmt.Errorf("no etcd member is leader by a majority of %d (votes %v): %w", len(e.members), count, errors.Join(errs...))
}

// waitLeader polls leader until a majority agrees on one other than skip.
func (e *EtcdEnsemble) waitLeader(ctx context.Context, skip int) (int, error) {
	for {
		i, err := e.leader(ctx, skip)
		if err == nil {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("no etcd leader: %w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// FailOver kills the leader (SIGKILL), as a crashed machine would, and
// returns once the survivors follow a new one. heal restarts the killed
// member, which rejoins as a follower.
func (e *EtcdEnsemble) FailOver(ctx context.Context) (from, to int, heal func(context.Context) error, err error) {
	from, err = e.Leader(ctx)
	if err != nil {
		return -1, -1, nil, fmt.Errorf("etcd failover: %w", err)
	}
	old := e.members[from]
	old.proc.kill()
	heal = old.Restart
	wctx, cancel := context.WithTimeout(ctx, etcdStartTimeout)
	defer cancel()
	to, err = e.waitLeader(wctx, from)
	if err != nil {
		return from, -1, heal, fmt.Errorf("etcd failover from %s: %w", old.name, err)
	}
	return from, to, heal, nil
}

// EtcdMember is one etcd server process.
type EtcdMember struct {
	name, etcdName       string
	bin, dir             string
	clientPort, peerPort int
	initialCluster       string
	token                string
	proc                 process

	mu sync.Mutex
	id uint64 // the raft member id, known once it answered
}

func (m *EtcdMember) Name() string { return m.name }
func (m *EtcdMember) Addr() string { return "127.0.0.1:" + strconv.Itoa(m.clientPort) }
func (m *EtcdMember) Log() string  { return filepath.Join(m.dir, "etcd.log") }

// ID is the member's raft id, as Status headers and leaders name it.
func (m *EtcdMember) ID() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// Pid is the process id of the running etcd.
func (m *EtcdMember) Pid() int { return m.proc.pid() }

func (m *EtcdMember) args() []string {
	client := "http://" + m.Addr()
	peer := "http://127.0.0.1:" + strconv.Itoa(m.peerPort)
	// --initial-* are ignored once the data directory holds a WAL, so a
	// restart passes the same flags and rejoins as the member it was.
	return []string{
		"--name", m.etcdName,
		"--data-dir", filepath.Join(m.dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", m.initialCluster,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", m.token,
		"--heartbeat-interval", etcdHeartbeat,
		"--election-timeout", etcdElectionTimeout,
		"--logger", "zap", "--log-outputs", "stderr",
	}
}

// spawn starts the process, its output appended to Log.
func (m *EtcdMember) spawn() error {
	log, err := os.OpenFile(m.Log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("etcd member %s: %w", m.name, err)
	}
	cmd := exec.Command(m.bin, m.args()...)
	cmd.Stdout, cmd.Stderr = log, log
	// The child has its own copy of the log's descriptor.
	err = m.proc.start(cmd)
	log.Close()
	if err != nil {
		return fmt.Errorf("exec %s for etcd member %s: %w", m.bin, m.name, err)
	}
	return nil
}

// waitReady polls the member until it answers as itself: the server on its
// client port says it is a member whose name is ours. etcd serves clients
// only once it has joined a quorum, so this also waits for that.
func (m *EtcdMember) waitReady(ctx context.Context) error {
	exited := m.proc.done()
	var last error
	for {
		if last = m.identify(ctx); last == nil {
			return nil
		}
		if errors.Is(last, errImpostor) {
			return fmt.Errorf("etcd member %s at %s: %w: %w", m.name, m.Addr(), errPortTaken, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd member %s at %s did not answer: %w (last: %v)", m.name, m.Addr(), ctx.Err(), last)
		case <-exited:
			err := fmt.Errorf("etcd member %s at %s exited during start-up (log: %s)", m.name, m.Addr(), m.logTail())
			if b, _ := os.ReadFile(m.Log()); strings.Contains(string(b), "address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// identify asks the server on the member's client port for its id (Status)
// and the members it knows (MemberList): ours must be among them, by the
// name unique to this ensemble, with that id.
func (m *EtcdMember) identify(ctx context.Context) error {
	return m.withClient(ctx, 500*time.Millisecond, func(ctx context.Context, c *clientv3.Client) error {
		st, err := c.Status(ctx, m.endpoint())
		if err != nil {
			return err
		}
		ml, err := c.MemberList(ctx)
		if err != nil {
			return err
		}
		for _, mb := range ml.Members {
			if mb.ID == st.Header.MemberId {
				if mb.Name == "" {
					return errors.New("member not yet published")
				}
				if mb.Name != m.etcdName {
					return errImpostor
				}
				m.mu.Lock()
				m.id = mb.ID
				m.mu.Unlock()
				return nil
			}
		}
		return errImpostor
	})
}

func (m *EtcdMember) endpoint() string { return "http://" + m.Addr() }

// withClient runs f with a client of this member alone, under a deadline
// of at most timeout. A fresh client each time: one kept across a kill
// would wait out gRPC's reconnect back-off after the restart.
func (m *EtcdMember) withClient(ctx context.Context, timeout time.Duration, f func(context.Context, *clientv3.Client) error) error {
	c, err := clientv3.New(clientv3.Config{
		Endpoints: []string{m.endpoint()},
		Logger:    zap.NewNop(),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx, c)
}

// status asks this member alone how it sees the cluster.
func (m *EtcdMember) status(ctx context.Context) (*clientv3.StatusResponse, error) {
	var st *clientv3.StatusResponse
	err := m.withClient(ctx, time.Second, func(ctx context.Context, c *clientv3.Client) (err error) {
		st, err = c.Status(ctx, m.endpoint())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("etcd member %s: %w", m.name, err)
	}
	return st, nil
}

// HoldsLease says whether this member's own copy of the keyspace holds the
// mutex key token (the lease's Token): a serializable read, answered from
// this member's state without asking the leader, so a member cut off or
// behind answers for itself.
func (m *EtcdMember) HoldsLease(ctx context.Context, key, token string) (bool, error) {
	var held bool
	err := m.withClient(ctx, time.Second, func(ctx context.Context, c *clientv3.Client) error {
		r, err := c.Get(ctx, token, clientv3.WithSerializable(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		held = r.Count > 0
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("etcd member %s: holds %s: %w", m.name, token, err)
	}
	return held, nil
}

// Signal sends sig to this member's own process only, by its pid; a member
// killed and not yet restarted gives ErrNotRunning.
func (m *EtcdMember) Signal(sig syscall.Signal) error {
	return m.proc.signal("etcd member "+m.name, sig)
}

// Restart starts the member again on its ports and data directory, and
// waits until it answers as itself, which it does once it has rejoined a
// quorum.
func (m *EtcdMember) Restart(ctx context.Context) error {
	m.proc.kill()
	// The ports are the member's: while a killed process (or another
	// run's server) still holds one, wait for it and start again.
	return onOwnPort(ctx, []int{m.clientPort, m.peerPort}, func() error {
		if err := m.spawn(); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, etcdStartTimeout)
		defer cancel()
		if err := m.waitReady(rctx); err != nil {
			m.proc.kill()
			return fmt.Errorf("restart: %w (log: %s)", err, m.logTail())
		}
		return nil
	}, func(err error) bool { return errors.Is(err, errPortTaken) })
}

// Stop kills the member and removes its directory.
func (m *EtcdMember) Stop() error {
	m.proc.kill()
	return os.RemoveAll(m.dir)
}

func (m *EtcdMember) logTail() string { return logTail(m.Log()) }
