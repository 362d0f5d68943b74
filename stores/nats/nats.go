// Package nats is the NATS store: nats-servers with JetStream, each a
// child of the coordinator on a free port — one alone, or three (the
// lock's nodes) in a JetStream cluster that replicates the locks' bucket —
// and its lock on a JetStream key-value bucket (kv_lock.go).
package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/logtail"
	"github.com/lockchaos/lockchaos/internal/ports"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Name is the store's name (a lock's Store).
const Name = "nats"

// Bucket is the key-value bucket the locks keep their keys in.
const Bucket = "lockchaos"

func init() {
	cluster.RegisterStore(cluster.Store{
		Name:          Name,
		Description:   "NATS with JetStream: a cluster of nats-server " + ServerVersion + " (built from the Go module proxy on first use; one server alone with --nodes 1); its locks are keys of a key-value bucket, replicated on every server, whose age limit is the lease",
		FailsOver:     true,
		Peers:         true,
		ServerVersion: ServerVersion,
		Modules:       []string{"github.com/nats-io/nats.go"},
		References:    []string{"nats-kv-lock", "etcd-mutex-fenced"},
		NoClock:       "nats-server is a Go binary, which reads time through the vDSO: the LD_PRELOAD clock shim cannot move its clock",
		Start:         start,
	})
}

// start starts one nats-server with JetStream per member, each named
// after its directory, which Ready checks. One member is a server alone;
// more are a JetStream cluster (ensemble), whose bucket is replicated on
// every member and whose stream leader a failover kills.
func start(ctx context.Context, backend cluster.Backend, spec cluster.EnsembleSpec) (cluster.Ensemble, error) {
	bin, err := serverBin(ctx, spec.ServerVersion)
	if err != nil {
		return nil, err
	}
	n := max(spec.Members, 1)
	server := cluster.ServerSpec{
		Store: Name, Name: "nats", Mounts: []string{filepath.Dir(bin)},
		Command: func(dir string, port int) *exec.Cmd {
			return exec.Command(bin, "--jetstream", "--store_dir", filepath.Join(dir, "jetstream"),
				"--addr", "127.0.0.1", "--port", strconv.Itoa(port), "--server_name", filepath.Base(dir))
		},
		Ready: func(ctx context.Context, addr, dir string) error {
			nc, err := connect([]string{addr}, "lockchaos", time.Second)
			if err != nil {
				return err
			}
			defer nc.Close()
			if got := nc.ConnectedServerName(); got != filepath.Base(dir) {
				return fmt.Errorf("another server answers on %s (%s)", addr, got)
			}
			return nil
		},
		HoldsLease: holdsLease,
	}
	if n == 1 {
		return cluster.StartServers(ctx, backend, 1, server)
	}
	// A cluster: each member also listens for its peers' routes on a port
	// of its own, which every member's --routes lists; the cluster's name
	// is this ensemble's alone, so a server of another run that answered on
	// a route port would not join it. In a run (spec.Relays), the peers
	// reach a member's route port through its relay, which it advertises
	// as its own: the routes are the links between servers that a link
	// fault with links=peers slows or cuts.
	listen, routes := make([]string, n), make([]string, n)
	for i := range routes {
		p, err := ports.Free(ctx)
		if err != nil {
			return nil, err
		}
		listen[i] = "127.0.0.1:" + strconv.Itoa(p)
		routes[i] = listen[i]
		if spec.Relays != nil {
			l, err := spec.Relays.AddRelay("route-nats"+strconv.Itoa(i), i, listen[i])
			if err != nil {
				return nil, err
			}
			routes[i] = l.Addr()
		}
	}
	token := make([]byte, 6)
	_, _ = rand.Read(token)
	name := "lockchaos-" + hex.EncodeToString(token)
	e := &ensemble{}
	for i := range n {
		spec := server
		command := server.Command
		spec.Command = func(dir string, port int) *exec.Cmd {
			cmd := command(dir, port)
			var peers []string
			for j, r := range routes {
				if j != i {
					peers = append(peers, "nats://"+r)
				}
			}
			cmd.Args = append(cmd.Args, "--cluster_name", name, "--cluster", "nats://"+listen[i],
				"--cluster_advertise", routes[i], "--routes", strings.Join(peers, ","))
			return cmd
		}
		spec.Name = "nats" + strconv.Itoa(i)
		s, err := cluster.StartServer(ctx, backend, spec)
		if err != nil {
			e.stop()
			return nil, err
		}
		e.Servers = append(e.Servers, s)
	}
	// The bucket, replicated on every member, made once the members have
	// elected JetStream's meta leader, with the locks' settings (the
	// lock's bucket() finds it as it would make it): so that its stream,
	// whose leader a failover kills, exists before any client.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := e.makeBucket(wctx, spec.Lease)
		if err == nil {
			break
		}
		select {
		case <-wctx.Done():
			err = fmt.Errorf("nats: the cluster made no bucket %s within 30 s: %v (log of %s: %s)", Bucket, err, e.Servers[0].Name(), strings.Join(logtail.File(e.Servers[0].Log(), 3, nil), " | "))
			e.stop()
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, err := cluster.AwaitNewLeader(ctx, e.Leader, -1, 30*time.Second); err != nil {
		e.stop()
		return nil, fmt.Errorf("nats: the bucket's stream has no leader: %w", err)
	}
	return e, nil
}

// ensemble is a JetStream cluster: every member serves clients (a client
// connects to any of them), and the bucket's stream, replicated on all,
// elects its leader by Raft.
type ensemble struct {
	cluster.Servers
	failMu sync.Mutex
}

func (e *ensemble) stop() {
	for _, s := range e.Servers {
		s.Stop()
	}
}

func (e *ensemble) addrs() []string {
	var as []string
	for _, s := range e.Servers {
		as = append(as, s.Addr())
	}
	return as
}

// makeBucket makes the locks' bucket as KVLock's bucket() does.
func (e *ensemble) makeBucket(ctx context.Context, lease time.Duration) error {
	nc, err := connect(e.addrs(), "lockchaos", time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// A request made before the meta leader is elected gets no answer:
	// each attempt waits 2 s at most.
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = js.CreateOrUpdateKeyValue(qctx, bucketConfig(lease, len(e.Servers)))
	return err
}

// Leader is the member that leads the bucket's stream, as the member
// asked first that answers says (JetStream's stream info comes from the
// stream's leader, through whichever member is asked).
func (e *ensemble) Leader(ctx context.Context) (int, error) {
	var errs []error
	for _, s := range e.Servers {
		if s.Signal(0) != nil {
			continue // killed: it answers nothing
		}
		i, err := e.leaderSays(ctx, s.Addr())
		if err == nil {
			return i, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s.Name(), err))
	}
	return -1, fmt.Errorf("nats: no member names the leader of the bucket's stream: %w", errors.Join(errs...))
}

func (e *ensemble) leaderSays(ctx context.Context, addr string) (int, error) {
	nc, err := connect([]string{addr}, "lockchaos-probe", time.Second)
	if err != nil {
		return -1, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return -1, err
	}
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := js.Stream(qctx, "KV_"+Bucket)
	if err != nil {
		return -1, err
	}
	info := st.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return -1, errors.New("the stream has no leader")
	}
	for i, s := range e.Servers {
		if filepath.Base(s.Dir()) == info.Cluster.Leader {
			return i, nil
		}
	}
	return -1, fmt.Errorf("the stream's leader %q is none of the members", info.Cluster.Leader)
}

// FailOver kills the stream's leader (SIGKILL) and waits until the others
// elect another (NATS's Raft waits 4 to 9 s without a heartbeat before an
// election). heal restarts the old leader on its port and directory: it
// rejoins as a follower and catches up.
func (e *ensemble) FailOver(ctx context.Context) (from, to int, heal func(context.Context) error, err error) {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	return cluster.KillLeader(ctx, Name, e.Members(), e.Leader, 30*time.Second)
}

// connect dials the first of the servers at addrs that answers, in their
// order, without reconnecting (a lock that lost its connection dials again
// itself) and without the cluster's other servers, which a server tells
// its clients of: a client reaches the servers only through its links.
func connect(addrs []string, name string, timeout time.Duration) (*nats.Conn, error) {
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = "nats://" + a
	}
	return nats.Connect(strings.Join(urls, ","), nats.Name(name), nats.Timeout(timeout), nats.NoReconnect(),
		nats.DontRandomize(), nats.IgnoreDiscoveredServers())
}

// bucketConfig is the locks' bucket: its age limit is the lease, one value
// per key, on replicas members (at most 5, JetStream's most).
func bucketConfig(lease time.Duration, replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: Bucket, TTL: lease, History: 1, Replicas: min(max(replicas, 1), 5)}
}

// kvKey is the bucket's key of a lock key: a key-value key allows letters,
// digits and - / _ = . only.
func kvKey(key string) string { return strings.ReplaceAll(key, ":", "_") }

// holdsLease: the bucket's key holds the lease's token, as the leader of
// its stream says (JetStream's message get, which only the leader
// answers: a key-value Get may be a direct get, which any replica answers,
// one that lags too), asked through the server at addr. A delete marker
// holds no token.
func holdsLease(ctx context.Context, addr, key, token string) (bool, error) {
	nc, err := connect([]string{addr}, "lockchaos-probe", 2*time.Second)
	if err != nil {
		return false, err
	}
	defer nc.Close()
	req, err := json.Marshal(map[string]string{"last_by_subj": "$KV." + Bucket + "." + kvKey(key)})
	if err != nil {
		return false, err
	}
	msg, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+Bucket, req)
	if err != nil {
		return false, err
	}
	var resp struct {
		Message *struct {
			Data []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return false, fmt.Errorf("nats: the leader's answer to a message get: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == 404: // no such key, or no bucket yet
		return false, nil
	case resp.Error != nil:
		return false, fmt.Errorf("nats: message get of %s: %s", key, resp.Error.Description)
	case resp.Message == nil:
		return false, fmt.Errorf("nats: message get of %s: no message and no error", key)
	}
	return string(resp.Message.Data) == token, nil
}
