package checker

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// TestCheckFileReordersLateEvents writes a history whose events arrive out
// of time order — some of them seconds late, as a paused worker's would —
// and checks that reading the file as a stream gives Check's answer.
func TestCheckFileReordersLateEvents(t *testing.T) {
	for _, violating := range []bool{false, true} {
		events := simulate(20_000, 8, 3, 7)
		if violating {
			// Client 0's first hold lasts far beyond its release: another
			// client's later hold of the same key overlaps it.
			for i, e := range events {
				if e.Client == 0 && e.Kind == history.Invoke && e.F == history.Release {
					events[i].Time += 50_000
					break
				}
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		arrived := make([]history.Event, len(events))
		copy(arrived, events)
		for i := range arrived {
			// Shuffle nearby events, and hold some back far behind.
			j := min(len(arrived)-1, i+r.IntN(20))
			arrived[i], arrived[j] = arrived[j], arrived[i]
		}
		for k := 0; k < 50; k++ {
			i := r.IntN(len(arrived) - 2000)
			e := arrived[i]
			copy(arrived[i:], arrived[i+1:i+1500])
			arrived[i+1499] = e
		}
		path := filepath.Join(t.TempDir(), "history.jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range arrived {
			f.Write(append(e.Marshal(), '\n'))
		}
		f.Close()
		want := golden(Check(events, Options{}))
		res, err := CheckFile(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := golden(res); string(got) != string(want) {
			t.Errorf("violating=%v: CheckFile gave\n%s\nCheck gave\n%s", violating, got, want)
		}
		if violating != (res.Verdict == Violation) {
			t.Errorf("violating=%v: verdict %s", violating, res.Verdict)
		}
	}
}
