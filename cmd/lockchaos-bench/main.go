// Command lockchaos-bench measures the harness and the checker (make bench)
// and writes results/bench/<date>.json and .md. See bench/.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/bench"
	"github.com/lockchaos/lockchaos/internal/lockargs"
	"github.com/lockchaos/lockchaos/workload"
)

func main() {
	if os.Getenv(workload.RoleEnv) == "worker" {
		os.Exit(workload.Main())
	}
	if spec := os.Getenv(bench.ScaleChildEnv); spec != "" {
		if err := bench.RunScaleChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	out := flag.String("out", "results/bench", "where to write <date>.json and <date>.md")
	bin := flag.String("lockchaos", "bin/lockchaos", "the lockchaos binary, for the matrix figures")
	repeats := flag.Int("repeats", 3, "throughput measurements per client count (medians are kept)")
	duration := flag.Duration("duration", 3*time.Second, "length of each throughput run")
	quick := flag.Bool("quick", false, "skip the full matrix and the 1M-operation checker benchmarks")
	only := flag.String("only", "", "run only these steps, comma-separated: throughput, checker, scale, adapter, live, soak, matrix")
	soak := flag.Duration("soak", 3*time.Minute, "length of the soak step's run (the README quotes one of 1h)")
	clients := flag.String("clients", "1,4,16", "client counts of the throughput step")
	profile := flag.String("cpuprofile", "", "write CPU profiles of the throughput runs here: the coordinator (with its proxies) and every worker, one file each")
	var lf lockargs.Flags
	lf.Bind(flag.CommandLine, false) // the adapter step runs each lock with its defaults
	flag.Parse()
	if _, _, err := lf.Load(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	counts, err := parseCounts(*clients)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: --clients:", err)
		os.Exit(2)
	}
	want := func(step string) bool {
		if *only == "" {
			return true
		}
		for _, s := range strings.Split(*only, ",") {
			if strings.TrimSpace(s) == step {
				return true
			}
		}
		return false
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	date := time.Now().UTC().Format("2006-01-02T150405Z")
	work := filepath.Join(*out, "runs-"+date)
	r := bench.Report{Date: date, Host: host(), Errors: map[string]string{}}
	step := func(name string, f func() error) {
		if !want(strings.Fields(name)[0]) {
			return
		}
		fmt.Fprintf(os.Stderr, "bench: %s …\n", name)
		start := time.Now()
		if err := f(); err != nil {
			r.Errors[name] = err.Error()
			fmt.Fprintf(os.Stderr, "bench: %s failed: %v\n", name, err)
		}
		fmt.Fprintf(os.Stderr, "bench: %s took %s\n", name, time.Since(start).Round(time.Second))
	}

	step("throughput", func() (err error) {
		r.Throughput, err = bench.Throughput(ctx, bench.ThroughputOptions{Clients: counts, Duration: *duration, Repeats: *repeats, Out: work, Profile: *profile})
		return err
	})
	step("checker", func() error {
		pattern := "."
		if *quick {
			pattern = "/ops=(10000|100000)/|Waiters"
		}
		cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", pattern, "-benchmem", "./checker/")
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, os.Stderr
		err := cmd.Run()
		os.MkdirAll(work, 0o755)
		os.WriteFile(filepath.Join(work, "checker-bench.txt"), buf.Bytes(), 0o644) // for benchstat
		r.Checker = bench.ParseGoBench(&buf)
		return err
	})
	step("scale (the checker on synthetic histories, one process each)", func() error {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		ops := 10_000_000
		if *quick {
			ops = 1_000_000
		}
		r.Scale, err = bench.Scale(self, []bench.ScaleRow{
			{Mode: "stream", Ops: ops, Keys: 100, Clients: 16},
			{Mode: "stream", Ops: 1_000_000, Keys: 100, Clients: 16},
			{Mode: "memory", Ops: 1_000_000, Keys: 100, Clients: 16},
		})
		return err
	})
	step("adapter (what the lock protocol adds: each adapter lock with a bench command, through lockchaos and in its own process)", func() error {
		var errs []error
		for _, lock := range bench.Adapters() {
			row, err := bench.Adapter(ctx, lock, filepath.Join(work, "adapter"), *repeats)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			r.Adapter = append(r.Adapter, row)
		}
		return errors.Join(errs...)
	})
	step("live (how soon a violation is reported while the run goes on)", func() (err error) {
		r.Live, err = bench.Live(ctx, *bin, filepath.Join(work, "live"), []string{"pause-client", "clock-jump", "crash-restart", "failover"})
		return err
	})
	step("soak", func() error {
		os.MkdirAll(work, 0o755)
		row, err := bench.Soak(ctx, *bin, filepath.Join(work, "soak"), *soak)
		r.Soak = append(r.Soak, row)
		return err
	})
	step("matrix --quick", func() error {
		dir := filepath.Join(work, "chaos-quick")
		row, err := bench.Matrix(ctx, *bin, dir, "--quick")
		r.Matrix = append(r.Matrix, row)
		if err != nil {
			return err
		}
		r.Detection, err = bench.Detection(dir)
		return err
	})
	// The same catalogue four at a time, as every grid ran before runs
	// were weighed (grid.Pool): what running light runs eight at once on
	// idle cores saves.
	step("matrix --quick --parallel 4", func() error {
		row, err := bench.Matrix(ctx, *bin, filepath.Join(work, "chaos-quick-4"), "--quick", "--parallel", "4")
		r.Matrix = append(r.Matrix, row)
		return err
	})
	if !*quick {
		step("matrix", func() error {
			dir := filepath.Join(work, "chaos")
			row, err := bench.Matrix(ctx, *bin, dir)
			r.Matrix = append(r.Matrix, row)
			if err != nil {
				return err
			}
			if d, err := bench.Detection(dir); err == nil && len(d) > len(r.Detection) {
				r.Detection = d
			}
			return err
		})
	}
	r.Notes = append(r.Notes,
		"Harness pairs include a resource read and write inside each hold (4 round trips per cycle, plus the coordinator's history writes); redis-benchmark pipelines nothing here but sends bare commands.",
		"Bare go-redis is the same cycle (acquire, read, write, release with token-lua) run by as many goroutines of one process with nothing recorded: what Go and go-redis make of it here, the ceiling for the harness; direct / bare is what the harness itself costs (a process per client, the events, the coordinator).",
		"Raw Go benchmark output is kept beside the report (checker-bench.txt), comparable with benchstat.")
	md, err := bench.Write(*out, r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Print(md)
	if len(r.Errors) > 0 {
		os.Exit(1)
	}
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want client counts like 1,4,16", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func host() bench.Host {
	h := bench.Host{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		f := strings.Fields(string(out))
		if len(f) >= 3 {
			h.Redis = "redis " + strings.TrimPrefix(f[2], "v=")
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	return h
}
