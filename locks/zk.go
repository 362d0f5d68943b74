package locks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkClient is one ZooKeeper session of a Locker, and what the locks need
// around go-zookeeper: requests bounded in time, and leases whose Lost
// closes when the session that owns their node expires.
//
// go-zookeeper's requests take no context and wait, while the client has
// no server, until it has tried them all; a request is therefore run
// aside and abandoned at the deadline, its outcome unknown. When the
// session expires, the library opens a new one on the same Conn without
// a word beyond the StateExpired event: the nodes of the old session are
// gone, and that event is the only sign of it.
type zkClient struct {
	cfg Config

	mu     sync.Mutex
	conn   *zk.Conn
	closed bool
	// held maps the path of each node this client holds a lock with to
	// its lease's Lost: all of them belong to the current session.
	held map[string]chan struct{}
	// gaps counts the connections lost (and sessions expired): a lease
	// whose acquire began before the last one is lost already.
	gaps int

	// negotiatedMs is the session timeout the server last granted (read
	// off the wire: the library keeps it to itself).
	negotiatedMs atomic.Int64
}

// zkRoot is the parent of every key's lock directory.
const zkRoot = "/lockchaos"

// zkSequenceDigits: ZooKeeper appends a sequence number of ten digits.
const zkSequenceDigits = 10

func newZKClient(cfg Config) *zkClient {
	return &zkClient{cfg: cfg, held: map[string]chan struct{}{}}
}

func (c *zkClient) opTimeout() time.Duration {
	if c.cfg.OpTimeout > 0 {
		return c.cfg.OpTimeout
	}
	return 2 * time.Second
}

// connection opens the session on first use: New must not do I/O.
func (c *zkClient) connection() (*zk.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("zookeeper client closed")
	}
	if c.conn != nil {
		return c.conn, nil
	}
	dial := func(network, addr string, _ time.Duration) (net.Conn, error) {
		nc, err := net.DialTimeout(network, addr, c.opTimeout())
		if err != nil {
			return nil, err
		}
		return &zkSniffConn{Conn: nc, c: c}, nil
	}
	conn, _, err := zk.Connect(c.cfg.Addrs, c.cfg.TTL,
		zk.WithDialer(dial), zk.WithLogger(zkSilent{}), zk.WithLogInfo(false),
		zk.WithEventCallback(c.event))
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return conn, nil
}

// event runs in the library's connection loop, so it must not block.
//
// A lease is lost as soon as the connection is (StateDisconnected, which
// the library reports before it tries the next server, and StateExpired):
// while the client has no server it cannot know whether its session
// outlives the gap, and ZooKeeper may expire it and hand the lock to
// another. Curator's documentation asks the same of its users (SUSPENDED
// means the lock may be gone until RECONNECTED). A recipe that waits for
// StateExpired learns it too late: the crash of the leader takes every
// client off the ensemble, go-zookeeper waits a second after trying every
// server once, and a one-second session can expire meanwhile, its holder
// unaware until it is back (seen in the grid as zk-lock-fenced+crash-restart
// on a busy machine: two holders for 215 ms). The node of a lease lost this
// way may outlive it with its session; its release deletes it (zkRelease).
func (c *zkClient) event(ev zk.Event) {
	if ev.Type == zk.EventSession && (ev.State == zk.StateExpired || ev.State == zk.StateDisconnected) {
		c.mu.Lock()
		c.gaps++
		c.loseAllLocked()
		c.mu.Unlock()
	}
}

func (c *zkClient) loseAllLocked() {
	for path, lost := range c.held {
		close(lost)
		delete(c.held, path)
	}
}

// gap is the count of connections lost so far: taken before an acquire,
// it is handed to hold.
func (c *zkClient) gap() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gaps
}

// hold registers a lease on node path, created by session owner in an
// acquire that began at gap. The library zeroes its session id before it
// reports StateExpired, and reports every lost connection to event, so a
// registration either sees the gap, or is seen by event.
func (c *zkClient) hold(path string, owner int64, gap int) <-chan struct{} {
	lost := make(chan struct{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.gaps != gap || c.conn.SessionID() != owner {
		close(lost)
		return lost
	}
	c.held[path] = lost
	return lost
}

func (c *zkClient) unhold(path string) {
	c.mu.Lock()
	delete(c.held, path)
	c.mu.Unlock()
}

// Close ends the session, which deletes its nodes.
func (c *zkClient) Close() error {
	c.mu.Lock()
	conn := c.conn
	c.closed = true
	c.loseAllLocked()
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	return nil
}

// Lease is the session timeout the servers grant: the TTL, within the
// bounds of the ensemble's configuration (cluster/zookeeper.go).
func (c *zkClient) Lease() time.Duration {
	return min(max(c.cfg.TTL, zkMinSession), zkMaxSession)
}

// zkMinSession and zkMaxSession are cluster.ZKMinSession and
// cluster.ZKMaxSession, the bounds the servers clamp a session's timeout
// to; repeated so that locks does not depend on cluster (the tests check
// that the timeout the server grants is Lease).
const (
	zkMinSession = 200 * time.Millisecond
	zkMaxSession = 10 * time.Minute
)

// SessionTimeout is the timeout the server granted the session last, 0
// before it has one.
func (c *zkClient) SessionTimeout() time.Duration {
	return time.Duration(c.negotiatedMs.Load()) * time.Millisecond
}

// zkDo runs one request within ctx and the op timeout. Past the deadline
// the request is left to finish on its own and its outcome is unknown.
func zkDo[T any](ctx context.Context, c *zkClient, what string, f func(*zk.Conn) (T, error)) (T, error) {
	return zkDoLate(ctx, c, what, f, nil)
}

// zkDoLate is zkDo, and when the deadline passes first, late gets the
// request's real outcome once it comes: a create that was still queued in
// the library when the caller gave up may yet make its node.
func zkDoLate[T any](ctx context.Context, c *zkClient, what string, f func(*zk.Conn) (T, error), late func(T, error)) (T, error) {
	var zero T
	conn, err := c.connection()
	if err != nil {
		return zero, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opTimeout())
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f(conn)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		if late != nil {
			go func() {
				r := <-done
				late(r.v, r.err)
			}()
		}
		return zero, fmt.Errorf("zookeeper %s: no answer: %w", what, ctx.Err())
	}
}

// zkLockDir is key's directory of contenders: keys may hold any byte,
// node names no slash, and "." and ".." are not names.
func zkLockDir(key string) string {
	name := url.PathEscape(key)
	if strings.Trim(name, ".") == "" {
		name = strings.ReplaceAll(name, ".", "%2E") + "%"
	}
	return zkRoot + "/" + name
}

// zkAcquired is a node of the lowest sequence: the lock.
type zkAcquired struct {
	path string
	stat *zk.Stat
}

// zkTryLock is the ZooKeeper lock recipe, tried once: an ephemeral
// sequential node under key's directory holds the lock while its sequence
// is the lowest there. A node that is not the lowest is deleted again.
// The node's name carries a prefix unique to this attempt, so that a node
// whose creation timed out can be found and deleted (zkCleanup): left
// alone, it would keep the lock from everyone for as long as this
// session lives. Without protect, a create that got no answer is taken
// as not acquired and its node left alone (the bug of a recipe without
// protection).
func zkTryLock(ctx context.Context, c *zkClient, key, owner, unique string, protect bool) (zkAcquired, error) {
	dir := zkLockDir(key)
	prefix := "lock-" + unique + "-"
	create := func(conn *zk.Conn) (string, error) {
		return conn.Create(dir+"/"+prefix, []byte(owner), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	}
	// A create given up on may still be made later: the cleanup runs once
	// the library has its real outcome (a cleanup that looked before the
	// node was made would leave it to block the key for the session's
	// life), and a node made after all is deleted.
	late := func(string, error) {
		if protect {
			zkCleanup(c, dir, prefix)
		}
	}
	path, err := zkDoLate(ctx, c, "create", create, late)
	if errors.Is(err, zk.ErrNoNode) {
		if err := zkMkdirs(ctx, c, dir); err != nil {
			return zkAcquired{}, err
		}
		path, err = zkDoLate(ctx, c, "create", create, late)
	}
	if err != nil {
		if !protect {
			return zkAcquired{}, fmt.Errorf("%w: zookeeper create under %s got no answer (%v); its node, if made, is left behind", ErrNotAcquired, dir, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			go zkCleanup(c, dir, prefix) // one given up on is cleaned up by late
		}
		return zkAcquired{}, fmt.Errorf("zookeeper create under %s: %w", dir, err)
	}
	children, err := zkDo(ctx, c, "children", func(conn *zk.Conn) ([]string, error) {
		ch, _, err := conn.Children(dir)
		return ch, err
	})
	if err != nil {
		go zkCleanup(c, dir, prefix)
		return zkAcquired{}, fmt.Errorf("zookeeper children of %s: %w", dir, err)
	}
	mine := path[len(dir)+1:]
	for _, ch := range children {
		if seq := zkSequence(ch); seq != "" && seq < zkSequence(mine) {
			// Held by another: this client never held it, whatever becomes
			// of its node, which the cleanup removes if this delete fails.
			if _, err := zkDo(ctx, c, "delete", func(conn *zk.Conn) (struct{}, error) {
				return struct{}{}, conn.Delete(path, -1)
			}); err != nil && !errors.Is(err, zk.ErrNoNode) {
				go zkCleanup(c, dir, prefix)
			}
			return zkAcquired{}, ErrNotAcquired
		}
	}
	// The lowest: held. Its stat gives the session that owns it, the
	// version to delete it with and its creation zxid.
	stat, err := zkDo(ctx, c, "exists", func(conn *zk.Conn) (*zk.Stat, error) {
		ok, st, err := conn.Exists(path)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return st, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		// Its session expired in the meantime: no longer held.
		return zkAcquired{}, ErrNotAcquired
	}
	if err != nil {
		go zkCleanup(c, dir, prefix)
		return zkAcquired{}, fmt.Errorf("zookeeper exists %s: %w", path, err)
	}
	return zkAcquired{path: path, stat: stat}, nil
}

// zkSequence is the sequence number ZooKeeper appended to a node's name,
// "" for a name without one (no contender). Ten digits: as strings they
// sort as numbers.
func zkSequence(name string) string {
	if len(name) < zkSequenceDigits {
		return ""
	}
	seq := name[len(name)-zkSequenceDigits:]
	if strings.Trim(seq, "0123456789") != "" {
		return ""
	}
	return seq
}

// zkMkdirs creates the persistent directories down to dir.
func zkMkdirs(ctx context.Context, c *zkClient, dir string) error {
	for _, p := range []string{zkRoot, dir} {
		_, err := zkDo(ctx, c, "create", func(conn *zk.Conn) (string, error) {
			return conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zookeeper create %s: %w", p, err)
		}
	}
	return nil
}

// zkCleanup deletes this attempt's node, if it exists, once the session
// answers again: a few tries, each an op timeout, then the session's end
// removes it anyway.
func zkCleanup(c *zkClient, dir, prefix string) {
	for try := 0; try < 10; try++ {
		if try > 0 {
			time.Sleep(c.opTimeout())
		}
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return // the session's end removes the node
		}
		children, err := zkDo(context.Background(), c, "children", func(conn *zk.Conn) ([]string, error) {
			ch, _, err := conn.Children(dir)
			return ch, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		if err != nil {
			continue
		}
		failed := false
		for _, ch := range children {
			if strings.HasPrefix(ch, prefix) {
				_, err := zkDo(context.Background(), c, "delete", func(conn *zk.Conn) (struct{}, error) {
					return struct{}{}, conn.Delete(dir+"/"+ch, -1)
				})
				failed = failed || (err != nil && !errors.Is(err, zk.ErrNoNode))
			}
		}
		if !failed {
			return
		}
	}
}

// zkRelease deletes the lease's node at the version it was created with.
// A lease whose Lost has closed is not held: its connection dropped, and
// its node, if its session survived the gap, is deleted in the background
// once the session answers again (zkCleanup). So is the node of a delete
// that got no answer: as Curator's guaranteed delete does, for a node left
// behind keeps the lock from everyone while its session lives.
func zkRelease(ctx context.Context, c *zkClient, lease Lease) error {
	c.unhold(lease.Token)
	dir, prefix := zkAttempt(lease.Token)
	select {
	case <-lease.Lost:
		go zkCleanup(c, dir, prefix)
		return ErrNotHeld
	default:
	}
	version, _ := lease.Data.(int32)
	_, err := zkDo(ctx, c, "delete", func(conn *zk.Conn) (struct{}, error) {
		return struct{}{}, conn.Delete(lease.Token, version)
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return ErrNotHeld
	case err != nil:
		go zkCleanup(c, dir, prefix)
	}
	return err
}

// zkAttempt is the directory and the attempt's unique prefix of a lock
// node's path (zkTryLock names it dir/lock-UNIQUE-SEQUENCE).
func zkAttempt(path string) (dir, prefix string) {
	i := strings.LastIndexByte(path, '/')
	dir, name := path[:i], path[i+1:]
	return dir, name[:len(name)-zkSequenceDigits]
}

// zkSniffConn reads the session timeout the server grants off the
// connect response, the first frame the server sends: length, protocol
// version, timeout, each four bytes.
type zkSniffConn struct {
	net.Conn
	c    *zkClient
	head []byte
}

func (s *zkSniffConn) Read(p []byte) (int, error) {
	n, err := s.Conn.Read(p)
	if len(s.head) < 12 {
		s.head = append(s.head, p[:min(n, 12-len(s.head))]...)
		if len(s.head) == 12 {
			if ms := int32(binary.BigEndian.Uint32(s.head[8:12])); ms > 0 {
				s.c.negotiatedMs.Store(int64(ms))
			}
		}
	}
	return n, err
}

// zkSilent drops the client library's log lines.
type zkSilent struct{}

func (zkSilent) Printf(string, ...any) {}
