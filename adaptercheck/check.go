// Package adaptercheck is `lockchaos adapter check`: a short self-test of
// an adapter lock (docs/protocol.md) against real servers of its store
// (Redis, or an ensemble of etcd, ZooKeeper or PostgreSQL), which says in
// plain words which part of the protocol the adapter gets wrong.
package adaptercheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/redis/go-redis/v9"
)

// Settings of the check: a short lease, so that expiry is seen quickly,
// and an op timeout well inside it.
const (
	TTL       = 2 * time.Second // whole seconds: some libraries take no less (python-redis-lock)
	OpTimeout = 500 * time.Millisecond
)

// Step is one check and what came of it.
type Step struct {
	Name string
	// Err is nil when the step passed; Skipped says why it did not apply.
	Err     error
	Skipped string
}

// Check runs every step that applies to m's lock, printing each as it
// ends to w. It returns the steps; the check passed when no step has an
// Err. scratch holds the nodes' and adapters' logs.
func Check(ctx context.Context, m *locks.Manifest, scratch string, w io.Writer) ([]Step, error) {
	if why := m.Ready(); why != "" {
		return nil, fmt.Errorf("adapter %s cannot run here: %s", m.Name, why)
	}
	be, err := cluster.NewLocal()
	if err != nil {
		return nil, err
	}
	defer be.Close()
	var nodes []cluster.Node
	defer func() {
		for _, n := range nodes {
			_ = n.Signal(syscall.SIGCONT)
			_ = n.Stop()
		}
	}()
	var addrs []string
	var direct []*redis.Client
	// The store's own ensemble, as a run starts it, without replicas; the
	// nodes answer whether they keep a lease (cluster.LeaseTTL for Redis,
	// cluster.LeaseHolder for the others).
	store, err := cluster.LookupStore(m.Store)
	if err != nil {
		return nil, m.StoreError(err)
	}
	e, err := store.Start(ctx, be, cluster.EnsembleSpec{Members: m.Nodes})
	if err != nil {
		return nil, fmt.Errorf("start the %s ensemble for the check: %w", m.Store, err)
	}
	defer e.Close()
	nodes = e.Members()
	for _, n := range e.Serving() {
		addrs = append(addrs, n.Addr())
		if m.Store == cluster.StoreRedis {
			c := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2, DisableIdentity: true})
			defer c.Close()
			direct = append(direct, c)
		}
	}
	c := &checker{m: m, nodes: nodes, direct: direct, w: w}
	if store.AdapterInit != nil {
		c.storeInit = store.AdapterInit(addrs)
	}
	for i := range 2 {
		l, err := c.client(ctx, i, addrs, scratch)
		if err != nil {
			c.steps = append(c.steps, Step{Name: "init", Err: err})
			c.print(c.steps[0])
			return c.steps, nil
		}
		defer l.(io.Closer).Close()
		c.l = append(c.l, l)
	}
	c.step("init", func() error { return nil })
	c.run(ctx)
	return c.steps, nil
}

type checker struct {
	m      *locks.Manifest
	nodes  []cluster.Node
	direct []*redis.Client
	// storeInit: what the init carries for the store (cluster.Store's AdapterInit).
	storeInit map[string]any
	l         []locks.Locker
	lease     time.Duration
	w         io.Writer
	steps     []Step
}

func (c *checker) client(ctx context.Context, i int, addrs []string, scratch string) (locks.Locker, error) {
	spec := c.m.Spec()
	opts, _, err := spec.Decode(nil, TTL)
	if err != nil {
		return nil, err
	}
	l, err := spec.New(locks.Config{
		Addrs: addrs, StoreInit: c.storeInit, OpTimeout: OpTimeout, TTL: TTL, Owner: fmt.Sprintf("check-client-%d", i), Options: opts,
		Rand: rand.New(rand.NewPCG(1, uint64(i))), Client: i, Seed: 1,
		LogPath: filepath.Join(scratch, fmt.Sprintf("client-%d.adapter.log", i)),
	})
	if err != nil {
		return nil, err
	}
	c.lease = TTL
	if le, ok := l.(locks.Leaser); ok {
		c.lease = le.Lease()
	}
	if err := l.(locks.Starter).Start(ctx); err != nil {
		return nil, err // Start says what it did instead, and quotes its standard error
	}
	return l, nil
}

func (c *checker) print(s Step) {
	switch {
	case s.Skipped != "":
		fmt.Fprintf(c.w, "  skip  %s: %s\n", s.Name, s.Skipped)
	case s.Err != nil:
		fmt.Fprintf(c.w, "  FAIL  %s: %v\n", s.Name, s.Err)
	default:
		fmt.Fprintf(c.w, "  ok    %s\n", s.Name)
	}
}

func (c *checker) step(name string, f func() error) {
	s := Step{Name: name, Err: f()}
	c.steps = append(c.steps, s)
	c.print(s)
}

func (c *checker) skip(name, why string) {
	s := Step{Name: name, Skipped: why}
	c.steps = append(c.steps, s)
	c.print(s)
}

// op runs one request of client i under the op timeout.
func op[T any](i int, f func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	return f(ctx)
}

func (c *checker) acquire(i int, key string) (locks.Lease, error) {
	return op(i, func(ctx context.Context) (locks.Lease, error) { return c.l[i].Acquire(ctx, key) })
}

// grant is client i's acquire of a key nobody holds. A refusal is tried
// again, up to five attempts 100 ms apart: a lock on several nodes
// refuses a free key when too few of them answer within the op timeout
// (RedlockMutex counts a late node as a no), as on a busy machine or
// over connections still being made. A lock that refuses a free key five
// times in a row fails; a lock granted after refusals says so in a note.
func (c *checker) grant(i int, key string) (locks.Lease, error) {
	const attempts = 5
	for n := 1; ; n++ {
		l, err := c.acquire(i, key)
		if !errors.Is(err, locks.ErrNotAcquired) || n == attempts {
			if n > 1 {
				times := fmt.Sprintf("%d times", n-1)
				if n == 2 {
					times = "once"
				}
				fmt.Fprintf(c.w, "  note  client %d's acquire of the free key %s was refused %s, then answered %s (a lock on several nodes refuses when too few answer in time)\n", i, key, times, outcome(err, "granted"))
			}
			return l, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *checker) release(i int, l locks.Lease) error {
	_, err := op(i, func(ctx context.Context) (struct{}, error) { return struct{}{}, c.l[i].Release(ctx, l) })
	return err
}

// outcome names an answer in the protocol's words.
func outcome(err error, granted string) string {
	switch {
	case err == nil:
		return granted
	case errors.Is(err, locks.ErrNotAcquired):
		return "refused"
	case errors.Is(err, locks.ErrNotHeld):
		return "not_held"
	}
	return fmt.Sprintf("unknown (%v)", err)
}

// want says what a request should have answered.
func want(what, wanted string, err error, granted string) error {
	if got := outcome(err, granted); got != wanted {
		return fmt.Errorf("%s: want %s, got %s", what, wanted, got)
	}
	return nil
}

// run checks the adapter step by step: each step a claim of the protocol
// (docs/protocol.md), or of the manifest, which a step it does not make
// skips.
func (c *checker) run(ctx context.Context) {
	c.exclusion(ctx)
	c.releases()
	c.fences()
	c.expiry()
	c.renewal()
	c.keptAlive()
	c.reentry()
	c.lost(ctx)
	c.cancels()
	c.unreachable()
	c.protocolLines()
}

// exclusion: a free key is granted to one client, marked on the nodes by
// its key and token, and refused to the other while it is held.
func (c *checker) exclusion(ctx context.Context) {
	c.step("acquire, then a second client refused", func() error {
		l, err := c.grant(0, "check:a")
		if err := want("client 0's acquire of a free key", "granted", err, "granted"); err != nil {
			return err
		}
		defer c.release(0, l)
		if n := c.holding("check:a"); c.direct != nil && n*2 <= len(c.nodes) {
			return fmt.Errorf("client 0 was granted check:a, but only %d of %d nodes hold a key of that name: does the adapter answer granted without asking its library?", n, len(c.nodes))
		}
		// The nemeses ask a node whether a lease is still there by its
		// key and token: the token must be how the node keeps it.
		// A Redis lock is kept on a majority of its nodes; a store's
		// ensemble answers as one (a PostgreSQL standby keeps no locks).
		if n := c.marking(ctx, l); n == 0 || c.direct != nil && n*2 <= len(c.nodes) {
			return fmt.Errorf("client 0 was granted check:a with token %q, but only %d of %d nodes keep that token at %s (on Redis: the key's value, or a field of its hash; on ZooKeeper: the lock node's path): the token must be how the library marks the lease on its nodes, and key_prefix any prefix it adds to the key, since lockchaos asks the nodes by them whether a lease survived a fault (docs/protocol.md)", l.Token, n, len(c.nodes), c.m.KeyPrefix+"check:a")
		}
		_, err = c.acquire(1, "check:a")
		if err == nil {
			return errors.New("client 1's acquire of a key that client 0 holds was answered granted: the adapter answers granted when the lock is held by another (two clients hold it)")
		}
		return want("client 1's acquire of a key that client 0 holds", "refused", err, "granted")
	})
}

// releases: a release frees the key, and a second release of the same
// lease is not_held.
func (c *checker) releases() {
	c.step("release, then not_held for the same lease", func() error {
		l, err := c.grant(0, "check:b")
		if err := want("acquire", "granted", err, "granted"); err != nil {
			return err
		}
		if err := want("release of a held lease", "released", c.release(0, l), "released"); err != nil {
			return err
		}
		if err := want("a second release of the same lease", "not_held", c.release(0, l), "released"); err != nil {
			return err
		}
		l1, err := c.grant(1, "check:b")
		if err := want("another client's acquire after the release", "granted", err, "granted"); err != nil {
			return fmt.Errorf("%w (the release did not free the lock)", err)
		}
		return want("its release", "released", c.release(1, l1), "released")
	})
}

// expiry: once a lease ran out another client takes the key, and the
// first release is then not_held (released, for a blind release).
func (c *checker) expiry() {
	if c.m.KeepsAlive || c.m.Leaseless {
		c.skip("not_held after expiry", "the lock keeps its lease alive or has none")
	} else {
		c.step("not_held after expiry", func() error {
			l, err := c.grant(0, "check:c")
			if err := want("acquire", "granted", err, "granted"); err != nil {
				return err
			}
			time.Sleep(c.lease + 300*time.Millisecond)
			l1, err := c.acquire(1, "check:c")
			if err := want(fmt.Sprintf("another client's acquire %v after the grant (lease %v)", c.lease+300*time.Millisecond, c.lease), "granted", err, "granted"); err != nil {
				return fmt.Errorf("%w: the lease did not expire", err)
			}
			defer c.release(1, l1)
			if c.m.BlindRelease {
				// What it claims: it cannot tell, and says released.
				return want("release of the expired lease, now someone else's (blind_release)", "released", c.release(0, l), "released")
			}
			return want("release of the expired lease, now someone else's", "not_held", c.release(0, l), "released")
		})
	}
}

// renewal: a lock that claims renew keeps its lease past its TTL by
// renewing it.
func (c *checker) renewal() {
	if !c.m.Renew {
		c.skip("renew", "the manifest does not claim renew")
	} else {
		c.step("renew keeps the lease past its TTL", func() error {
			l, err := c.grant(0, "check:d")
			if err := want("acquire", "granted", err, "granted"); err != nil {
				return err
			}
			defer c.release(0, l)
			for range 2 {
				time.Sleep(c.lease * 6 / 10)
				_, err := op(0, func(ctx context.Context) (locks.Lease, error) { return c.l[0].(locks.Renewer).Renew(ctx, l) })
				if err := want("renew of a held lease", "renewed", err, "renewed"); err != nil {
					return err
				}
			}
			time.Sleep(c.lease * 6 / 10)
			_, err = c.acquire(1, "check:d")
			return want(fmt.Sprintf("another client's acquire 1.8 leases after the grant, renewed twice"), "refused", err, "granted")
		})
	}
}

// keptAlive: a lock that claims keeps_alive still holds its key two
// leases on.
func (c *checker) keptAlive() {
	if !c.m.KeepsAlive {
		c.skip("the lease is kept alive", "the manifest does not claim keeps_alive")
	} else {
		c.step("the lease is kept alive", func() error {
			l, err := c.grant(0, "check:e")
			if err := want("acquire", "granted", err, "granted"); err != nil {
				return err
			}
			defer c.release(0, l)
			time.Sleep(2 * c.lease)
			_, err = c.acquire(1, "check:e")
			return want(fmt.Sprintf("another client's acquire two leases (%v) after the grant", 2*c.lease), "refused", err, "granted")
		})
	}
}

// reentry: a reentrant lock is taken twice by its holder and held until
// both levels are released.
func (c *checker) reentry() {
	if !c.m.Reentrant {
		c.skip("reentry", "the manifest does not claim reentrant")
	} else {
		c.step("reentry", func() error {
			outer, err := c.grant(0, "check:f")
			if err := want("acquire", "granted", err, "granted"); err != nil {
				return err
			}
			inner, err := c.acquire(0, "check:f")
			if err := want("the holder's second acquire (reentry)", "granted", err, "granted"); err != nil {
				c.release(0, outer)
				return err
			}
			if _, err := c.acquire(1, "check:f"); err == nil {
				return errors.New("another client's acquire of a re-entered key was answered granted")
			}
			if err := want("release of the inner level", "released", c.release(0, inner), "released"); err != nil {
				return err
			}
			if _, err := c.acquire(1, "check:f"); !errors.Is(err, locks.ErrNotAcquired) {
				return fmt.Errorf("another client's acquire after the inner release: want refused (the outer level still holds), got %s", outcome(err, "granted"))
			}
			return want("release of the outer level", "released", c.release(0, outer), "released")
		})
	}
}

// lost: a lock that claims lost says so when its key is deleted behind
// its back (on Redis).
func (c *checker) lost(ctx context.Context) {
	if !c.m.Lost {
		c.skip("lost", "the manifest does not claim lost")
	} else if c.direct == nil {
		c.skip("lost", "the check deletes a lease behind the library's back on Redis only")
	} else {
		c.step("lost when the lease is deleted behind its back", func() error {
			l, err := c.grant(0, "check:g")
			if err := want("acquire", "granted", err, "granted"); err != nil {
				return err
			}
			defer c.release(0, l)
			if l.Lost == nil {
				return errors.New("the manifest claims lost, but the lease has no lost signal")
			}
			for _, d := range c.direct {
				d.Del(ctx, c.m.KeyPrefix+"check:g")
			}
			select {
			case <-l.Lost:
				return nil
			case <-time.After(3 * c.lease):
				return fmt.Errorf("no lost event within three leases (%v) of the key's deletion", 3*c.lease)
			}
		})
	}
}

// cancels: a lock that claims cancel answers a release and an acquire
// cancelled before they run.
func (c *checker) cancels() {
	if !c.m.Cancel {
		c.skip("cancel", "the manifest does not claim cancel")
	} else {
		c.step("a release cancelled before it runs is answered", func() error {
			l, err := c.grant(0, "check:i")
			if err := want("acquire", "granted", err, "granted"); err != nil {
				return err
			}
			// Cancelled before it is sent: the bridge writes the release
			// and its cancel in one write.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err = c.l[0].Release(ctx, l)
			switch {
			case errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "cancelled"):
			case err == nil || errors.Is(err, locks.ErrNotHeld):
				// the call finished first: allowed
			default:
				return fmt.Errorf("a release cancelled before it ran: want cancelled (or its usual answer), got %v", err)
			}
			// What the library does after a cancelled release is its own
			// (redis-py 7.1.1 forgets its token: redis-py#3847): the
			// release after it must be answered, whatever it says.
			if err := c.release(0, l); err != nil && !errors.Is(err, locks.ErrNotHeld) {
				return fmt.Errorf("the release after a cancelled one: want released or not_held, got %v", err)
			}
			return nil
		})
		c.step("an acquire cancelled before it runs is answered", func() error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			l, err := c.l[0].Acquire(ctx, "check:j")
			switch {
			case errors.Is(err, context.Canceled) && strings.Contains(err.Error(), "cancelled"):
				if l.Token == "" {
					return nil // it says it took nothing
				}
			case err == nil:
				// the call finished first: allowed
			case errors.Is(err, locks.ErrNotAcquired):
				return nil
			default:
				return fmt.Errorf("an acquire cancelled before it ran: want cancelled (or its usual answer), got %v", err)
			}
			// A grant, or a cancelled acquire that named what it may
			// hold: a careful caller releases it.
			if err := c.release(0, l); err != nil && !errors.Is(err, locks.ErrNotHeld) {
				return fmt.Errorf("the release after a cancelled acquire: want released or not_held, got %v", err)
			}
			return nil
		})
	}
}

// unreachable: an acquire while every node is paused is answered within
// its timeout, and never granted.
func (c *checker) unreachable() {
	c.step("unknown (never granted) when its nodes are unreachable", func() error {
		for _, n := range c.nodes {
			if err := n.Signal(syscall.SIGSTOP); err != nil {
				return fmt.Errorf("pause the node: %w", err)
			}
		}
		start := time.Now()
		l, err := c.acquire(0, "check:h")
		took := time.Since(start)
		for _, n := range c.nodes {
			_ = n.Signal(syscall.SIGCONT)
		}
		switch {
		case err == nil:
			c.release(0, l)
			return errors.New("an acquire while every node was paused was answered granted")
		case strings.Contains(err.Error(), locks.NoAnswer):
			return fmt.Errorf("no answer within timeout_ms (%v) plus %v while its nodes were paused: set the library's command timeout from op_timeout_ms (%v)", OpTimeout, locks.AdapterGrace, took.Round(time.Millisecond))
		}
		return nil
	})
}

// protocolLines: every line the adapter wrote was a protocol message.
func (c *checker) protocolLines() {
	c.step("every line is a protocol message", func() error {
		time.Sleep(200 * time.Millisecond) // late lines land
		var all []string
		for i, l := range c.l {
			if p, ok := l.(interface{ Problems() []string }); ok {
				seen := map[string]int{}
				ps := p.Problems()
				for _, s := range ps {
					if seen[s]++; seen[s] == 1 {
						all = append(all, fmt.Sprintf("client %d: %s", i, s))
					}
				}
				if len(ps) > len(seen) {
					all = append(all, fmt.Sprintf("client %d: %d such lines in all", i, len(ps)))
				}
			}
		}
		if len(all) > 0 {
			return errors.New(strings.Join(all, "; "))
		}
		return nil
	})
}

// fences checks an adapter that sends fencing tokens: every grant of a
// key, to either client, carries a larger one than the grant before it.
// A resource that keeps out stale tokens relies on nothing else.
func (c *checker) fences() {
	l, err := c.grant(0, "check:i")
	if err != nil {
		c.step("fencing tokens increase", func() error { return want("acquire", "granted", err, "granted") })
		return
	}
	c.release(0, l)
	if l.Fence == 0 {
		c.skip("fencing tokens increase", "the adapter sends no fence")
		return
	}
	c.step("fencing tokens increase", func() error {
		last := l.Fence
		for i := range 4 {
			l, err := c.grant(i%2, "check:i")
			if err := want(fmt.Sprintf("grant %d of the key", i+2), "granted", err, "granted"); err != nil {
				return err
			}
			c.release(i%2, l)
			if l.Fence <= last {
				return fmt.Errorf("grant %d of the key (client %d) carried fence %d after %d: a fence must increase with every grant of the key, or a resource cannot keep a stale holder out", i+2, i%2, l.Fence, last)
			}
			last = l.Fence
		}
		return nil
	})
}

// marking counts the nodes that keep lease l the way the nemeses look for
// it (nemesis.HasLease).
func (c *checker) marking(ctx context.Context, l locks.Lease) int {
	n := 0
	for i, node := range c.nodes {
		if nemesis.HasLease(ctx, node, c.m.KeyPrefix, nemesis.Holding{Key: l.Key, Token: l.Token}.On(i, len(c.nodes))) {
			n++
		}
	}
	return n
}

// holding counts the nodes that hold a key whose name contains key (a
// library may add a prefix of its own).
func (c *checker) holding(key string) int {
	n := 0
	for _, d := range c.direct {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if ks, _, err := d.Scan(ctx, 0, "*"+key+"*", 1000).Result(); err == nil && len(ks) > 0 {
			n++
		}
		cancel()
	}
	return n
}

// Scratch makes the folder for a check's logs.
func Scratch() (string, error) {
	return os.MkdirTemp("", "lockchaos-adapter-check-")
}
