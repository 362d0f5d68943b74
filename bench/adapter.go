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

// AdapterRow is what the lock protocol costs: an adapter lock through
// lockchaos (one client, straight to its nodes, the history recorded)
// beside the same library timed in its own process by its manifest's
// bench command, round by round.
type AdapterRow struct {
	Lock     string `json:"lock"`
	Language string `json:"language"`
	Library  string `json:"library"`
	Version  string `json:"version"`
	// Medians of the rounds, in ms.
	ViaLockchaosP50ms float64 `json:"via_lockchaos_acquire_p50_ms"`
	InProcessP50ms    float64 `json:"in_process_acquire_p50_ms"`
	ViaLockchaosP99ms float64 `json:"via_lockchaos_acquire_p99_ms"`
	InProcessP99ms    float64 `json:"in_process_acquire_p99_ms"`
	// Holds per second: through lockchaos each hold also reads and writes
	// the harness's resource (two round trips to another Redis); in
	// process it is an acquire and a release.
	ViaLockchaosHoldsPerS float64 `json:"via_lockchaos_holds_per_s"`
	InProcessHoldsPerS    float64 `json:"in_process_holds_per_s"`
	// AddedP50ms is the median of the rounds' differences of the p50s:
	// what the protocol, the pipes and the worker add to one acquire.
	AddedP50ms float64   `json:"added_p50_ms"`
	SamplesVia []float64 `json:"samples_via_lockchaos_ms"`
	SamplesIn  []float64 `json:"samples_in_process_ms"`
}

// Adapters are the adapter locks whose manifest has a bench command, in
// catalogue order.
func Adapters() []string {
	var out []string
	for _, s := range locks.All() {
		if m := s.Adapter; m != nil && len(m.Bench) > 0 {
			out = append(out, s.Name)
		}
	}
	return out
}

// Adapter measures lock (an adapter lock with a bench command) over rounds
// rounds.
func Adapter(ctx context.Context, lock, out string, rounds int) (AdapterRow, error) {
	row := AdapterRow{Lock: lock}
	spec, err := locks.Lookup(lock)
	if err != nil {
		return row, err
	}
	m := spec.Adapter
	if m == nil || len(m.Bench) == 0 {
		return row, fmt.Errorf("%s is not an adapter lock with a bench command", lock)
	}
	if why := m.Ready(); why != "" {
		return row, fmt.Errorf("%s: %s", lock, why)
	}
	row.Language, row.Library, row.Version = m.Language, m.Library, m.Version
	const runFor = 3 * time.Second
	var added, via99, in99, viaHolds, inHolds []float64
	for i := range rounds {
		res, err := runner.Run(ctx, settings.Run{
			Lock:     lock,
			Duration: runFor,
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
		in, err := inProcess(ctx, m)
		if err != nil {
			return row, err
		}
		row.SamplesVia = append(row.SamplesVia, res.Acquire.P50ms)
		row.SamplesIn = append(row.SamplesIn, in.P50us/1000)
		added = append(added, res.Acquire.P50ms-in.P50us/1000)
		via99, in99 = append(via99, res.Acquire.P99ms), append(in99, in.P99us/1000)
		viaHolds = append(viaHolds, float64(res.Acquire.OK)/runFor.Seconds())
		inHolds = append(inHolds, in.HoldsPerS)
	}
	row.ViaLockchaosP50ms, row.InProcessP50ms, row.AddedP50ms = median(row.SamplesVia), median(row.SamplesIn), median(added)
	row.ViaLockchaosP99ms, row.InProcessP99ms = median(via99), median(in99)
	row.ViaLockchaosHoldsPerS, row.InProcessHoldsPerS = median(viaHolds), median(inHolds)
	return row, nil
}

// inProcessResult is what a bench command prints.
type inProcessResult struct {
	P50us     float64 `json:"acquire_p50_us"`
	P99us     float64 `json:"acquire_p99_us"`
	HoldsPerS float64 `json:"holds_per_s"`
}

// inProcess runs the manifest's bench command against a fresh store of the
// lock's kind: as many Redis nodes as the lock uses, or an ensemble of its
// store's members (their addresses as arguments, the order of its lock
// nodes).
func inProcess(ctx context.Context, m *locks.Manifest) (inProcessResult, error) {
	var r inProcessResult
	local, err := cluster.NewLocal()
	if err != nil {
		return r, err
	}
	var nodes []cluster.Node
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
	}()
	var addrs []string
	st, err := cluster.LookupStore(m.Store)
	if err != nil {
		return r, m.StoreError(err)
	}
	e, err := st.Start(ctx, local, cluster.EnsembleSpec{Members: max(m.Nodes, 1)})
	if err != nil {
		return r, err
	}
	defer e.Close()
	nodes = e.Members()
	for _, n := range e.Serving() {
		addrs = append(addrs, n.Addr())
	}
	cmd := exec.CommandContext(ctx, m.Bench[0], append(m.Bench[1:], addrs...)...)
	cmd.Dir = m.Dir
	var outb, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &errb
	if err := cmd.Run(); err != nil {
		return r, fmt.Errorf("%s: %v in %s: %v: %s", m.Name, m.Bench, m.Dir, err, errb.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(outb.Bytes()), &r); err != nil || r.P50us == 0 || r.P99us == 0 || r.HoldsPerS == 0 {
		return r, fmt.Errorf("%s: %v printed %q, want {\"acquire_p50_us\": …, \"acquire_p99_us\": …, \"holds_per_s\": …}", m.Name, m.Bench, outb.String())
	}
	return r, nil
}
