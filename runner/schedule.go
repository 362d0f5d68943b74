package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/rundir"
)

// scheduleLog collects the steps as the nemeses execute them.
type scheduleLog struct {
	mu    sync.Mutex
	steps map[string][]nemesis.Executed
}

func (l *scheduleLog) add(e nemesis.Executed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.steps == nil {
		l.steps = map[string][]nemesis.Executed{}
	}
	l.steps[e.Nemesis] = append(l.steps[e.Nemesis], e)
}

// write saves the executed schedule to path, one entry per nemesis.
func (l *scheduleLog) write(path string, nemeses []nemesis.Scheduled) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := rundir.Schedule{Nemeses: []rundir.NemesisSchedule{}}
	for _, n := range nemeses {
		s.Nemeses = append(s.Nemeses, rundir.NemesisSchedule{Name: n.Name, Plan: n.Plan.String(), Steps: append([]nemesis.Executed{}, l.steps[n.Name]...)})
	}
	return rundir.WriteJSON(path, s)
}

// LoadReplay returns the run stored in dir, set to take the fault schedule
// it executed again: its config.json, with schedule.json as the steps of
// every nemesis. The caller gives it a new Out.
func LoadReplay(dir string) (Config, error) {
	var cfg Config
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
	var s rundir.Schedule
	if err := json.Unmarshal(b, &s); err != nil {
		return cfg, fmt.Errorf("--replay %s: %s: %w", dir, rundir.ScheduleFile, err)
	}
	cfg.Replay = &s
	cfg.Out = ""
	return cfg, nil
}
