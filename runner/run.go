package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/ports"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
	"github.com/redis/go-redis/v9"
)

// Run performs one run and returns the checker's result, also written to
// Out/result.json beside Out/history.jsonl. An error means the run could not
// be set up or its history could not be written; a settings.UsageError means the
// configuration is wrong. Cancelling ctx (SIGINT, SIGTERM) stops the run
// early but in order: faults healed, workers stopped, nodes shut down, and
// the partial history checked (a violation in it is real; otherwise the
// verdict is inconclusive).
func Run(ctx context.Context, cfg settings.Run) (checker.Result, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return checker.Result{}, err
	}
	rs, err := resolve(cfg)
	if err != nil {
		return checker.Result{}, err
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = rs.lock.Nodes
	}
	claim, err := claimOut(cfg.Out, cfg.Force)
	if err != nil {
		return checker.Result{}, err
	}
	defer claim.Release() // the run's files, result.json too, are written by now
	if err := os.MkdirAll(filepath.Join(cfg.Out, "workers"), 0o755); err != nil {
		return checker.Result{}, fmt.Errorf("create output directory %s: %w", cfg.Out, err)
	}
	if err := rundir.WriteJSON(filepath.Join(cfg.Out, rundir.ConfigFile), cfg); err != nil {
		return checker.Result{}, err
	}
	hist, err := history.Create(filepath.Join(cfg.Out, "history.jsonl"))
	if err != nil {
		return checker.Result{}, err
	}
	// A history that cannot be written (a full disk) ends the run at once,
	// as an interruption does: what follows could not be evidence.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hist.OnError(func(error) { cancel() })
	// The nonce keeps lock owners of different runs apart (a reentrant lock
	// would let one run's client re-enter another's hold of the same name).
	var prog *progress
	if cfg.Progress != nil {
		prog = newProgress(cfg.Progress)
		cfg.Progress = prog
	}
	r := &run{cfg: cfg, prog: prog, hist: hist, trk: newTracker(), violated: make(chan struct{}), nonce: uint32(time.Now().UnixNano()) ^ uint32(os.Getpid()),
		rng: rand.New(&lockedSource{src: rand.NewPCG(uint64(cfg.Seed), 0x6e656d)}), lease: rs.lease, shape: shape(cfg, rs.lockNodes, rs.lock)}
	r.live = newLiveCheck(cfg.Clients, history.Now(), r.seenLive)
	runErr := r.execute(ctx, rs)
	if cerr := hist.Close(); cerr != nil {
		runErr = errors.Join(runErr, cerr)
	}
	if !r.begun {
		// The workload never started: there is no history worth checking.
		// A usage error found only now (a lock's preflight) leaves nothing
		// behind either, so that the corrected run may use the same --out.
		var ue settings.UsageError
		if errors.As(runErr, &ue) {
			_ = rundir.Clear(cfg.Out)
		}
		return checker.Result{}, runErr
	}
	res, cerr := checker.CheckDir(cfg.Out, cfg.CheckTimeout)
	return res, errors.Join(runErr, cerr)
}

// resolved is a run's configuration looked up: the lock with its options
// and what they make of it, and the nemeses with their plans.
type resolved struct {
	lock locks.Spec
	// probe is the lock built without nodes (locks.Spec.Probe): what it
	// can do.
	probe locks.Locker
	// lockUsed are the lock's option values, defaults included, for the
	// record.
	lockUsed map[string]string
	// lease is the lease the lock really uses (locks.Leaser), nodeTimeout
	// its per-node timeout (locks.NodeTimeouter), 0 when it has none.
	lease, nodeTimeout time.Duration
	nemeses            []nemesis.Scheduled
	// lockNodes is how many lock nodes the clients talk to: --nodes (or
	// the lock's default), but one for a store that serves from a primary.
	lockNodes int
	store     cluster.Store
}

// Validate checks cfg as Run would, without starting anything: names,
// options and ranges. The error is a settings.UsageError saying what to fix, for
// instance that a nemesis does not apply to this lock or topology.
func Validate(cfg settings.Run) error {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return err
	}
	_, err = resolve(cfg)
	return err
}

// resolve looks up the lock and the nemeses and validates their options
// before anything starts.
func resolve(cfg settings.Run) (resolved, error) {
	var rs resolved
	spec, err := cfg.LockSpec()
	if err != nil {
		return rs, settings.UsageError{Err: err}
	}
	rs.lock = spec
	l, used, err := spec.Probe(cfg.LockOptions, cfg.TTL)
	if err != nil {
		return rs, settings.UsageError{Err: err}
	}
	rs.probe, rs.lockUsed = l, used
	rs.lock = spec.For(used) // an adapter's capabilities for its options' values
	rs.lease = cfg.TTL
	if le, ok := l.(locks.Leaser); ok {
		rs.lease = le.Lease()
	}
	if nt, ok := l.(locks.NodeTimeouter); ok {
		rs.nodeTimeout = nt.NodeTimeout()
	}
	nodes := cfg.Nodes
	if nodes == 0 {
		nodes = spec.Nodes
	}
	store, err := cluster.LookupStore(spec.Store)
	if err != nil {
		if spec.Adapter != nil {
			err = spec.Adapter.StoreError(err)
		}
		return rs, settings.UsageError{Err: fmt.Errorf("lock %s: %w", spec.Name, err)}
	}
	if err := cfg.CheckStore(spec); err != nil {
		return rs, err
	}
	nodes = store.LockNodes(nodes)
	rs.lockNodes = nodes
	rs.store = store
	seen := map[string]bool{}
	for _, name := range cfg.Nemeses {
		if seen[name] {
			return rs, settings.Usage("nemesis %s is given twice", name)
		}
		seen[name] = true
		ns, err := nemesis.Lookup(name)
		if err != nil {
			return rs, settings.UsageError{Err: err}
		}
		b, err := ns.Build(cfg.NemesisOptions[name], cfg.TTL)
		if err != nil {
			return rs, settings.UsageError{Err: err}
		}
		if a, ok := b.Nemesis.(nemesis.Applier); ok {
			if err := a.Applies(shape(cfg, nodes, rs.lock)); err != nil {
				return rs, settings.UsageError{Err: fmt.Errorf("nemesis %s does not apply to this run: %w", name, err)}
			}
		}
		plan, err := nemesis.ParsePlan(b.Schedule, cfg.TTL, cfg.Seed, name)
		if err != nil {
			return rs, settings.UsageError{Err: err}
		}
		if cfg.Replay != nil {
			steps, ok := cfg.Replay.Steps(name)
			if !ok {
				return rs, settings.Usage("--replay: the replayed schedule has no steps of nemesis %s", name)
			}
			plan.Replay = steps
		}
		rs.nemeses = append(rs.nemeses, nemesis.Scheduled{Name: name, Action: ns.Action, Nemesis: b.Nemesis, Plan: plan})
	}
	for name := range cfg.NemesisOptions {
		if name != spec.Name && !seen[name] {
			return rs, settings.Usage("--opt %s.…: %s is neither the lock nor a nemesis of this run", name, name)
		}
	}
	return rs, nil
}

type run struct {
	nonce uint32
	// workloadEnded is when the workers were asked to stop (history
	// time), 0 before: a fault that outlasts it did not run its course.
	// Stored after stoppedEarly is final.
	workloadEnded atomic.Int64
	cfg           settings.Run
	prog          *progress        // cfg.Progress, nil for none
	lease         time.Duration    // the lock's real lease (resolved.lease)
	shape         nemesis.Topology // the run's shape, as the nemeses see it
	hist          *history.Writer
	// live checks the history as it is recorded; violated is closed when
	// it sees the first overlap.
	live     *liveCheck
	violated chan struct{}
	// stoppedEarly: the run ended at the first violation (StopOnViolation).
	stoppedEarly bool
	startedAt    int64 // the run-start event's time
	trk          *tracker
	rng          *rand.Rand
	proxies      *proxy.Proxies
	workers      []*workerProc
	started      int            // workers started
	begun        bool           // the run-start is recorded: the workload began
	nodes        []cluster.Node // every node, the resource last
	// topo: the store's ensemble (for Redis, the replication groups,
	// whose primaries are the lock nodes, the sentinels and the clocks).
	topo topology
	// sentinelViews are each client's way to follow Sentinel itself, in a
	// Redis run with sentinels (sentinelView).
	sentinelViews []*locks.Sentinels
	// clientClocks are each client's clock shim control, when a nemesis
	// moves the clients' clocks (nemesis.Spec.ClientClock) and the lock
	// runs in an adapter; nil otherwise.
	clientClocks []*cluster.Clock
	clientShim   string // the clock shim library the adapters load then
}

func (r *run) record(e history.Event) {
	r.hist.Append(e)
	r.live.add(e)
}

// seenLive is called once, with the first overlap the live check saw.
func (r *run) seenLive(o checker.Overlap) {
	if r.cfg.Progress != nil {
		lag := float64(history.Now()-r.startedAt)/1e6 - o.StartMs
		fmt.Fprintf(r.cfg.Progress, "  violation seen live: clients %d and %d both held %s from t=%s, seen %s later (the check of the whole history decides)\n",
			o.Clients[0], o.Clients[1], o.Key, checker.Seconds(o.StartMs), checker.Millis(lag))
	}
	close(r.violated)
}

func (r *run) execute(ctx context.Context, rs resolved) (err error) {
	var problems []string // recorded in run-end: each makes the evidence doubtful
	// The nodes' ports stay reserved until the run ends (deferred first,
	// so given back after every node has stopped): a node a nemesis
	// killed comes back on its own port, which no other run can pick
	// while it is down.
	lease := ports.NewLease()
	defer lease.Release()
	ctx = ports.WithLease(ctx, lease)
	backend, err := cluster.Open(r.cfg.Backend, cluster.BackendOptions{Image: r.cfg.Image})
	if err != nil {
		return err
	}
	defer backend.Close()
	defer func() {
		for _, n := range r.nodes {
			if serr := errors.Join(r.keepLog(n.Log(), "nodes", n.Name()), n.Stop()); serr != nil {
				err = errors.Join(err, fmt.Errorf("stop node %s: %w", n.Name(), serr))
			}
		}
	}()
	defer func() {
		if serr := r.stopTopology(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	r.proxies = proxy.New()
	defer r.proxies.Close()
	addrs, resource, err := r.startTopology(ctx, backend, rs)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while starting the nodes, before any operation was recorded (%w)", err)
		}
		return err
	}
	if err := r.calibrate(ctx, addrs, rs); err != nil {
		return err
	}
	if err := r.preflight(ctx, rs); err != nil {
		return err
	}

	defer r.stopWorkers() // on every path: no worker outlives the run
	if err := r.startWorkers(rs, addrs, resource); err != nil {
		return err
	}
	// The run's clock starts when every worker can start: a worker process
	// takes a while to start on a busy machine, and a run that counted from
	// its launch would lose part of its duration.
	if err := r.awaitReady(ctx); err != nil {
		return err
	}

	r.recordStart(ctx, rs)
	for _, w := range r.workers {
		if err := w.send(workload.CmdGo); err != nil {
			problems = append(problems, err.Error())
		}
	}
	began := history.Now()
	stalls := make(chan struct{})
	go workload.WatchStalls(workload.StallThreshold(r.cfg.TTL), stalls, r.record)
	watched := serverTargets(r.lockServers())
	if rs.lock.Adapter != nil {
		watched = append(watched, adapterTargets(r.workers)...)
	}
	go watchRunQueue(watched, workload.StallThreshold(r.cfg.TTL), stalls, r.record)
	defer close(stalls)

	stopNemeses := r.startNemeses(ctx, rs)
	defer stopNemeses()

	r.wait(ctx)
	if r.prog != nil {
		r.prog.end()
	}
	stopped := history.Now()
	r.workloadEnded.Store(stopped)
	interrupted := ctx.Err() != nil
	// The workers stop before the faults heal: a fault cut short while
	// clients still worked would be a fault of its own (a delayed restart
	// that restarts early forgets a live lease).
	if stragglers := r.stopWorkers(); len(stragglers) > 0 {
		problems = append(problems, fmt.Sprintf("workers %v did not stop in time and were killed", stragglers))
	}
	problems = append(problems, stopNemeses()...)
	for _, w := range r.workers {
		w.mu.Lock()
		if w.lostEvents != "" {
			problems = append(problems, w.lostEvents)
		}
		w.mu.Unlock()
	}
	r.probe(rs.lock.KeyPrefix, resource)
	if interrupted {
		problems = append(problems, "run interrupted before its duration ended")
	}
	if herr := r.hist.Err(); herr != nil {
		problems = append(problems, herr.Error())
	}
	end := history.Event{Time: history.Now(), Kind: history.RunEnd, Client: history.NoClient, Error: strings.Join(problems, "; "), WorkloadNs: stopped - began}
	if r.stoppedEarly {
		end.Message = "stopped at the first violation (stop-on-violation)"
	}
	r.record(end)
	return nil
}

// startWorkers starts a worker process for each client, each given its
// links to the lock nodes (addrs[client]) and the resource; an adapter
// lock's clients run under the clock shim when a nemesis steps their clock.
func (r *run) startWorkers(rs resolved, addrs [][]string, resource cluster.Node) error {
	argv := r.cfg.WorkerCommand
	if len(argv) == 0 {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this executable to start workers: %w", err)
		}
		argv = []string{self, "worker"}
	}
	shim, err := r.clientClockShim(rs)
	if err != nil {
		return err
	}
	r.clientShim = shim
	for c := 0; c < r.cfg.Clients; c++ {
		wc := workload.Config{
			Workload: r.cfg.Workload, Client: c, Owner: fmt.Sprintf("client-%d-%x-%x", c, r.cfg.Seed, r.nonce), Lock: rs.lock.Name, Options: r.cfg.LockOptions,
			LockAddrs: addrs[c], ResourceAddr: resource.Addr(), Seed: r.cfg.Seed, Adapter: rs.lock.Adapter,
		}
		if init := rs.store.AdapterInit; init != nil && rs.lock.Adapter != nil {
			wc.StoreInit = init(addrs[c])
		}
		if c < len(r.sentinelViews) {
			wc.Sentinels = r.sentinelViews[c]
		}
		if rs.lock.Adapter != nil {
			wc.AdapterLog = filepath.Join(r.cfg.Out, "workers", fmt.Sprintf("client-%d.adapter.log", c))
		}
		if shim != "" {
			clock, err := cluster.NewClock(filepath.Join(r.cfg.Out, "workers", fmt.Sprintf("client-%d.clock", c)))
			if err != nil {
				return err
			}
			r.clientClocks = append(r.clientClocks, clock)
			wc.AdapterEnv = []string{"LD_PRELOAD=" + shim, cluster.ClockFileEnv + "=" + clock.Path()}
		}
		w, err := startWorker(argv, wc, filepath.Join(r.cfg.Out, "workers", fmt.Sprintf("client-%d.log", c)), r.record, r.trk)
		if err != nil {
			return err
		}
		r.workers = append(r.workers, w)
		r.started++
	}
	return nil
}

// recordStart records the run-start event: what the checker reads of the
// run's settings, and the lock nodes' roles. The run's clock starts here.
func (r *run) recordStart(ctx context.Context, rs resolved) {
	nemNames := make([]string, len(rs.nemeses))
	for i, n := range rs.nemeses {
		nemNames[i] = n.Name
	}
	options := map[string]string{}
	for k, v := range rs.lockUsed {
		options[rs.lock.Name+"."+k] = v
	}
	r.startedAt = history.Now()
	r.record(history.Event{Time: r.startedAt, Kind: history.RunStart, Client: history.NoClient, Run: &history.RunInfo{
		Lock: rs.lock.Name, Nemesis: nemNames, Seed: r.cfg.Seed, Clients: r.cfg.Clients,
		TTLms: r.cfg.TTL.Milliseconds(), LeaseMs: rs.lease.Milliseconds(), Leaseless: rs.lock.Leaseless, KeepsAlive: rs.lock.KeepsAlive, BlindRelease: rs.lock.BlindRelease,
		Renew: r.cfg.Renew, Options: options, NodeRoles: r.nodeRoles(ctx),
	}})
	r.begun = true
	if r.cfg.Progress != nil && !rs.lock.Leaseless && rs.lease != r.cfg.TTL {
		fmt.Fprintf(r.cfg.Progress, "  the lease in force is %v, not the --ttl of %v (the lock or its store sets it): spans given in ttl are sized against %v\n",
			rs.lease, r.cfg.TTL, r.cfg.TTL)
	}
}

// startNemeses runs the nemeses' schedule beside the workload, each event
// recorded and each fault executed logged. The function it returns stops
// them (at most once) and says what went wrong: the schedule's error, the
// executed schedule's file.
func (r *run) startNemeses(ctx context.Context, rs resolved) (stop func() []string) {
	nemCtx, stopNemeses := context.WithCancel(ctx)
	nemDone := make(chan error, 1)
	var executed scheduleLog
	go func() {
		shape := nemesis.Shape{Clients: r.cfg.Clients, Keys: r.cfg.Keys, LockNodes: rs.lockNodes, KeyName: workload.KeyName}
		nemDone <- nemesis.Schedule(nemCtx, &env{r: r}, rs.nemeses, shape, r.cfg.FaultInterval, func(e history.Event) {
			r.trk.observe(e)
			r.record(e)
		}, func(x nemesis.Executed) {
			executed.add(x)
			if x.Missed != "" {
				// The checker says why a run whose nemeses only missed
				// tested nothing: the history is its only source.
				r.record(history.Event{Time: history.Now(), Kind: history.FaultMissed, Client: history.NoClient,
					Fault: &history.Fault{Name: x.Nemesis, Step: x.N}, Message: x.Missed})
			}
		})
	}()
	var problems []string
	var once sync.Once
	return func() []string {
		once.Do(func() {
			stopNemeses()
			if nerr := <-nemDone; nerr != nil {
				problems = append(problems, nerr.Error())
			}
			if werr := executed.write(filepath.Join(r.cfg.Out, rundir.ScheduleFile), rs.nemeses); werr != nil {
				problems = append(problems, werr.Error())
			}
		})
		return problems
	}
}

// awaitReady waits until every worker says it can start, or one exits.
func (r *run) awaitReady(ctx context.Context) error {
	for _, w := range r.workers {
		select {
		case <-w.ready:
		case <-w.done:
			return w.notReady(filepath.Join(r.cfg.Out, "workers", fmt.Sprintf("client-%d.log", w.client)))
		case <-ctx.Done():
			return fmt.Errorf("interrupted while the workers started, before any operation was recorded (%w)", ctx.Err())
		}
	}
	return nil
}

// wait lets the workload run for the configured duration, printing progress
// (a status line kept up to date on a terminal, thinning out in a log).
func (r *run) wait(ctx context.Context) {
	start := time.Now()
	deadline := start.Add(r.cfg.Duration)
	violated := r.violated
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			return
		case <-violated:
			t.Stop()
			violated = nil // reported once
			// The overlapping holds finish their writes first, so that
			// the damage they do is in the history too.
			if grace := 2*r.cfg.TTL + r.cfg.Hold; r.cfg.StopOnViolation && time.Until(deadline) > grace {
				deadline = time.Now().Add(grace)
				r.stoppedEarly = true
				if r.cfg.Progress != nil {
					fmt.Fprintf(r.cfg.Progress, "  stopping %s after the first violation (--stop-on-violation)\n", grace)
				}
			}
		case <-tick.C:
			t.Stop()
			left = time.Until(deadline)
			if r.cfg.Progress != nil {
				r.trk.mu.Lock()
				s := r.trk.stats
				r.trk.mu.Unlock()
				elapsed := time.Since(start)
				seen := ""
				if o := r.live.First(); o != nil {
					seen = fmt.Sprintf("  violation at t=%s", checker.Seconds(o.StartMs))
				}
				r.prog.tick(elapsed, fmt.Sprintf("  %s/%s  acquires=%d holds=%d faults=%d stalls=%d%s",
					elapsed.Round(time.Second), r.cfg.Duration, s.acquires, s.holds, s.faults, s.stalls, seen))
			}
		}
	}
}

// stopWorkers asks every worker to stop, resumes any that a fault left
// paused, and kills those that do not exit within a grace period. It returns
// the clients it had to kill. Calling it again is harmless.
func (r *run) stopWorkers() []int {
	for _, w := range r.workers {
		_ = w.signal(syscall.SIGCONT)
		w.stop()
	}
	grace := 2*r.cfg.TTL + r.cfg.Hold + r.cfg.Wait + 3*r.cfg.OpTimeout + 5*time.Second
	deadline := time.After(grace)
	var killed []int
	for _, w := range r.workers {
		select {
		case <-w.done:
		case <-deadline:
			w.kill("did not stop within " + grace.String())
			killed = append(killed, w.client)
			<-w.done
		}
	}
	return killed
}

// probe records the final state: each lock key's PTTL on every lock node
// that can say (a Redis node: a key with no expiry is deadlocked; at
// prefix+key, where the lock keeps it) and each resource counter.
func (r *run) probe(prefix string, resource cluster.Node) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var lockNodes []cluster.Node
	if r.topo.replicated() != nil {
		lockNodes = r.currentLockNodes()
	}
	res := redis.NewClient(&redis.Options{Addr: resource.Addr(), MaxRetries: -1, DisableIdentity: true, Protocol: 2})
	defer res.Close()
	for k := 0; k < r.cfg.Keys; k++ {
		key := workload.KeyName(k)
		var pttls []int64
		ok := len(lockNodes) > 0
		for _, n := range lockNodes {
			ms, err := cluster.LeaseTTL(ctx, n.Addr(), prefix+key, "")
			if err != nil {
				ok = false
				break
			}
			pttls = append(pttls, ms)
		}
		if ok {
			r.record(history.Event{Time: history.Now(), Kind: history.Probe, Client: history.NoClient, F: "lock", Key: key, PTTL: pttls})
		}
		v, err := workload.Resource{}.ReadWith(ctx, res, key)
		if err == nil {
			r.record(history.Event{Time: history.Now(), Kind: history.Probe, Client: history.NoClient, F: "resource", Key: key, Value: history.Int64(v)})
		}
	}
}

// lockedSource lets the nemeses, each in its own goroutine, share the run's
// seeded random source.
type lockedSource struct {
	mu  sync.Mutex
	src rand.Source
}

func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Uint64()
}

// nodeRoles names each lock node and its role as the run begins, in the
// store's own words: a Redis primary (and its replicas), etcd's and
// ZooKeeper's leader and followers, PostgreSQL's primary.
func (r *run) nodeRoles(ctx context.Context) []string {
	var out []string
	if e, ok := r.topo.ensemble.(cluster.Elected); ok {
		members := e.Members()
		leader := -1
		if l, err := e.Leader(ctx); err == nil && l >= 0 && l < len(members) {
			leader = l
		}
		for _, n := range e.Serving() {
			role := "follower"
			switch {
			case r.shape.Store == cluster.StorePostgres:
				role = "primary"
			case leader >= 0 && members[leader] == n:
				role = "leader"
			case leader < 0:
				role = "member"
			}
			out = append(out, n.Name()+" "+role)
		}
		return out
	}
	for _, n := range r.currentLockNodes() {
		role := "primary"
		if r.cfg.Replicas > 0 {
			role += fmt.Sprintf(" with %d replicas", r.cfg.Replicas)
		}
		out = append(out, n.Name()+" "+role)
	}
	return out
}

// clientClockShim is the clock shim for the clients' adapters when one of
// the run's nemeses moves a client's clock (nemesis.Spec.ClientClock), ""
// when none does or the lock runs inside the worker (Go: its clock is out
// of the shim's reach, and the nemesis does not apply).
func (r *run) clientClockShim(rs resolved) (string, error) {
	if rs.lock.Adapter == nil {
		return "", nil
	}
	for _, n := range rs.nemeses {
		if s, err := nemesis.Lookup(n.Name); err == nil && s.ClientClock {
			return cluster.ClockShim()
		}
	}
	return "", nil
}
