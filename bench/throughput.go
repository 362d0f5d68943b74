package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/runner"
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
	RedisBenchmark float64   `json:"redis_benchmark"`
	Samples        []float64 `json:"samples_direct"`
}

// Throughput measures each client count `repeats` times, alternating the
// three measurements so that machine noise hits them alike, and keeps
// medians.
func Throughput(ctx context.Context, clientCounts []int, d time.Duration, repeats int, out string) ([]ThroughputRow, error) {
	var rows []ThroughputRow
	for _, n := range clientCounts {
		var via, direct, rb []float64
		for i := 0; i < repeats; i++ {
			v, err := harnessRate(ctx, n, d, false, filepath.Join(out, fmt.Sprintf("tp-%d-%d-proxy", n, i)))
			if err != nil {
				return rows, err
			}
			dr, err := harnessRate(ctx, n, d, true, filepath.Join(out, fmt.Sprintf("tp-%d-%d-direct", n, i)))
			if err != nil {
				return rows, err
			}
			r, err := redisBenchmarkRate(ctx, n)
			if err != nil {
				return rows, err
			}
			via, direct, rb = append(via, v), append(direct, dr), append(rb, r)
		}
		rows = append(rows, ThroughputRow{Clients: n, ViaProxies: median(via), Direct: median(direct), RedisBenchmark: median(rb), Samples: direct})
	}
	return rows, nil
}

func harnessRate(ctx context.Context, clients int, d time.Duration, direct bool, out string) (float64, error) {
	res, err := runner.Run(ctx, runner.Config{
		Lock: "token-lua", Clients: clients, Keys: 1000, TTL: 2 * time.Second,
		Duration: d, Seed: 1, Out: out, Direct: direct,
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
