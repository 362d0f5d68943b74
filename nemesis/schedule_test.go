package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// fakeEnv is pure bookkeeping: the schedule's logic needs no processes.
type fakeEnv struct {
	mu      sync.Mutex
	holders []Holding
	paused  map[int]bool
}

func (f *fakeEnv) TTL() time.Duration  { return 20 * time.Millisecond }
func (f *fakeEnv) Hold() time.Duration { return 5 * time.Millisecond }
func (f *fakeEnv) Rand() *rand.Rand    { return rand.New(rand.NewPCG(1, 2)) }
func (f *fakeEnv) Holders() []Holding {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holders
}
func (f *fakeEnv) Acquiring(time.Duration) []int { return nil }
func (f *fakeEnv) Pause(c int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused[c] = true
	return nil
}
func (f *fakeEnv) Resume(c int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused[c] = false
	return nil
}
func (f *fakeEnv) Kill(int) error                    { return errors.New("not here") }
func (f *fakeEnv) Stretch(int, bool) error           { return errors.New("not here") }
func (f *fakeEnv) Proxies() *proxy.Proxies           { return proxy.New() }
func (f *fakeEnv) LockNodes() []cluster.Node         { return nil }
func (f *fakeEnv) Topology() Topology                { return Topology{Clients: 4, LockNodes: 1} }
func (f *fakeEnv) Groups() []*Group                  { return nil }
func (f *fakeEnv) Sentinels() []string               { return nil }
func (f *fakeEnv) Clock(cluster.Node) *cluster.Clock { return nil }

func TestScheduleRecordsWindowsWaitsForTargetsAndHealsOnStop(t *testing.T) {
	env := &fakeEnv{paused: map[int]bool{}}
	n, err := (&PauseClient{}).withDuration(t, "40ms")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []history.Event
	record := func(e history.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- Schedule(ctx, env, []Scheduled{{Name: "pause-client", Nemesis: n}}, 10*time.Millisecond, record)
	}()
	time.Sleep(50 * time.Millisecond) // no holder yet: nothing may be injected
	mu.Lock()
	if len(events) != 0 {
		t.Errorf("a fault was recorded with no target: %+v", events)
	}
	mu.Unlock()
	env.mu.Lock()
	env.holders = []Holding{{Client: 2, Key: "lock:0", Since: time.Now()}}
	env.mu.Unlock()
	time.Sleep(120 * time.Millisecond)
	cancel() // probably in the middle of a pause
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if env.paused[2] {
		t.Error("the client was left paused after the schedule stopped")
	}
	starts := map[int]history.Event{}
	for _, e := range events {
		switch e.Kind {
		case history.FaultStart:
			starts[e.Fault.ID] = e
		case history.FaultEnd:
			s, ok := starts[e.Fault.ID]
			if !ok || s.Time > e.Time {
				t.Errorf("fault %d ends before it starts or without a start", e.Fault.ID)
			}
			delete(starts, e.Fault.ID)
		}
	}
	if len(starts) != 0 {
		t.Errorf("faults without an end: %v", starts)
	}
	if len(events) < 2 || events[0].Fault.Target != "client 2" {
		t.Errorf("want at least one recorded pause of client 2, got %+v", events)
	}
}

func (p *PauseClient) withDuration(t *testing.T, d string) (Nemesis, error) {
	spec, _ := Lookup("pause-client")
	return newFrom(spec, map[string]string{"duration": d})
}
