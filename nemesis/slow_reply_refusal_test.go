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

// slowReplyRefusal is one run of the test above; it says why the machine
// left it no evidence ("" when it did).
func slowReplyRefusal(t *testing.T) string {
	node := localNode(t, "refusal")
	ps := proxy.New()
	t.Cleanup(ps.Close)
	link, err := ps.Add(1, 0, node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	env := proxiedEnv{newFakeEnv(), ps, []cluster.Node{node}}
	env.acquires = map[int]Acquire{}
	spec, _ := Lookup("slow-reply")
	n, err := newFrom(spec, map[string]string{"delay": "2s", "duration": "20s"})
	if err != nil {
		t.Fatal(err)
	}
	const c, key = 1, "lock:0"
	done := make(chan *Fault, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		f, err := n.Inject(ctx, env, Step{Client: c, Key: key})
		if err != nil && ctx.Err() == nil {
			t.Error(err)
		}
		done <- f
	}()
	waitFor(t, func() bool { env.mu.Lock(); defer env.mu.Unlock(); return env.stretched[c] == key })
	conn, err := net.Dial("tcp", link.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	replies := bufio.NewReader(conn)
	// acquire publishes client c's acquire of key, invoked at invoked, as
	// given up at done with no answer.
	gaveUp := func(invoked, done int64) {
		env.mu.Lock()
		defer env.mu.Unlock()
		env.acquires[c] = Acquire{Key: key, Invoked: invoked, Done: done, Outcome: history.Info}
		close(env.changed)
		env.changed = make(chan struct{})
	}

	// It reads its reply once due out, and gives up just after.
	invoked := history.Now()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := replies.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	gaveUp(invoked, history.Now())
	select {
	case f := <-done:
		t.Fatalf("the fault judged an acquire whose reply was due out before it gave up: landed %v, %s", f.Effect.Landed, f.Effect.Note)
	case <-time.After(300 * time.Millisecond):
	}

	// The next gives up 100 ms into a 2 s delay: its reply is held back,
	// unless the machine stalled the test past the delay.
	invoked = history.Now()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	gaveUpAt := history.Now()
	if gaveUpAt-invoked >= int64(time.Second) {
		// Its reply may have been due out already: not the case meant.
		cancel()
		if f := <-done; f != nil && f.Heal != nil {
			_ = f.Heal(context.Background())
		}
		return "the test's 100 ms wait took " + time.Duration(gaveUpAt-invoked).String()
	}
	gaveUp(invoked, gaveUpAt)
	var f *Fault
	select {
	case f = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the fault did not judge a given-up acquire in 30 s")
	}
	if f.Heal != nil {
		_ = f.Heal(context.Background())
	}
	if f.Effect == nil || !f.Effect.Landed || !strings.Contains(f.Effect.Note, "still held back for it") {
		t.Errorf("effect %+v; want a late lease refused with its reply held back", f.Effect)
	}
	return ""
}
