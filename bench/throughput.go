package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// ThroughputRow compares, for one number of clients, the harness's rate of
// complete lock cycles with Redis's own benchmark.
type ThroughputRow struct {
	Clients int `json:"clients"`
	// Acquire+release pairs per second through the harness (each pair also
	// reads and writes the resource), via the per-link proxies and direct.
	ViaProxies float64 `json:"via_proxies"`
	Direct     float64 `json:"direct"`
	// RedisBenchmark is SET NX PX + DEL pairs per second from
	// redis-benchmark with as many connections.
	RedisBenchmark float64 `json:"redis_benchmark"`
	// Bare is the same cycle (acquire, read, write, release) run by as
	// many goroutines of one process with go-redis and nothing else: no
	// events, no coordinator, no worker processes (workload.BareCycles).
	// Harness direct / Bare is the harness's own share of the cost.
	Bare float64 `json:"bare_go_redis"`
	// The ratios, each the median of the rounds' own ratios (the three
	// figures of a round ran one after the other, so a round's ratio is
	// less at the mercy of a shared machine than a ratio of medians).
	DirectPerRedis float64 `json:"direct_per_redis_benchmark"`
	ViaPerDirect   float64 `json:"via_proxies_per_direct"`
	DirectPerBare  float64 `json:"direct_per_bare"`
	BarePerRedis   float64 `json:"bare_per_redis_benchmark"`
	// Every measurement, in the order taken: round i of each list ran
	// side by side with round i of the others.
	SamplesVia   []float64 `json:"samples_via_proxies,omitempty"`
	Samples      []float64 `json:"samples_direct"`
	SamplesRedis []float64 `json:"samples_redis_benchmark,omitempty"`
	SamplesBare  []float64 `json:"samples_bare_go_redis,omitempty"`
}

// bareRate runs workload.BareCycles with `clients` goroutines for d
// against a fresh lock node and resource node, as the harness's token-lua
// runs do (1000 keys), and returns acquire+release pairs per second.
func bareRate(ctx context.Context, clients int, d time.Duration) (float64, error) {
	local, err := cluster.NewLocal()
	if err != nil {
		return 0, err
	}
	var addrs []string
	for _, name := range []string{"bare-lock", "bare-resource"} {
		n, err := local.StartNode(ctx, cluster.NodeSpec{Name: name})
		if err != nil {
			return 0, err
		}
		defer n.Stop()
		addrs = append(addrs, n.Addr())
	}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	var total atomic.Int64
	errs := make([]error, clients)
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := workload.BareCycles(runCtx, workload.Config{
				Client:       c,
				Owner:        fmt.Sprintf("bare-%d", c),
				Lock:         "token-lua",
				LockAddrs:    []string{addrs[0]},
				ResourceAddr: addrs[1],
				Seed:         1,
				Workload:     workload.Workload{Keys: 1000, TTL: 2 * time.Second, OpTimeout: 2 * time.Second},
			})
			total.Add(n)
			errs[c] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("bare go-redis cycles: %w", err)
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}

// startProfile profiles this process (the coordinator and its proxies)
// into prefix-coordinator.pprof, and asks every worker started meanwhile
// for prefix-client<N>.pprof, until the returned stop.
func startProfile(prefix string) (stop func(), err error) {
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(prefix + "-coordinator.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	os.Setenv(workload.ProfileEnv, prefix)
	return func() {
		os.Unsetenv(workload.ProfileEnv)
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// ThroughputOptions says what Throughput measures.
type ThroughputOptions struct {
	Clients  []int         // client counts, one row each
	Duration time.Duration // of each harness run
	Repeats  int           // measurements per client count; medians are kept
	Out      string        // where the harness runs' folders go
	// Profile, if set, is a folder for CPU profiles of every harness run:
	// the coordinator with its proxies (this process) and each worker
	// (workload.ProfileEnv).
	Profile string
}

// Throughput measures each client count Repeats times, alternating the
// three measurements so that machine noise hits them alike, and keeps
// medians.
func Throughput(ctx context.Context, o ThroughputOptions) ([]ThroughputRow, error) {
	var rows []ThroughputRow
	for _, n := range o.Clients {
		var via, direct, rb, bare []float64
		for i := 0; i < o.Repeats; i++ {
			v, err := harnessRate(ctx, n, o.Duration, false, filepath.Join(o.Out, fmt.Sprintf("tp-%d-%d-proxy", n, i)), o.profile(n, i, "proxy"))
			if err != nil {
				return rows, err
			}
			dr, err := harnessRate(ctx, n, o.Duration, true, filepath.Join(o.Out, fmt.Sprintf("tp-%d-%d-direct", n, i)), o.profile(n, i, "direct"))
			if err != nil {
				return rows, err
			}
			r, err := redisBenchmarkRate(ctx, n)
			if err != nil {
				return rows, err
			}
			b, err := bareRate(ctx, n, o.Duration)
			if err != nil {
				return rows, err
			}
			via, direct, rb, bare = append(via, v), append(direct, dr), append(rb, r), append(bare, b)
			fmt.Fprintf(os.Stderr, "bench: throughput %d clients, round %d: via proxies %.0f, direct %.0f, bare go-redis %.0f, redis-benchmark %.0f pairs/s\n", n, i+1, v, dr, b, r)
		}
		var dpr, vpd, dpb, bpr []float64
		for i := range direct {
			dpr, vpd = append(dpr, ratio(direct[i], rb[i])), append(vpd, ratio(via[i], direct[i]))
			dpb, bpr = append(dpb, ratio(direct[i], bare[i])), append(bpr, ratio(bare[i], rb[i]))
		}
		rows = append(rows, ThroughputRow{Clients: n, ViaProxies: median(via), Direct: median(direct), RedisBenchmark: median(rb), Bare: median(bare),
			DirectPerRedis: median(dpr), ViaPerDirect: median(vpd), DirectPerBare: median(dpb), BarePerRedis: median(bpr),
			SamplesVia: via, Samples: direct, SamplesRedis: rb, SamplesBare: bare})
	}
	return rows, nil
}

func (o ThroughputOptions) profile(clients, round int, mode string) string {
	if o.Profile == "" {
		return ""
	}
	return filepath.Join(o.Profile, fmt.Sprintf("tp-%d-%d-%s", clients, round, mode))
}

func harnessRate(ctx context.Context, clients int, d time.Duration, direct bool, out, profile string) (float64, error) {
	if profile != "" {
		stop, err := startProfile(profile)
		if err != nil {
			return 0, err
		}
		defer stop()
	}
	res, err := runner.Run(ctx, settings.Run{
		Lock:     "token-lua",
		Duration: d,
		Seed:     1,
		Out:      out,
		Direct:   direct,
		Workload: workload.Workload{Clients: clients, Keys: 1000, TTL: 2 * time.Second},
	})
	if err != nil {
		return 0, err
	}
	if res.Verdict != "safe" {
		return 0, fmt.Errorf("throughput run %s was %s: %s", out, res.Verdict, res.Summary)
	}
	return float64(res.Acquire.OK) / (res.DurationMs / 1e3), nil
}

var rpsLine = regexp.MustCompile(`([0-9.]+) requests per second`)

// redisBenchmarkRate runs redis-benchmark against a fresh node: SET NX PX on
// random keys, then DEL on random keys, each with `clients` connections, and
// returns the rate of pairs (the harmonic combination of the two rates).
func redisBenchmarkRate(ctx context.Context, clients int) (float64, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark not found: install it with `apt-get install -y redis-tools`")
	}
	local, err := cluster.NewLocal()
	if err != nil {
		return 0, err
	}
	n, err := local.StartNode(ctx, cluster.NodeSpec{Name: "bench"})
	if err != nil {
		return 0, err
	}
	defer n.Stop()
	host, port, _ := cutAddr(n.Addr())
	requests := strconv.Itoa(max(20000, clients*5000))
	rate := func(args ...string) (float64, error) {
		all := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(clients), "-n", requests, "-r", "100000", "-q"}, args...)
		out, err := exec.CommandContext(ctx, bin, all...).CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("redis-benchmark %v: %v: %s", args, err, out)
		}
		m := rpsLine.FindSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("redis-benchmark %v: no rate in %q", args, out)
		}
		return strconv.ParseFloat(string(m[1]), 64)
	}
	set, err := rate("SET", "lock:__rand_int__", "v", "NX", "PX", "60000")
	if err != nil {
		return 0, err
	}
	del, err := rate("DEL", "lock:__rand_int__")
	if err != nil {
		return 0, err
	}
	return 1 / (1/set + 1/del), nil
}

func cutAddr(addr string) (host, port string, ok bool) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:], true
		}
	}
	return addr, "", false
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
