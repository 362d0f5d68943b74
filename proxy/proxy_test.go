package proxy_test

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/ports"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/redis/go-redis/v9"
)

// nodeAndProxies starts a redis-server and an empty set of proxies, both
// gone when the test ends.
func nodeAndProxies(t *testing.T) (cluster.Node, *proxy.Proxies) {
	t.Helper()
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	n, err := local.StartNode(context.Background(), cluster.NodeSpec{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	ps := proxy.New()
	t.Cleanup(ps.Close)
	return n, ps
}

// A latency toxic on one link slows that link and no other.
func TestLatencyToxicHitsOnlyItsLink(t *testing.T) {
	n, ps := nodeAndProxies(t)
	slow, err := ps.Add(0, 0, n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	fast, err := ps.Add(1, 0, n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.Links(func(c int) bool { return c == 1 }, nil); len(got) != 1 || got[0] != fast {
		t.Fatalf("Links(client 1) = %v", got)
	}
	if err := slow.AddToxic(proxy.Toxic{Name: "lat", Type: "latency", Stream: "downstream", Attributes: map[string]any{"latency": 150}}); err != nil {
		t.Fatal(err)
	}
	rtt := func(l *proxy.Link) time.Duration {
		c := redis.NewClient(&redis.Options{Addr: l.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
		defer c.Close()
		c.Ping(context.Background()) // connect first
		start := time.Now()
		if err := c.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	if d := rtt(slow); d < 150*time.Millisecond {
		t.Errorf("PING through the slowed link took %v, want at least 150ms", d)
	}
	if d := rtt(fast); d >= 150*time.Millisecond {
		t.Errorf("PING through the other link took %v: the toxic leaked", d)
	}
	if err := slow.RemoveToxic("lat"); err != nil {
		t.Fatal(err)
	}
	if d := rtt(slow); d >= 150*time.Millisecond {
		t.Errorf("PING after healing took %v", d)
	}
}

// A link pointed at another node keeps its address: a client that
// reconnects lands on the new node. A disabled link refuses connections
// until it is enabled as often as it was disabled. Relays are not client
// links.
func TestLinkFollowsANewUpstreamAndDisablesAndEnables(t *testing.T) {
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	var nodes []cluster.Node
	for _, name := range []string{"a", "b"} {
		n, err := local.StartNode(context.Background(), cluster.NodeSpec{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Stop()
		nodes = append(nodes, n)
	}
	ctx := context.Background()
	for i, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2, DisableIdentity: true})
		c.Set(ctx, "who", []string{"a", "b"}[i], 0)
		c.Close()
	}
	ps := proxy.New()
	defer ps.Close()
	l, err := ps.Add(0, 0, nodes[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ps.AddRelay("repl-b", 0, nodes[0].Addr()); err != nil {
		t.Fatal(err)
	}
	if len(ps.Links(nil, nil)) != 1 || len(ps.Relays(0)) != 1 {
		t.Errorf("links %d, relays %d: want one of each, apart", len(ps.Links(nil, nil)), len(ps.Relays(0)))
	}
	c := redis.NewClient(&redis.Options{Addr: l.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	who := func() (string, error) { return c.Get(ctx, "who").Result() }
	if v, err := who(); v != "a" {
		t.Fatalf("through the link: %q, %v; want a", v, err)
	}
	addr := l.Addr()
	// The link closes its listener and binds the same port again whenever
	// it is re-pointed or re-enabled; in the ephemeral range any outgoing
	// connection on the machine could take the port meanwhile.
	if _, p, _ := net.SplitHostPort(addr); mustAtoi(t, p) >= ports.EphemeralLow() {
		t.Errorf("link listens on %s, in the ephemeral range (from %d)", addr, ports.EphemeralLow())
	}
	if err := l.SetUpstream(nodes[1].Addr()); err != nil {
		t.Fatal(err)
	}
	if l.Addr() != addr || l.Upstream() != nodes[1].Addr() {
		t.Errorf("after SetUpstream the link listens on %s (was %s) and forwards to %s", l.Addr(), addr, l.Upstream())
	}
	who() // the old connection was closed: this one fails, the next reconnects
	if v, err := who(); v != "b" {
		t.Errorf("after SetUpstream: %q, %v; want b", v, err)
	}
	l.Disable()
	l.Disable()
	if _, err := who(); err == nil {
		t.Error("a disabled link still answers")
	}
	if err := l.Enable(); err != nil {
		t.Fatal(err)
	}
	if _, err := who(); err == nil {
		t.Error("disabled twice, enabled once: the link answers already")
	}
	if err := l.Enable(); err != nil {
		t.Fatal(err)
	}
	if v, err := who(); v != "b" {
		t.Errorf("after enabling: %q, %v; want b", v, err)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// slow-reply delays the replies of a client's commands, not its
// connection handshake: a client whose timeout is shorter than the delay
// reconnects after each timeout, and every command it sends during the
// fault still reaches the server (its INFO commandstats count SETs in each
// third of the window). A plain latency toxic on the replies delays the
// HELLO of every new connection past the timeout too, so after the first
// timeout no command reaches the server at all.
func TestSlowReplyDelaysRepliesNotTheHandshake(t *testing.T) {
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	n, err := local.StartNode(context.Background(), cluster.NodeSpec{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	direct := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer direct.Close()
	sets := func() int {
		info, err := direct.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
				n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
				return n
			}
		}
		return 0
	}
	// The SETs that reached the server in each third of a 1.5 s fault, from
	// a client like a worker's: a 100 ms timeout against 300 ms replies.
	// Each third sends three SETs at least: beside a busy machine's other
	// jobs one SET, or the count, can take the rest of a third, and a third
	// in which nothing was sent would count none ([5 4 0]).
	thirds := func(typ string) [3]int {
		ps := proxy.New()
		defer ps.Close()
		l, err := ps.Add(0, 0, n.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := l.AddToxic(proxy.Toxic{Name: "slow", Type: typ, Stream: "downstream", Attributes: map[string]any{"latency": 300}}); err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: l.Addr(), DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond,
			WriteTimeout: 100 * time.Millisecond, MaxRetries: -1, PoolSize: 4, Protocol: 2, DisableIdentity: true, ContextTimeoutEnabled: true})
		defer c.Close()
		direct.ConfigResetStat(context.Background())
		var got [3]int
		start := time.Now()
		for third := range 3 {
			for sent := 0; sent < 3 || time.Since(start) < time.Duration(third+1)*500*time.Millisecond; sent++ {
				c.Set(context.Background(), "k", "v", time.Second) // times out: the reply is late
			}
			got[third] = sets()
		}
		return [3]int{got[0], got[1] - got[0], got[2] - got[1]}
	}
	got := thirds("slow-reply")
	t.Logf("slow-reply: SETs that reached the server per third of the fault: %v", got)
	if got[0] == 0 || got[1] == 0 || got[2] == 0 {
		t.Errorf("want some in each third")
	}
	// For contrast (logged, not asserted: it is toxiproxy's and go-redis's
	// behaviour, not ours).
	t.Logf("a latency toxic on the replies instead: %v (every new connection's HELLO is late too)", thirds("latency"))
}

func TestHelloReplyIsRecognised(t *testing.T) {
	for _, tc := range []struct {
		b    string
		want bool
	}{
		{"*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n", true},
		{"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n", true},
		{"+OK\r\n", false},
		{":1\r\n", false},
		{"*2\r\n$6\r\nserver\r\n", true},
		{"*2\r\n$5\r\nlock1\r\n", false},
		{"$-1\r\n", false},
		{"*", false},
	} {
		if got := proxy.IsHelloReply([]byte(tc.b)); got != tc.want {
			t.Errorf("proxy.IsHelloReply(%q) = %v", tc.b, got)
		}
	}
}

// The ack-loss toxic: a command through the link runs on the server, its
// answer never comes, and the connection answers nothing again; once the
// link's connections are closed and the toxic removed, a new connection is
// answered. A real redis-server on the far side.
func TestAckLossToxicRunsTheCommandAndLosesTheAnswer(t *testing.T) {
	n, ps := nodeAndProxies(t)
	l, err := ps.Add(0, 0, n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	direct := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2, DisableIdentity: true})
	defer direct.Close()
	ctx := context.Background()
	// One connection, made before the fault, kept across it.
	c := redis.NewClient(&redis.Options{Addr: l.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true,
		PoolSize: 1, ReadTimeout: 300 * time.Millisecond})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.AddToxic(proxy.Toxic{Name: "ack", Type: "ack-loss", Stream: "downstream", Attributes: map[string]any{"tag": t.Name()}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k1", "v", 0).Err(); err == nil {
		t.Fatal("SET through the link was answered under ack-loss")
	}
	if v, _ := direct.Get(ctx, "k1").Result(); v != "v" {
		t.Fatalf("the server did not run the SET whose answer was lost: k1=%q", v)
	}
	if got := proxy.Dropped(t.Name()); got < 1 {
		t.Errorf("proxy.Dropped = %d, want at least the SET's answer", got)
	}
	// A raw connection made under the fault: its request runs, and no byte
	// comes back, then or later.
	raw, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write([]byte("SET k2 v\r\nSET k3 v\r\n")); err != nil {
		t.Fatal(err)
	}
	raw.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, _ := raw.Read(make([]byte, 64)); n > 0 {
		t.Fatalf("%d bytes came back on a connection whose answers are lost", n)
	}
	for _, k := range []string{"k2", "k3"} {
		if v, _ := direct.Get(ctx, k).Result(); v != "v" {
			t.Errorf("the server did not run SET %s sent under the fault", k)
		}
	}
	// Heal as the nemesis does: close the link's connections, then remove
	// the toxic. The old connection is closed, not answered late.
	l.Disable()
	if err := l.RemoveToxic("ack"); err != nil {
		t.Fatal(err)
	}
	if err := l.Enable(); err != nil {
		t.Fatal(err)
	}
	raw.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := raw.Read(make([]byte, 64)); n > 0 || err == nil {
		t.Errorf("after the heal the old connection gave %d bytes (%v), want it closed", n, err)
	}
	fresh := redis.NewClient(&redis.Options{Addr: l.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer fresh.Close()
	if v, err := fresh.Get(ctx, "k1").Result(); err != nil || v != "v" {
		t.Errorf("a new connection after the heal: %q, %v", v, err)
	}
}

// A count toxic in front of a reset_peer counts the connections the reset
// tore down: one per connection that carried a request, however many
// requests it sent, and none for a connection that stayed idle.
func TestCountToxicCountsTheConnectionsAResetHits(t *testing.T) {
	n, ps := nodeAndProxies(t)
	l, err := ps.Add(0, 0, n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	// Three connections made before the fault, each answered once.
	var conns []net.Conn
	var readers []*bufio.Reader
	for range 3 {
		c, r := dial()
		c.Write([]byte("PING\r\n"))
		if line, err := r.ReadString('\n'); line != "+PONG\r\n" {
			t.Fatalf("PING before the fault: %q %v", line, err)
		}
		conns, readers = append(conns, c), append(readers, r)
	}
	tag := t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	for _, x := range []proxy.Toxic{
		{Name: "count", Type: "count", Stream: "upstream", Attributes: map[string]any{"tag": tag}},
		{Name: "reset", Type: "reset_peer", Stream: "upstream", Attributes: map[string]any{"timeout": 0}},
	} {
		if err := l.AddToxic(x); err != nil {
			t.Fatal(err)
		}
	}
	// Two of the old connections send (one of them twice, pipelined), one
	// new connection sends, the third old one stays idle.
	conns[0].Write([]byte("PING\r\nPING\r\n"))
	conns[1].Write([]byte("PING\r\n"))
	c, r := dial()
	c.Write([]byte("PING\r\n"))
	for _, x := range []net.Conn{conns[0], conns[1], c} {
		x.SetReadDeadline(time.Now().Add(3 * time.Second))
	}
	for i, r := range []*bufio.Reader{readers[0], readers[1], r} {
		if line, err := r.ReadString('\n'); err == nil {
			t.Errorf("connection %d was answered under reset_peer: %q", i, line)
		}
	}
	if got := proxy.Carried(tag); got != 3 {
		t.Errorf("proxy.Carried = %d, want the 3 connections that sent a request", got)
	}
	// Once the toxics are gone, the idle connection is answered and not
	// counted.
	for _, name := range []string{"reset", "count"} {
		if err := l.RemoveToxic(name); err != nil {
			t.Fatal(err)
		}
	}
	conns[2].Write([]byte("PING\r\n"))
	if line, err := readers[2].ReadString('\n'); line != "+PONG\r\n" {
		t.Errorf("the idle connection after the fault: %q %v", line, err)
	}
	if got := proxy.Carried(tag); got != 3 {
		t.Errorf("proxy.Carried = %d after the fault, want still 3", got)
	}
}

// A slow-reply toxic with a log records each reply it holds back: when it
// came from the server and when it was due out. A client that gave up
// while the reply was held back for it gave up on a late reply (it
// refused it); one that gave up after the reply was due out did not — its
// reply came late only because the machine was slow (issue 42.4).
func TestReplyLogSaysWhatWasHeldBack(t *testing.T) {
	n, ps := nodeAndProxies(t)
	l, err := ps.Add(0, 0, n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	log, forget := proxy.NewReplyLog("test-replies")
	defer forget()
	if err := l.AddToxic(proxy.Toxic{Name: "slow", Type: "slow-reply", Stream: "downstream", Attributes: map[string]any{"latency": 1000, "log": "test-replies"}}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sent := history.Now()
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("reply %q, %v", line, err)
	}
	read := history.Now()
	if d := time.Duration(read - sent); d < time.Second {
		t.Fatalf("the reply came after %v, less than its delay", d)
	}
	// It came from the server at most a delay before it was read, and was
	// due out a delay after it came.
	if !log.HeldPast(sent, read-int64(time.Second)) {
		t.Errorf("a client that gave up a delay before it read the reply did not give up on a reply held back")
	}
	if log.HeldPast(sent, read) {
		t.Errorf("a client that gave up once the reply was out gave up on a reply held back")
	}
	if log.HeldPast(read, read+int64(time.Hour)) {
		t.Errorf("a reply that came before the acquire counts")
	}
}
