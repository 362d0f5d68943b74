package locks_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
)

var zkSeed uint64

// zkLocker is one client's zk lock (name) through addrs, with a session
// of ttl. Its requests may take up to 20 s: three JVMs beside a busy
// machine's other jobs can keep one waiting for seconds (seen at a 3 s op
// timeout under load 10-70: "no answer: context deadline exceeded"), and
// none of these tests is about how long a request may take.
func zkLocker(t *testing.T, name string, addrs []string, owner string, ttl time.Duration) *locks.ZKLock {
	t.Helper()
	spec, err := locks.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Store != "zookeeper" || spec.Nodes != 3 {
		t.Fatalf("%s: store %q, %d nodes", name, spec.Store, spec.Nodes)
	}
	zkSeed++
	l, err := spec.New(locks.Config{Addrs: addrs, TTL: ttl, OpTimeout: 20 * time.Second, Owner: owner, Rand: rand.New(rand.NewPCG(7, zkSeed))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.(io.Closer).Close() })
	return l.(*locks.ZKLock)
}

// holdsLease asks member m whether token holds key, within 20 s: its own
// default, 2 s for a session of its own and the answer, is short beside a
// busy machine's other jobs ("no session: context deadline exceeded").
func holdsLease(m cluster.Node, key, token string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return m.(cluster.LeaseHolder).HoldsLease(ctx, key, token)
}

// zkAdmin is a plain client, to meddle behind the locks' backs.
func zkAdmin(t *testing.T, addrs []string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(addrs, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// zkAcquireUntil retries an acquire whose outcome was unknown (a client
// failing over to another server) until it gives an answer.
func zkAcquireUntil(t *testing.T, l locks.Locker, key string, want error) locks.Lease {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		lease, err := l.Acquire(context.Background(), key)
		if errors.Is(err, want) || (err == nil && want == nil) {
			return lease
		}
		if time.Now().After(deadline) {
			t.Fatalf("acquire %s: %v, want %v", key, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// zkLiveLease acquires key (zkAcquireUntil) until the lease it gets is not
// lost already. A short session can end between the grant and the look at
// Lost when the machine stalls past it; a lease lost every time, five times
// in a row, is the lock's doing.
func zkLiveLease(t *testing.T, l locks.Locker, key string) locks.Lease {
	t.Helper()
	for try := 1; ; try++ {
		lease := zkAcquireUntil(t, l, key, nil)
		if !zkClosed(lease.Lost) {
			return lease
		}
		if try == 5 {
			t.Fatalf("%s: five leases in a row were lost as soon as they were granted", key)
		}
		t.Logf("%s: the lease was lost as soon as it was granted (a stall of the machine past the session?): taking it again", key)
		l.Release(context.Background(), lease)
	}
}

func zkClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestZKLock(t *testing.T) {
	e := startStore(t, "zookeeper", 3)
	addrs := servingAddrs(e)
	ctx := context.Background()

	// Sessions of 10 s where the test is not about them: beside a busy
	// machine's other jobs a 1 s session expired between an acquire and
	// its release (and with it the lease: "release: not held").
	const long = 10 * time.Second

	t.Run("excludes, releases, fences increase", func(t *testing.T) {
		for _, name := range []string{"zk-lock", "zk-lock-fenced"} {
			a := zkLocker(t, name, addrs, "a", long)
			b := zkLocker(t, name, addrs, "b", long)
			if a.Lease() != long {
				t.Fatalf("%s: lease %v for a %v TTL", name, a.Lease(), long)
			}
			// Keys that are no node names as they are.
			for _, key := range []string{name + "/k", ".."} {
				var last int64
				holder, other := a, b
				for round := 0; round < 4; round++ {
					lease, err := holder.Acquire(ctx, key)
					if err != nil {
						t.Fatalf("%s %q round %d: acquire: %v", name, key, round, err)
					}
					if _, err := other.Acquire(ctx, key); !errors.Is(err, locks.ErrNotAcquired) {
						t.Fatalf("%s %q round %d: second client's acquire: %v, want ErrNotAcquired", name, key, round, err)
					}
					for _, m := range e.Members() {
						if held, err := holdsLease(m, key, lease.Token); err != nil || !held {
							t.Fatalf("%s: %s does not hold %s: %v, %v", name, m.Name(), lease.Token, held, err)
						}
					}
					switch {
					case name == "zk-lock" && lease.Fence != 0:
						t.Fatalf("zk-lock hands out fence %d", lease.Fence)
					case name == "zk-lock-fenced" && lease.Fence <= last:
						t.Fatalf("fence %d after %d", lease.Fence, last)
					}
					last = lease.Fence
					if err := holder.Release(ctx, lease); err != nil {
						t.Fatalf("%s %q round %d: release: %v", name, key, round, err)
					}
					if err := holder.Release(ctx, lease); !errors.Is(err, locks.ErrNotHeld) {
						t.Fatalf("second release: %v, want ErrNotHeld", err)
					}
					holder, other = other, holder
				}
			}
			if got := a.SessionTimeout(); got != a.Lease() {
				t.Fatalf("server granted a %v session, Lease says %v", got, a.Lease())
			}
		}
	})

	t.Run("short TTL is raised to the servers' minimum", func(t *testing.T) {
		a := zkLocker(t, "zk-lock", addrs, "a", 50*time.Millisecond)
		lease := zkAcquireUntil(t, a, "short", nil)
		if a.SessionTimeout() != a.Lease() || a.Lease() <= 50*time.Millisecond {
			t.Fatalf("granted %v, Lease %v", a.SessionTimeout(), a.Lease())
		}
		t.Logf("a 50 ms TTL gets a %v session", a.SessionTimeout())
		// A stall of the machine longer than the session ends it: the
		// lock said so (Lost), and the release finds the lease gone.
		if err := a.Release(ctx, lease); err != nil && !(errors.Is(err, locks.ErrNotHeld) && zkClosed(lease.Lost)) {
			t.Fatal(err)
		}
	})

	t.Run("node deleted behind the holder's back", func(t *testing.T) {
		a := zkLocker(t, "zk-lock-fenced", addrs, "a", long)
		b := zkLocker(t, "zk-lock-fenced", addrs, "b", long)
		lease, err := a.Acquire(ctx, "deleted")
		if err != nil {
			t.Fatal(err)
		}
		if err := zkAdmin(t, addrs).Delete(lease.Token, -1); err != nil {
			t.Fatal(err)
		}
		taken, err := b.Acquire(ctx, "deleted")
		if err != nil {
			t.Fatalf("acquire after the holder's node was deleted: %v", err)
		}
		if taken.Fence <= lease.Fence {
			t.Fatalf("fence %d after %d", taken.Fence, lease.Fence)
		}
		if err := a.Release(ctx, lease); !errors.Is(err, locks.ErrNotHeld) {
			t.Fatalf("release of a deleted node: %v, want ErrNotHeld", err)
		}
		if err := b.Release(ctx, taken); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a lost connection closes Lost before the session can expire", func(t *testing.T) {
		p := newCutProxy(t, addrs[0])
		a := zkLocker(t, "zk-lock", []string{p.addr}, "a", 400*time.Millisecond)
		b := zkLocker(t, "zk-lock", addrs, "b", long)
		lease := zkLiveLease(t, a, "expire")
		if a.SessionTimeout() != 400*time.Millisecond {
			t.Fatalf("granted %v, asked 400ms", a.SessionTimeout())
		}
		p.cut()
		// The servers expire a's session and delete its node: b gets the
		// lock, and a, cut off, has been told already that its lease may
		// be gone (a recipe that waits for StateExpired hears it only when
		// it reaches a server again: two holders meanwhile).
		taken := zkAcquireUntil(t, b, "expire", nil)
		if !zkClosed(lease.Lost) {
			t.Fatal("another client holds the lock, and the cut-off holder's Lost is still open")
		}
		p.restore(t)
		if err := a.Release(ctx, lease); !errors.Is(err, locks.ErrNotHeld) {
			t.Fatalf("release after expiry: %v, want ErrNotHeld", err)
		}
		if err := b.Release(ctx, taken); err != nil {
			t.Fatal(err)
		}
		// The client goes on with the new session the library opened.
		again := zkLiveLease(t, a, "expire")
		if err := a.Release(ctx, again); err != nil && !(errors.Is(err, locks.ErrNotHeld) && zkClosed(again.Lost)) {
			t.Fatal(err)
		}
	})

	t.Run("a lease lost to a short gap has its node deleted once the session is back", func(t *testing.T) {
		p := newCutProxy(t, addrs[0])
		a := zkLocker(t, "zk-lock", []string{p.addr}, "a", long)
		b := zkLocker(t, "zk-lock", addrs, "b", long)
		lease, err := a.Acquire(ctx, "gap")
		if err != nil {
			t.Fatal(err)
		}
		p.cut()
		select {
		case <-lease.Lost:
		case <-time.After(20 * time.Second):
			t.Fatal("Lost still open after the connection was cut")
		}
		if err := a.Release(ctx, lease); !errors.Is(err, locks.ErrNotHeld) {
			t.Fatalf("release of a lease lost to a gap: %v, want ErrNotHeld", err)
		}
		// The session outlives the gap, and with it the node: left there,
		// it would keep the lock from everyone for as long as a lives.
		p.restore(t)
		taken := zkAcquireUntil(t, b, "gap", nil)
		if err := b.Release(ctx, taken); err != nil {
			t.Fatal(err)
		}
		if a.SessionTimeout() != 10*time.Second {
			t.Fatalf("a's session is %v, want the 10 s one that outlived the gap", a.SessionTimeout())
		}
	})

	t.Run("a leader's death loses the lease, and fences increase across it", func(t *testing.T) {
		a := zkLocker(t, "zk-lock-fenced", addrs, "a", 3*time.Second)
		b := zkLocker(t, "zk-lock-fenced", addrs, "b", 3*time.Second)
		lease, err := a.Acquire(ctx, "failover")
		if err != nil {
			t.Fatal(err)
		}
		from, to, heal, err := e.FailOver(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("leader %d killed, %d leads", from, to)
		// Every server drops its clients while the ensemble elects a
		// leader: no holder can know its session survives the election.
		select {
		case <-lease.Lost:
		case <-time.After(20 * time.Second):
			t.Fatal("the holder's Lost is still open after its leader died")
		}
		if err := a.Release(ctx, lease); !errors.Is(err, locks.ErrNotHeld) {
			t.Fatalf("release after failover: %v, want ErrNotHeld", err)
		}
		taken := zkAcquireUntil(t, b, "failover", nil)
		if taken.Fence <= lease.Fence {
			t.Fatalf("fence %d after %d across a leader change", taken.Fence, lease.Fence)
		}
		if err := heal(ctx); err != nil {
			t.Fatal(err)
		}
		if held, err := holdsLease(e.Members()[from], "failover", taken.Token); err != nil || !held {
			t.Fatalf("healed member does not hold %s: %v, %v", taken.Token, held, err)
		}
	})
}

// cutProxy forwards one address to another until cut, which closes its
// listener and every connection through it; restore listens again on the
// same port.
type cutProxy struct {
	addr, to string
	mu       sync.Mutex
	ln       net.Listener
	conns    []net.Conn
}

func newCutProxy(t *testing.T, to string) *cutProxy {
	p := &cutProxy{to: to}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr, p.ln = ln.Addr().String(), ln
	go p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { io.Copy(s, c); s.Close(); c.Close() }()
		go func() { io.Copy(c, s); s.Close(); c.Close() }()
	}
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go p.serve(ln)
}
