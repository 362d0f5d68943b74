package nemesis

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// proxiedEnv is fakeEnv with a real lock node behind real client links.
type proxiedEnv struct {
	*fakeEnv
	ps    *proxy.Proxies
	nodes []cluster.Node
}

func (e proxiedEnv) Proxies() *proxy.Proxies   { return e.ps }
func (e proxiedEnv) LockNodes() []cluster.Node { return e.nodes }

// slow-reply lands on an acquire that got no lease only when the client
// gave up with a late reply still held back for it (the lock refused a
// late lease by its design). One whose reply was due out before it gave up
// got no lease only because it read the reply late — a busy machine, as
// under load redislock's one round trip gave up at its 300 ms op timeout
// on a reply due at 255 ms, and the fault was counted as landed on a
// refusal (issue 42.4): a grant that never came is no lease the fault
// outlasted, and the fault waits for the next acquire.
func TestSlowReplyLandsOnARefusalOnlyWithAReplyHeldBack(t *testing.T) {
	t.Parallel()
	for attempt := 1; ; attempt++ {
		why := slowReplyRefusal(t)
		if why == "" {
			return
		}
		if attempt == 3 {
			t.Fatalf("no evidence in 3 runs: %s", why)
		}
		t.Logf("no evidence (%s): running it again", why)
	}
}

// refusalRig is slow-reply (replies a delay late) injected at client 1's
// key on a real lock node behind a real link, with the acquires the test
// publishes as the view's.
type refusalRig struct {
	t      *testing.T
	env    proxiedEnv
	link   *proxy.Link
	done   chan *Fault
	cancel context.CancelFunc
	stream // the client's first connection
}

// stream is one connection of the client's through its slowed link.
type stream struct {
	t       *testing.T
	conn    net.Conn
	replies *bufio.Reader
}

const rigClient, rigKey = 1, "lock:0"

func newRefusalRig(t *testing.T, delay string) *refusalRig {
	node := localNode(t, "refusal")
	ps := proxy.New()
	t.Cleanup(ps.Close)
	link, err := ps.Add(rigClient, 0, node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	env := proxiedEnv{newFakeEnv(), ps, []cluster.Node{node}}
	env.acquires = map[int]Acquire{}
	spec, _ := Lookup("slow-reply")
	n, err := newFrom(spec, map[string]string{"delay": delay, "duration": "20s"})
	if err != nil {
		t.Fatal(err)
	}
	r := &refusalRig{t: t, env: env, link: link, done: make(chan *Fault, 1)}
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	t.Cleanup(r.cancel)
	go func() {
		f, err := n.Inject(ctx, env, Step{Client: rigClient, Key: rigKey})
		if err != nil && ctx.Err() == nil {
			t.Error(err)
		}
		r.done <- f
	}()
	waitFor(t, func() bool { env.mu.Lock(); defer env.mu.Unlock(); return env.stretched[rigClient] == rigKey })
	r.stream = r.dial()
	return r
}

// dial opens another connection of the client's.
func (r *refusalRig) dial() stream {
	conn, err := net.Dial("tcp", r.link.Addr())
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { conn.Close() })
	return stream{r.t, conn, bufio.NewReader(conn)}
}

// send sends one request (its reply comes a delay late).
func (r stream) send() {
	if _, err := r.conn.Write([]byte("PING\r\n")); err != nil {
		r.t.Fatal(err)
	}
}

// read reads one reply, once due out.
func (r stream) read() {
	if _, err := r.replies.ReadString('\n'); err != nil {
		r.t.Fatal(err)
	}
}

// gaveUp publishes the client's acquire, invoked at invoked, as given up
// at done with no lease (unanswered: the harness stopped waiting for it).
func (r *refusalRig) gaveUp(invoked, done int64, unanswered bool) {
	r.env.mu.Lock()
	defer r.env.mu.Unlock()
	r.env.acquires[rigClient] = Acquire{Key: rigKey, Invoked: invoked, Done: done, Outcome: history.Info, Unanswered: unanswered}
	close(r.env.changed)
	r.env.changed = make(chan struct{})
}

// notJudged fails if the fault judged the acquire just published.
func (r *refusalRig) notJudged(what string) {
	select {
	case f := <-r.done:
		r.t.Fatalf("the fault judged %s: landed %v, %s", what, f.Effect.Landed, f.Effect.Note)
	case <-time.After(300 * time.Millisecond):
	}
}

// judged waits for the fault's judgement and heals it.
func (r *refusalRig) judged() *Fault {
	var f *Fault
	select {
	case f = <-r.done:
	case <-time.After(30 * time.Second):
		r.t.Fatal("the fault did not judge a given-up acquire in 30 s")
	}
	if f.Heal != nil {
		_ = f.Heal(context.Background())
	}
	return f
}

// abandon ends the fault unjudged (a run the machine left no evidence).
func (r *refusalRig) abandon() {
	r.cancel()
	if f := <-r.done; f != nil && f.Heal != nil {
		_ = f.Heal(context.Background())
	}
}

func refusedWithAReplyHeldBack(t *testing.T, f *Fault) {
	t.Helper()
	if f.Effect == nil || !f.Effect.Landed || !strings.Contains(f.Effect.Note, "still held back for it") {
		t.Errorf("effect %+v; want a late lease refused with its reply held back", f.Effect)
	}
}

// slowReplyRefusal is one run of the test above; it says why the machine
// left it no evidence ("" when it did).
func slowReplyRefusal(t *testing.T) string {
	r := newRefusalRig(t, "2s")

	// It reads its reply once due out, and gives up just after.
	invoked := history.Now()
	r.send()
	r.read()
	r.gaveUp(invoked, history.Now(), false)
	r.notJudged("an acquire whose reply was due out before it gave up")

	// The harness stops waiting for the adapter 100 ms into the delay: no
	// refusal of the lock's, whatever was held back (issue 42: a fault
	// counted landed on the harness's own op timeout).
	invoked = history.Now()
	r.send()
	time.Sleep(100 * time.Millisecond)
	r.gaveUp(invoked, history.Now(), true)
	r.notJudged("an acquire the harness stopped waiting for")
	r.read()

	// The next gives up 100 ms into a 2 s delay: its reply is held back,
	// unless the machine stalled the test past the delay.
	invoked = history.Now()
	r.send()
	time.Sleep(100 * time.Millisecond)
	gaveUpAt := history.Now()
	if gaveUpAt-invoked >= int64(time.Second) {
		// Its reply may have been due out already: not the case meant.
		r.abandon()
		return "the test's 100 ms wait took " + time.Duration(gaveUpAt-invoked).String()
	}
	r.gaveUp(invoked, gaveUpAt, false)
	refusedWithAReplyHeldBack(t, r.judged())
	return ""
}
