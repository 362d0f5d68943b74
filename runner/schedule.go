package runner

import (
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
	s := nemesis.Timetable{Nemeses: []nemesis.Executions{}}
	for _, n := range nemeses {
		s.Nemeses = append(s.Nemeses, nemesis.Executions{Name: n.Name, Plan: n.Plan.String(), Steps: append([]nemesis.Executed{}, l.steps[n.Name]...)})
	}
	return rundir.WriteJSON(path, s)
}
