package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// AdapterRow is what the lock protocol costs: the acquire latency of an
// adapter lock through lockchaos (one client, straight to its node, the
// history recorded) beside the same library timed in its own process by a
// script of its language, round by round.
type AdapterRow struct {
	Lock string `json:"lock"`
	// Medians of the rounds, in ms.
	ViaLockchaosP50ms float64 `json:"via_lockchaos_acquire_p50_ms"`
	InProcessP50ms    float64 `json:"in_process_acquire_p50_ms"`
	// AddedP50ms is the median of the rounds' differences: what the
	// protocol, the pipes and the worker add to one acquire.
	AddedP50ms float64   `json:"added_p50_ms"`
	SamplesVia []float64 `json:"samples_via_lockchaos_ms"`
	SamplesIn  []float64 `json:"samples_in_process_ms"`
}

// Adapter measures lock (an adapter whose folder holds bench_inprocess.py,
// printing {"acquire_p50_us": …}) over rounds rounds.
func Adapter(ctx context.Context, lock, out string, rounds int) (AdapterRow, error) {
	row := AdapterRow{Lock: lock}
	spec, err := locks.Lookup(lock)
	if err != nil {
		return row, err
	}
	if spec.Adapter == nil {
		return row, fmt.Errorf("%s is not an adapter lock", lock)
	}
	if why := spec.Adapter.Missing(); why != "" {
		return row, fmt.Errorf("%s: %s", lock, why)
	}
	var added []float64
	for i := range rounds {
		res, err := runner.Run(ctx, settings.Run{
			Lock:     lock,
			Duration: 3 * time.Second,
			Seed:     1,
			Out:      filepath.Join(out, fmt.Sprintf("%s-%d", lock, i)),
			Direct:   true,
			Force:    true,
			Workload: workload.Workload{Clients: 1, Keys: 1000, TTL: 2 * time.Second, Hold: 0, Think: 0},
		})
		if err != nil {
			return row, err
		}
		if res.Acquire.OK == 0 {
			return row, fmt.Errorf("run %d of %s acquired nothing: %s", i, lock, res.Summary)
		}
		in, err := inProcess(ctx, spec.Adapter)
		if err != nil {
			return row, err
		}
		row.SamplesVia = append(row.SamplesVia, res.Acquire.P50ms)
		row.SamplesIn = append(row.SamplesIn, in)
		added = append(added, res.Acquire.P50ms-in)
	}
	row.ViaLockchaosP50ms, row.InProcessP50ms, row.AddedP50ms = median(row.SamplesVia), median(row.SamplesIn), median(added)
	return row, nil
}

// inProcess runs the adapter's bench_inprocess.py against a fresh node and
// returns its acquire p50 in ms.
func inProcess(ctx context.Context, m *locks.Manifest) (float64, error) {
	local, err := cluster.NewLocal()
	if err != nil {
		return 0, err
	}
	n, err := local.StartNode(ctx, cluster.NodeSpec{Name: "bench-inprocess"})
	if err != nil {
		return 0, err
	}
	defer n.Stop()
	cmd := exec.CommandContext(ctx, "python3", "bench_inprocess.py", n.Addr())
	cmd.Dir = m.Dir
	var outb, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s/bench_inprocess.py: %v: %s", m.Dir, err, errb.String())
	}
	var r struct {
		P50us float64 `json:"acquire_p50_us"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(outb.Bytes()), &r); err != nil || r.P50us == 0 {
		return 0, fmt.Errorf("bench_inprocess.py printed %q, want {\"acquire_p50_us\": …}", outb.String())
	}
	return r.P50us / 1000, nil
}
