package nemesis_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestSlowReplyOptionsAreDecodedIntoFields(t *testing.T) {
	t.Parallel()
	if s := nemesis.MustBuild(t, "slow-reply", nil).(*nemesis.SlowReply); s.Links != nemesis.LinkChoice("client", -1) {
		t.Errorf("slow-reply links default: %+v, want a random client's", s.Links)
	}
	if s := nemesis.MustBuild(t, "slow-reply", map[string]string{"links": "node=2"}).(*nemesis.SlowReply); s.Links != nemesis.LinkChoice("node", 2) {
		t.Errorf("slow-reply links=node=2: %+v", s.Links)
	}
}

func TestSlowReplyAppliesChecksTheTopology(t *testing.T) {
	t.Parallel()
	applies(t, []appliesCase{
		{"slow-reply", map[string]string{"links": "client=4"}, topoRun, "links=client=4"},
		{"slow-reply", map[string]string{"links": "client=3"}, topoRun, ""},
		{"slow-reply", map[string]string{"links": "peers"}, topoReplicated, "client links only"},
	})
}

// Replies 0.85 TTL late on one client's links (its requests are not
// delayed): the server granted the lease at once, the client hears of it
// with less of it left than its hold, and works under it while the other
// client takes the lock. The fault delays only the replies of the client
// it aimed at, the lease it aimed at is lost, and the first overlap is its
// doing. Two clients that think for up to a TTL and wait up to a TTL for
// the lock leave it free often, and try again soon (the grid's cell).
func TestSlowReplyHandsOutAnExpiredLease(t *testing.T) {
	t.Parallel()
	c := runtest.FaultConfig(t, "token-lua", []string{"slow-reply"})
	c.Clients, c.Think, c.Wait, c.Duration = 2, c.TTL, c.TTL, 13*c.TTL
	res, events := runtest.RunFaults(t, &c)
	// A first overlap that a measured stall of the harness made (a client
	// that could not run as long as it lasted) says nothing of the fault:
	// run again (beside 8 CPU hogs: client 0 stalled 16 ms over a 16 ms
	// overlap, with the fault's lease lost).
	for attempt := 2; attempt <= 3 && len(res.Mutex.Overlaps) > 0 && res.Mutex.Overlaps[0].Cause == checker.CauseStall; attempt++ {
		t.Logf("the first overlap is a stall's (%s): running it again", res.Summary)
		c.Out = runtest.RunDir(t)
		res, events = runtest.RunFaults(t, &c)
	}
	// The nemesis measured when the server answered the aimed acquire: its
	// reply then waited in the proxies a delay, so it came a delay or more
	// before the acquire's ok (Aim.Since).
	for _, e := range events {
		if e.Kind != history.FaultEnd || e.Effect == nil || !e.Effect.Landed || e.Fault.Aim == nil {
			continue
		}
		delay, err := time.ParseDuration(e.Fault.Params["delay"])
		if err != nil {
			t.Fatal(err)
		}
		if a := e.Effect.Answered; a <= 0 || a > e.Fault.Aim.Since-delay.Nanoseconds() {
			t.Errorf("fault %d: the servers answered at %d, want after 0 and a delay (%s) or more before the aimed acquire's ok at %d", e.Fault.ID, a, delay, e.Fault.Aim.Since)
		}
	}
	runtest.Verdict(t, res, checker.Violation)
	runtest.Landed(t, res, history.LeaseLost)
	f := res.Faults[0]
	if f.Params["stream"] != "downstream" || !slices.Equal(f.Clients, []int{mustAtoi(t, f.Params["client"])}) {
		t.Errorf("the fault did not slow only the replies to the client it aimed at: clients %v, %v", f.Clients, f.Params)
	}
	if o := res.Mutex.Overlaps[0]; len(o.Faults) == 0 || o.Cause != checker.CauseFault {
		t.Errorf("the first overlap is not the fault's: %+v", o)
	}
}

// A late lease that the lock refuses by its own design lands: setnx-expire's
// acquire is two round trips, and its second reply, 0.85 TTL late, is still
// held back for it when its op timeout (the TTL) passes; Redlock gives each
// node 5% of the TTL. Each gives up with a reply still held back, and the
// fault landed on a refusal: safe is evidence. A fault under which the
// aimed client never found the lock free did not land (CI, a fault of two
// whose client 1 waited out the other's holds), and is no evidence. (An acquire whose one reply
// was due out before its deadline and came after it, on a busy machine,
// refused nothing: issue 42.4, TestReplyLogSaysWhatWasHeldBack.)
func TestSlowReplyLandsOnALeaseRefusedByDesign(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lock string
		opts []string
	}{
		{"setnx-expire", nil},
		{"redlock", []string{"redlock.drift-factor=0.05"}}, // the grid's: a 1 s lease on a busy machine
	} {
		t.Run(tc.lock, func(t *testing.T) {
			c := runtest.FaultConfig(t, tc.lock, []string{"slow-reply"}, tc.opts...)
			if tc.lock == "redlock" {
				c.TTL, c.Hold = time.Second, 200*time.Millisecond
			}
			c.Clients, c.Think, c.Wait, c.Duration = 2, c.TTL, c.TTL, 13*c.TTL
			res, _ := runtest.RunFaults(t, &c)
			// A fault under which the aimed client never found the lock
			// free (the other held it throughout) did not land, and says
			// nothing: RunEvidence runs again only when no fault landed.
			runtest.Verdict(t, res, checker.Safe)
			landed := 0
			for _, f := range res.Faults {
				if !f.Landed {
					continue
				}
				landed++
				if !strings.Contains(f.Effect, "still held back for it") {
					t.Errorf("fault %d landed: %s; want a late lease refused with a reply held back", f.ID, f.Effect)
				}
			}
			if landed == 0 {
				t.Errorf("no fault landed in three runs: %s", res.Summary)
			}
		})
	}
}

// An adapter's grant with no validity left (valid_ms 0 or less) is given
// up at once and recorded as a refused acquire, as a caller that checks
// its validity never enters: node-redlock 5 resolves acquire() with the
// quorum alone, and replies held back 0.97 TTL bring it an expiration
// already past (the catalogue scenario
// node-redlock-5-checked-validity-is-safe). Recorded as an ok and a loss
// at once, such a grant overlapped the next holder by microseconds
// (2026-11-30, on containers beside CPU hogs).
func TestAGrantWithNoValidityLeftIsRefused(t *testing.T) {
	t.Parallel()
	const lock = "node-redlock-5.0.0-beta.2"
	c := runtest.FaultConfig(t, lock, []string{"slow-reply"}, lock+".checkValidity=true", lock+".driftFactor=0.05", "slow-reply.delay=0.97ttl")
	c.TTL, c.Hold = time.Second, 200*time.Millisecond
	c.Clients, c.Think, c.Wait, c.OpTimeout, c.Duration = 2, c.TTL, c.TTL, 3*c.TTL, 13*c.TTL
	res, events := runtest.RunFaults(t, &c)
	runtest.Verdict(t, res, checker.Safe)
	refused := 0
	for _, e := range events {
		if e.Kind == history.Fail && e.F == history.Acquire && strings.Contains(e.Message, locks.NoValidityLeft) {
			refused++
		}
	}
	if refused == 0 {
		t.Errorf("no acquire was refused for a grant with no validity left: %s", res.Summary)
	}
}

// The fault reads the lease left at the grant on the lock's node (the
// key's PTTL), not from its own delay: a lock that confirms its SET with a
// second round trip (token-lua-wait's WAIT) waits for two late replies
// after the lease began. Replies 0.45 TTL late leave it 0.1 TTL for a hold
// of 0.2 TTL, and it breaks; token-lua, one late reply, keeps 0.55 TTL, and
// the same fault does not land.
func TestSlowReplyReadsTheLeaseLeftOnTheNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lock   string
		landed bool
	}{{"token-lua-wait", true}, {"token-lua", false}} {
		t.Run(tc.lock, func(t *testing.T) {
			c := runtest.FaultConfig(t, tc.lock, []string{"slow-reply"}, "slow-reply.delay=0.45ttl")
			c.Clients, c.Think, c.Wait, c.Duration, c.OpTimeout = 2, c.TTL, c.TTL, 13*c.TTL, 2*c.TTL
			var res checker.Result
			if tc.landed {
				res, _ = runtest.RunFaults(t, &c)
			} else {
				// Meant not to land: one run (RunFaults makes a run in
				// which no fault landed again, as no evidence, and skips
				// after three).
				var err error
				if res, err = runner.Run(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			var measured []checker.FaultWindow
			for _, f := range res.Faults {
				if strings.Contains(f.Effect, "(by its nodes)") {
					measured = append(measured, f)
				}
			}
			if len(measured) == 0 {
				t.Fatalf("no fault read the lease left on the node: %+v", res.Faults)
			}
			landed := 0
			for _, f := range measured {
				switch {
				case f.Landed && !tc.landed:
					t.Errorf("fault %d landed, want not: %s", f.ID, f.Effect)
				case f.Landed:
					landed++
				case tc.landed && !strings.Contains(f.Effect, "less than its"):
					// A fault that found the lease short yet did not land
					// (the run ended, or the holder's stretch did, before
					// another client came: nothing shown either way) is no
					// evidence; one that found the lease long enough is
					// wrong.
					t.Errorf("fault %d found the lease long enough, want short: %s", f.ID, f.Effect)
				}
			}
			if tc.landed && landed == 0 {
				t.Errorf("no fault landed: %+v", measured)
			}
			if tc.landed {
				runtest.Verdict(t, res, checker.Violation)
				runtest.Landed(t, res, history.LeaseLost)
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// monitoredSlowReply is slow-reply, watched from lock node 0: from before
// the replies are slowed until they heal, it reads the node's MONITOR
// stream (straight from the node, not through a link) and notes when each
// SET of the slowed client reached the server.
type monitoredSlowReply struct {
	nemesis.SlowReply
	seen *slowReplySeen
}

// slowReplySeen is what monitoredSlowReply saw of its one fault.
type slowReplySeen struct {
	mu         sync.Mutex
	client     int
	start, end int64   // the fault's window (history times)
	sets       []int64 // arrivals of the slowed client's SETs (history times)
	err        error
}

func (m *monitoredSlowReply) Inject(ctx context.Context, env nemesis.Env, step nemesis.Step) (*nemesis.Fault, error) {
	conn, err := net.Dial("tcp", env.LockNodes()[0].Addr())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		conn.Close()
		return nil, err
	}
	var arrivals []struct {
		at   int64
		line string
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			arrivals = append(arrivals, struct {
				at   int64
				line string
			}{history.Now(), sc.Text()})
		}
	}()
	f, err := m.SlowReply.Inject(ctx, env, step)
	if f == nil {
		conn.Close()
		return f, err
	}
	heal := f.Heal
	f.Heal = func(ctx context.Context) error {
		herr := heal(ctx)
		end := history.Now()
		conn.Close()
		<-read
		c, _ := strconv.Atoi(f.Params["client"])
		m.seen.mu.Lock()
		defer m.seen.mu.Unlock()
		m.seen.client, m.seen.start, m.seen.end = c, f.Start, end
		// A SET's token begins with its owner, client-N-… (runner.Run).
		mark := fmt.Sprintf(`"SET" "%s" "client-%d-`, f.Params["key"], c)
		for _, a := range arrivals {
			if strings.Contains(a.line, mark) {
				m.seen.sets = append(m.seen.sets, a.at)
			}
		}
		return herr
	}
	return f, err
}

// slow-reply delays the replies of lock commands, not the connection
// set-up of the client library: Redlock's clients give each node 5% of the
// TTL, far less than the delay, so every SET times out, go-redis closes
// that connection, and the next SET goes out on a new one, after a HELLO.
// Seen on the node, the slowed client's SETs keep arriving in every third
// of the fault's window — a fault that delayed the HELLO's reply too
// would let them through only in its first moments (the pooled
// connections opened before it), and the client would send nothing after.
func TestSlowReplyLetsTheSlowedClientsCommandsReachTheNode(t *testing.T) {
	t.Parallel()
	seen := &slowReplySeen{}
	nemesis.RegisterForTest(t, nemesis.Spec{
		Name:   "slow-reply-monitored",
		Action: history.ActionNetwork,
		New:    func() nemesis.Nemesis { return &monitoredSlowReply{seen: seen} },
	})
	c := runtest.FaultConfig(t, "redlock", []string{"slow-reply-monitored"}, "redlock.drift-factor=0.05",
		"slow-reply-monitored.schedule=at=500ms", "slow-reply-monitored.links=client=1")
	c.Clients, c.TTL, c.Hold, c.Wait, c.Duration = 2, time.Second, 200*ms, time.Second, 8*time.Second
	res, err := runner.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(res.Faults) != 1 || seen.end == 0 {
		t.Fatalf("want one slow-reply fault, healed: %d faults (%s)", len(res.Faults), res.Summary)
	}
	var thirds [3]int
	third := (seen.end - seen.start) / 3
	for _, at := range seen.sets {
		if i := (at - seen.start) / third; at >= seen.start && i < 3 {
			thirds[i]++
		}
	}
	t.Logf("client %d's SETs that reached node 0 in each third of the %v fault: %v", seen.client, time.Duration(seen.end-seen.start).Round(ms), thirds)
	for i, n := range thirds {
		if n == 0 {
			t.Errorf("no SET of client %d reached node 0 in third %d of the fault: its commands were blocked, not its replies delayed", seen.client, i+1)
		}
	}
}

// A lock that renews its lease in the background rests its client before
// the aimed acquire, and its replies are slowed only once it rests: a hold
// it was in when the fault began never meets the late replies (its
// watchdog, renewing a third of the lease after each late reply, would
// let that lease run out, an overlap the fault did not aim at). The client
// holds for half a lease and hardly thinks, so the fault finds it inside
// a hold: the release that ends it, asked for after the fault began and
// before the client's rest, is answered without the delay.
func TestSlowReplySlowsARenewingClientOnlyOnceItRests(t *testing.T) {
	t.Parallel()
	c := runtest.FaultConfig(t, "etcd-mutex", []string{"slow-reply"})
	c.TTL, c.Hold = time.Second, 500*time.Millisecond // etcd's shortest lease with the ensemble's timings
	c.Clients, c.Think, c.Wait, c.Duration = 2, 10*time.Millisecond, c.TTL, 10*c.TTL
	delay := 850 * time.Millisecond // slow-reply's 0.85 TTL
	for attempt := 1; ; attempt++ {
		// Whether the fault then landed does not matter here: what it did
		// before the client rested is the question.
		res, err := runner.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		events, _, err := history.ReadFile(filepath.Join(c.Out, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		events = runtest.SortedByTime(events)
		before := 0 // the client's lock operations between the fault's start and its rest
		for i, e := range events {
			if e.Kind != history.FaultStart || e.Fault.Name != "slow-reply" {
				continue
			}
			cl := mustAtoi(t, e.Fault.Params["client"])
			if e.Fault.Params["rest"] == "" {
				t.Errorf("fault %d: no rest asked of client %d: %v", e.Fault.ID, cl, e.Fault.Params)
			}
			invoked := map[string]int64{}
			for _, x := range events[i+1:] {
				if x.Client != cl {
					continue
				}
				if x.Kind == history.Stretch && x.Message == "resting" {
					break
				}
				if x.F != history.Acquire && x.F != history.Release {
					continue
				}
				if x.Kind == history.Invoke {
					invoked[x.F] = x.Time
					continue
				}
				if at, ok := invoked[x.F]; ok {
					before++
					if took := time.Duration(x.Time - at); took >= delay {
						t.Errorf("fault %d: client %d's %s, asked for after the fault began and before its rest, took %v: its reply was held back (slowed before the client rested)", e.Fault.ID, cl, x.F, took)
					}
				}
			}
		}
		if before > 0 || attempt == 3 {
			if before == 0 {
				t.Fatalf("in 3 runs no fault found its client inside a hold: nothing shown (%s)", res.Summary)
			}
			return
		}
		t.Logf("no fault found its client inside a hold (%s): running it again", res.Summary)
		c.Out = runtest.RunDir(t)
	}
}
