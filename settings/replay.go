package settings

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/rundir"
)

// LoadReplay returns the run stored in dir, set to take the fault schedule
// it executed again: its config.json, with schedule.json as the steps of
// every nemesis. The caller gives it a new Out.
func LoadReplay(dir string) (Run, error) {
	var cfg Run
	b, err := os.ReadFile(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		return cfg, fmt.Errorf("--replay %s: %w (a run folder from this version of lockchaos holds config.json and schedule.json)", dir, err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("--replay %s: %s: %w", dir, rundir.ConfigFile, err)
	}
	b, err = os.ReadFile(filepath.Join(dir, rundir.ScheduleFile))
	if err != nil {
		return cfg, fmt.Errorf("--replay %s: %w", dir, err)
	}
	var s nemesis.Timetable
	if err := json.Unmarshal(b, &s); err != nil {
		return cfg, fmt.Errorf("--replay %s: %s: %w", dir, rundir.ScheduleFile, err)
	}
	cfg.Replay = &s
	cfg.Out = ""
	return cfg, nil
}
