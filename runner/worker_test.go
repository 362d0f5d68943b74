package runner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/workload"
)

// An event the coordinator cannot read is a hole in the history: it must be
// reported (run-end then carries it, and the verdict cannot be safe), not
// only logged.
func TestUnreadableWorkerEventIsReported(t *testing.T) {
	t.Parallel()
	var got []history.Event
	w, err := startWorker([]string{"sh", "-c", `read cfg; echo '{"time":1,"kind":"invoke","f":"acquire"}' >&3; echo 'not json' >&3`},
		workload.Config{Client: 0}, filepath.Join(t.TempDir(), "w.log"), func(e history.Event) { got = append(got, e) }, newTracker())
	if err != nil {
		t.Fatal(err)
	}
	<-w.done
	if len(got) != 2 || got[0].Kind != history.Invoke || got[1].Kind != history.WorkerExit {
		t.Errorf("recorded %+v, want the readable invoke and the exit", got)
	}
	if !strings.Contains(w.lostEvents, "unreadable event") {
		t.Errorf("lostEvents = %q, want the unreadable event reported", w.lostEvents)
	}
}
