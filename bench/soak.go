package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SoakRow is one long run at the harness's full rate (no think time, a
// 1 ms hold, a client paused past its lease now and then): the
// coordinator's resident memory while it ran, and how long checking its
// history took afterwards, against how long it ran.
type SoakRow struct {
	Command      string  `json:"command"`
	Seconds      float64 `json:"seconds"`
	HistoryBytes int64   `json:"history_bytes"`
	// RSS of the coordinator, sampled every few seconds: the lowest and
	// the highest after the first minute (or after a sixth of a shorter
	// run), and their ratio (the target: at most 1.2).
	RSSMinMiB float64 `json:"rss_min_mib"`
	RSSMaxMiB float64 `json:"rss_max_mib"`
	Flatness  float64 `json:"rss_max_per_min"`
	// Samples are [seconds, MiB] pairs.
	Samples [][2]float64 `json:"samples"`
	// CheckSeconds is `lockchaos check DIR` on the stored history, and
	// CheckPerRun its share of the run's length (the target: ≤ 0.1).
	CheckSeconds float64 `json:"check_seconds"`
	CheckPerRun  float64 `json:"check_per_run"`
	CheckRSSMiB  float64 `json:"check_peak_rss_mib"`
	Verdict      string  `json:"verdict"`
	PerHour      string  `json:"violations_per_hour"`
}

// Soak runs bin for d with the coordinator's RSS sampled, then checks it.
func Soak(ctx context.Context, bin, dir string, d time.Duration) (SoakRow, error) {
	args := []string{"run", "--lock", "token-lua", "--nemesis", "pause-client", "--keys", "4", "--think", "0", "--hold", "1ms",
		"--duration", d.String(), "--out", dir, "--force"}
	row := SoakRow{Command: "lockchaos " + strings.Join(args[:len(args)-3], " ")}
	cmd := exec.CommandContext(ctx, bin, args...)
	out, err := os.Create(dir + ".out")
	if err != nil {
		return row, err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return row, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	warm := min(time.Minute, d/6)
	row.RSSMinMiB = -1
sample:
	for {
		select {
		case err = <-done:
			break sample
		case <-tick.C:
			mib, ok := rssMiB(cmd.Process.Pid)
			if !ok {
				continue
			}
			at := time.Since(start)
			if at > d {
				continue // checking and reporting, no longer running
			}
			row.Samples = append(row.Samples, [2]float64{at.Seconds(), mib})
			if at >= warm {
				if row.RSSMinMiB < 0 || mib < row.RSSMinMiB {
					row.RSSMinMiB = mib
				}
				row.RSSMaxMiB = max(row.RSSMaxMiB, mib)
			}
		}
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() <= 2 {
		err = nil // a verdict (safe, violation, inconclusive), not a failure
	}
	if err != nil {
		return row, fmt.Errorf("soak run: %w (its output: %s.out)", err, dir)
	}
	row.Seconds = d.Seconds()
	if row.RSSMinMiB > 0 {
		row.Flatness = row.RSSMaxMiB / row.RSSMinMiB
	}
	if st, err := os.Stat(filepath.Join(dir, "history.jsonl")); err == nil {
		row.HistoryBytes = st.Size()
	}
	b, _ := os.ReadFile(dir + ".out")
	if m := regexp.MustCompile(`(?m)^violations: .*$`).Find(b); m != nil {
		row.PerHour = string(m)
	}
	check := exec.CommandContext(ctx, bin, "check", dir)
	check.Stdout, check.Stderr = out, out
	began := time.Now()
	cerr := check.Run()
	row.CheckSeconds = time.Since(began).Seconds()
	row.CheckPerRun = row.CheckSeconds / row.Seconds
	if check.ProcessState != nil {
		row.CheckRSSMiB = maxRSSMiB(check.ProcessState)
	}
	if ee, ok := cerr.(*exec.ExitError); ok && ee.ExitCode() <= 2 {
		cerr = nil
	}
	if v, err := os.ReadFile(filepath.Join(dir, "result.json")); err == nil {
		if m := regexp.MustCompile(`"verdict": "(\w+)"`).FindSubmatch(v); m != nil {
			row.Verdict = string(m[1])
		}
	}
	return row, cerr
}

// rssMiB reads a process's resident set from /proc.
func rssMiB(pid int) (float64, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}

// LiveRow is how soon a run reported its first violation while it ran
// (the progress line's "seen … later"), against the lease.
type LiveRow struct {
	Nemesis string  `json:"nemesis"`
	TTLms   float64 `json:"ttl_ms"`
	// LagMs is from the overlap's start to the live report; nil when no
	// violation was seen live.
	LagMs  *float64 `json:"lag_ms"`
	LagTTL *float64 `json:"lag_ttl"`
}

var seenLive = regexp.MustCompile(`violation seen live: .* seen ([0-9.]+) (ms|s) later`)

// Live runs token-lua under each nemesis with --stop-on-violation and reads
// how long after the overlap began it was reported.
func Live(ctx context.Context, bin, dir string, nemeses []string) ([]LiveRow, error) {
	var rows []LiveRow
	const ttl = 500 * time.Millisecond
	for _, n := range nemeses {
		out := filepath.Join(dir, n)
		args := []string{"run", "--lock", "token-lua", "--nemesis", n, "--ttl", ttl.String(), "--duration", "20s",
			"--stop-on-violation", "--out", out, "--force"}
		if n == "failover" {
			args = append(args, "--replicas", "1")
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		b, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() <= 2 {
			err = nil
		}
		if err != nil {
			return rows, fmt.Errorf("live %s: %w: %s", n, err, b)
		}
		row := LiveRow{Nemesis: n, TTLms: float64(ttl.Milliseconds())}
		if m := seenLive.FindSubmatch(b); m != nil {
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			if string(m[2]) == "s" {
				v *= 1000
			}
			per := v / row.TTLms
			row.LagMs, row.LagTTL = &v, &per
		}
		rows = append(rows, row)
	}
	return rows, nil
}
