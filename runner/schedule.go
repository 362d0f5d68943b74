package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/lockchaos/lockchaos/nemesis"
)

// ScheduleFile is the fault schedule a run executed, in its folder: every
// step of every nemesis, with the fault it became or why it was missed.
// `lockchaos run --replay DIR` takes the same steps again.
const ScheduleFile = "schedule.json"

// ConfigFile is the run's whole configuration, in its folder, as it ran
// (defaults filled in): what --replay starts from.
const ConfigFile = "config.json"

// Schedule is what schedule.json holds.
type Schedule struct {
	Nemeses []NemesisSchedule `json:"nemeses"`
}

// NemesisSchedule is one nemesis's steps, in order.
type NemesisSchedule struct {
	Name string `json:"name"`
	// Plan is its schedule option (every, at=…, random): how the steps'
	// gaps are read.
	Plan  string             `json:"plan"`
	Steps []nemesis.Executed `json:"steps"`
}

// Steps returns the steps of nemesis name, to take again.
func (s *Schedule) Steps(name string) ([]nemesis.Step, bool) {
	for _, n := range s.Nemeses {
		if n.Name == name {
			steps := make([]nemesis.Step, 0, len(n.Steps))
			for _, e := range n.Steps {
				steps = append(steps, e.Step)
			}
			return steps, true
		}
	}
	return nil, false
}

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
	s := Schedule{Nemeses: []NemesisSchedule{}}
	for _, n := range nemeses {
		s.Nemeses = append(s.Nemeses, NemesisSchedule{Name: n.Name, Plan: n.Plan.String(), Steps: append([]nemesis.Executed{}, l.steps[n.Name]...)})
	}
	return WriteJSON(path, s)
}

// WriteJSON writes v to path as indented JSON, whole or not at all.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	// Whole or not at all: written beside, then renamed over path, so that
	// a full disk leaves no half file for a reader to choke on.
	tmp := path + ".tmp"
	err = os.WriteFile(tmp, append(b, '\n'), 0o644)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// LoadReplay returns the run stored in dir, set to take the fault schedule
// it executed again: its config.json, with schedule.json as the steps of
// every nemesis. The caller gives it a new Out.
func LoadReplay(dir string) (Config, error) {
	var cfg Config
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return cfg, fmt.Errorf("--replay %s: %w (a run folder from this version of lockchaos holds config.json and schedule.json)", dir, err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("--replay %s: %s: %w", dir, ConfigFile, err)
	}
	b, err = os.ReadFile(filepath.Join(dir, ScheduleFile))
	if err != nil {
		return cfg, fmt.Errorf("--replay %s: %w", dir, err)
	}
	var s Schedule
	if err := json.Unmarshal(b, &s); err != nil {
		return cfg, fmt.Errorf("--replay %s: %s: %w", dir, ScheduleFile, err)
	}
	cfg.Replay = &s
	cfg.Out = ""
	return cfg, nil
}
