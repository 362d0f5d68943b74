package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
)

// DetectionRow is how soon one known-unsafe scenario showed its violation.
type DetectionRow struct {
	Scenario string  `json:"scenario"`
	TTLms    float64 `json:"ttl_ms"`
	// FromFaultTTL: from the first fault's start to the first overlap, in
	// TTLs. A pause can land late in a hold, so this may be below 1.
	FromFaultTTL *float64 `json:"from_fault_ttl"`
	// FromHoldTTL: from the start of the earlier hold in the first overlap
	// (the return of its acquire) to the overlap, in TTLs. A lease that
	// nothing takes away cannot be stolen before it expires, so for pauses
	// and slow holds 1.0 is the floor; faults that remove the key early
	// (crash, failover, clock jump) or deliver the grant late (slow reply)
	// go below it.
	FromHoldTTL *float64 `json:"from_hold_start_ttl"`
}

// resultFile is the part of result.json the detection figures need.
type resultFile struct {
	Verdict          string   `json:"verdict"`
	FirstViolationMs *float64 `json:"first_violation_ms"`
	Mutex            struct {
		Overlaps []struct {
			StartMs float64 `json:"start_ms"`
			Holds   [2]struct {
				StartMs float64 `json:"start_ms"`
			} `json:"holds"`
		} `json:"overlaps"`
	} `json:"mutex"`
}

type historyStart struct {
	Run *struct {
		TTLms float64 `json:"ttl_ms"`
	} `json:"run"`
}

// Detection reads every run folder under dir (as `lockchaos chaos --out
// dir` leaves them) and reports the violations' detection times.
func Detection(dir string) ([]DetectionRow, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*", "result.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var rows []DetectionRow
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r resultFile
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		if r.Verdict != "violation" {
			continue
		}
		ttl, err := runTTL(filepath.Join(filepath.Dir(p), "history.jsonl"))
		if err != nil || ttl == 0 {
			continue
		}
		row := DetectionRow{Scenario: filepath.Base(filepath.Dir(p)), TTLms: ttl}
		if r.FirstViolationMs != nil {
			v := *r.FirstViolationMs / ttl
			row.FromFaultTTL = &v
		}
		if len(r.Mutex.Overlaps) > 0 {
			o := r.Mutex.Overlaps[0]
			v := (o.StartMs - o.Holds[0].StartMs) / ttl
			row.FromHoldTTL = &v
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// runTTL reads the TTL from a history's first line (the run-start event).
func runTTL(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var h historyStart
	if err := json.NewDecoder(f).Decode(&h); err != nil || h.Run == nil {
		return 0, err
	}
	return h.Run.TTLms, nil
}
