// Package bench measures lockchaos itself: how many lock operations the
// harness drives compared with Redis's own benchmark on the same machine in
// the same run, how fast the checker is, how soon a known failure mode is
// detected, and how long the matrix takes. Figures are measured side by side
// and written as JSON and a Markdown table; nothing here asserts a timing.
package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Report is one `make bench` run.
type Report struct {
	Date       string            `json:"date"`
	Host       Host              `json:"host"`
	Throughput []ThroughputRow   `json:"throughput"`
	Checker    []CheckerRow      `json:"checker"`
	Scale      []ScaleRow        `json:"scale,omitempty"`
	Live       []LiveRow         `json:"live,omitempty"`
	Soak       []SoakRow         `json:"soak,omitempty"`
	Adapter    []AdapterRow      `json:"adapter,omitempty"`
	Detection  []DetectionRow    `json:"detection"`
	Matrix     []MatrixRow       `json:"matrix"`
	Notes      []string          `json:"notes"`
	Errors     map[string]string `json:"errors,omitempty"`
}

// Host says where the figures were taken.
type Host struct {
	CPUs   int    `json:"cpus"`
	Go     string `json:"go"`
	Redis  string `json:"redis"`
	Kernel string `json:"kernel"`
}

// Write stores r as dir/<date>.json and dir/<date>.md and returns the
// Markdown.
func Write(dir string, r Report) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	base := filepath.Join(dir, r.Date)
	if err := os.WriteFile(base+".json", append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	md := Markdown(r)
	return md, os.WriteFile(base+".md", []byte(md), 0o644)
}

// Markdown renders r as the tables docs/performance.md shows.
func Markdown(r Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %d CPUs, %s, %s.\n\n", r.Date, r.Host.CPUs, r.Host.Go, r.Host.Redis)
	if len(r.Throughput) > 0 {
		b.WriteString("**Throughput** (acquire+release pairs/s, no faults, 1000 keys; median of the runs; redis-benchmark: SET NX PX + DEL pairs with the same connections, same machine, same run; each ratio is the median of the rounds' own ratios, a round measuring the three one after the other)\n\n")
		b.WriteString("| clients | harness via proxies | harness direct | bare go-redis | redis-benchmark | direct / redis-benchmark | proxies / direct | direct / bare | bare / redis-benchmark |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, t := range r.Throughput {
			dpr, vpd := t.DirectPerRedis, t.ViaPerDirect
			if dpr == 0 && vpd == 0 { // a report from before the rounds' ratios were kept
				dpr, vpd = ratio(t.Direct, t.RedisBenchmark), ratio(t.ViaProxies, t.Direct)
			}
			fmt.Fprintf(&b, "| %d | %.0f | %.0f | %s | %.0f | %.3f | %.2f | %s | %s |\n", t.Clients, t.ViaProxies, t.Direct, orDash(t.Bare, "%.0f"), t.RedisBenchmark, dpr, vpd, orDash(t.DirectPerBare, "%.2f"), orDash(t.BarePerRedis, "%.3f"))
		}
		b.WriteString("\n")
	}
	if len(r.Checker) > 0 {
		b.WriteString("**Checker** (safe simulated histories, 16 clients; Go benchmarks)\n\n")
		b.WriteString("| benchmark | ops | keys | holds | time | memory |\n|---|---|---|---|---|---|\n")
		for _, c := range r.Checker {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", c.Name, c.Ops, c.Keys, c.Holds, dur(c.NsPerOp), mem(c.BytesPerOp))
		}
		b.WriteString("\n")
	}
	if len(r.Scale) > 0 {
		b.WriteString("**Checker at scale** (synthetic safe histories, 16 clients, 100 keys; each in a process of its own: its peak RSS is the check's; stream: the streaming checker fed the history as it is made, never held, as `lockchaos check` feeds it from the file; memory: the whole history held and then checked, as the checker worked before; the targets: < 1 GiB at ≥ 1M operations/s on 10M operations)\n\n")
		b.WriteString("| mode | operations | time | operations/s | peak RSS | verdict |\n|---|---|---|---|---|---|\n")
		for _, x := range r.Scale {
			fmt.Fprintf(&b, "| %s | %d | %.1f s | %.0f | %.0f MiB | %s |\n", x.Mode, x.Ops, x.Seconds, x.OpsPerSec, x.PeakRSSMiB, x.Verdict)
		}
		b.WriteString("\n")
	}
	if len(r.Live) > 0 {
		b.WriteString("**Live detection** (token-lua, `--stop-on-violation`: from the start of the first overlap to its report on the progress line; the target: within 1 TTL)\n\n")
		b.WriteString("| nemesis | TTL | reported after | in TTLs |\n|---|---|---|---|\n")
		for _, l := range r.Live {
			lag, per := "not seen", "–"
			if l.LagMs != nil {
				lag, per = fmt.Sprintf("%.1f ms", *l.LagMs), fmt.Sprintf("%.3f", *l.LagTTL)
			}
			fmt.Fprintf(&b, "| %s | %.0f ms | %s | %s |\n", l.Nemesis, l.TTLms, lag, per)
		}
		b.WriteString("\n")
	}
	if len(r.Adapter) > 0 {
		b.WriteString("**The lock protocol's cost** (each adapter lock's acquire through lockchaos — one client, straight to its nodes, the history recorded — beside the same library timed in its own process by its manifest's bench command, round by round, medians of the rounds; holds/s through lockchaos include the worker's read and write of the resource, in process an acquire and a release; the target: ≤ 0.3 ms added at p50)\n\n")
		b.WriteString("| lock | library | acquire p50 via / in-process | added p50 | acquire p99 via / in-process | holds/s via / in-process | p50 rounds (via / in-process, ms) |\n|---|---|---|---|---|---|---|\n")
		for _, a := range r.Adapter {
			fmt.Fprintf(&b, "| `%s` | %s %s (%s) | %.3f / %.3f ms | %.3f ms | %.3f / %.3f ms | %.0f / %.0f | %v / %v |\n", a.Lock, a.Library, a.Version, a.Language,
				a.ViaLockchaosP50ms, a.InProcessP50ms, a.AddedP50ms, a.ViaLockchaosP99ms, a.InProcessP99ms, a.ViaLockchaosHoldsPerS, a.InProcessHoldsPerS, a.SamplesVia, a.SamplesIn)
		}
		b.WriteString("\n")
	}
	if len(r.Soak) > 0 {
		b.WriteString("**Soak** (the coordinator's resident memory while a long run goes on at full rate, after its first minute; then `lockchaos check` of its history; the targets: max/min ≤ 1.2, check ≤ 1/10 of the run)\n\n")
		b.WriteString("| run | length | history | coordinator RSS min–max | max/min | check | check/run | check's peak RSS | verdict |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, x := range r.Soak {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %.0f–%.0f MiB | %.2f | %.0f s | %.3f | %.0f MiB | %s |\n", x.Command,
				time.Duration(x.Seconds*float64(time.Second)), mem(float64(x.HistoryBytes)), x.RSSMinMiB, x.RSSMaxMiB, x.Flatness, x.CheckSeconds, x.CheckPerRun, x.CheckRSSMiB, x.Verdict)
			if x.PerHour != "" {
				fmt.Fprintf(&b, "\n%s\n", x.PerHour)
			}
		}
		b.WriteString("\n")
	}
	if len(r.Detection) > 0 {
		b.WriteString("**Detection** (known-unsafe catalogue scenarios; time to the first overlap, in TTLs)\n\n")
		b.WriteString("| scenario | TTL | from first fault | from the earlier hold's start |\n|---|---|---|---|\n")
		for _, d := range r.Detection {
			fmt.Fprintf(&b, "| %s | %.0f ms | %s | %s |\n", d.Scenario, d.TTLms, ttls(d.FromFaultTTL), ttls(d.FromHoldTTL))
		}
		b.WriteString("\n")
	}
	if len(r.Matrix) > 0 {
		b.WriteString("**Matrix** (wall time)\n\n| command | cells | wall time | exit |\n|---|---|---|---|\n")
		for _, m := range r.Matrix {
			fmt.Fprintf(&b, "| `%s` | %d | %s | %d |\n", m.Command, m.Cells, time.Duration(m.Seconds*float64(time.Second)).Round(time.Second), m.Exit)
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	for k, e := range r.Errors {
		fmt.Fprintf(&b, "- **%s failed**: %s\n", k, e)
	}
	return b.String()
}

// orDash formats v, or "–" for a figure an older report did not measure.
func orDash(v float64, format string) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func ttls(v *float64) string {
	if v == nil {
		return "not detected"
	}
	return fmt.Sprintf("%.2f", *v)
}

func dur(ns float64) string { return time.Duration(ns).Round(time.Microsecond).String() }

func mem(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", b/(1<<10))
}
