package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/redis/go-redis/v9"
)

// A latency toxic on one link slows that link and no other.
func TestLatencyToxicHitsOnlyItsLink(t *testing.T) {
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	n, err := local.StartNode(context.Background(), cluster.NodeSpec{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	ps := New()
	defer ps.Close()
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
	if err := slow.AddToxic(Toxic{Name: "lat", Type: "latency", Stream: "downstream", Attributes: map[string]any{"latency": 150}}); err != nil {
		t.Fatal(err)
	}
	rtt := func(l *Link) time.Duration {
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
