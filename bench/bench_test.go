package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/locks"
)

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
BenchmarkCheck/ops=10000/keys=10-2     	     100	  11234567 ns/op	      1234 holds	 4194304 B/op	   20442 allocs/op
BenchmarkPorcupineConcurrentWaiters/waiters=16-2        	       3	   1190195 ns/op
BenchmarkPorcupine/ops=10000/keys=1-2   	    4208	    278421 ns/op	       163.0 holds	       326.0 porcupine-ops	  392311 B/op	    5512 allocs/op
PASS`
	rows := ParseGoBench(strings.NewReader(out))
	if len(rows) != 3 {
		t.Fatalf("rows = %+v", rows)
	}
	r := rows[0]
	if r.Name != "Check/ops=10000/keys=10" || r.Ops != "10000" || r.Keys != "10" || r.Holds != "1234" || r.NsPerOp != 11234567 || r.BytesPerOp != 4194304 {
		t.Errorf("row = %+v", r)
	}
	if rows[1].Ops != "16 concurrent" || rows[1].NsPerOp != 1190195 {
		t.Errorf("waiters row = %+v", rows[1])
	}
	// Holds, not porcupine's operations (two per hold), and as a count.
	if rows[2].Holds != "163" {
		t.Errorf("porcupine row holds = %q, want 163", rows[2].Holds)
	}
}

func TestDetectionReadsRunFolders(t *testing.T) {
	dir := t.TempDir()
	write := func(name, result string) {
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		os.WriteFile(filepath.Join(dir, name, "result.json"), []byte(result), 0o644)
		os.WriteFile(filepath.Join(dir, name, "history.jsonl"), []byte(`{"time":1,"kind":"run-start","client":-1,"run":{"ttl_ms":300}}`+"\n"), 0o644)
	}
	write("a-violation", `{"verdict":"violation","first_violation_ms":150,"mutex":{"overlaps":[{"start_ms":900,"holds":[{"start_ms":570},{"start_ms":900}]}]}}`)
	write("b-safe", `{"verdict":"safe","first_violation_ms":null,"mutex":{"overlaps":[]}}`)
	rows, err := Detection(dir)
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
	if r := rows[0]; r.Scenario != "a-violation" || *r.FromFaultTTL != 0.5 || *r.FromHoldTTL != 1.1 {
		t.Errorf("row = %+v (%v, %v)", r, *r.FromFaultTTL, *r.FromHoldTTL)
	}
	md := Markdown(Report{Detection: rows})
	if !strings.Contains(md, "| a-violation | 300 ms | 0.50 | 1.10 |") {
		t.Errorf("markdown:\n%s", md)
	}
}

// Each language's bench command times its library against real servers
// and prints the three figures make bench reads; the list of adapters to
// bench holds every adapter lock with a bench command.
func TestAdapterBenchCommandsPrintTheirFigures(t *testing.T) {
	listed := map[string]bool{}
	for _, l := range Adapters() {
		listed[l] = true
	}
	for _, lock := range []string{"redis-py-lock", "redis-semaphore-redlock", "jedis-notes"} {
		t.Run(lock, func(t *testing.T) {
			if !listed[lock] {
				t.Fatalf("%s is not among the adapters to bench: %v", lock, Adapters())
			}
			spec, err := locks.Lookup(lock)
			if err != nil {
				t.Fatal(err)
			}
			if why := spec.Adapter.Missing(); why != "" {
				t.Skip(why)
			}
			r, err := inProcess(context.Background(), spec.Adapter)
			if err != nil {
				t.Fatal(err)
			}
			if r.P50us <= 0 || r.P99us < r.P50us || r.HoldsPerS <= 0 {
				t.Errorf("%s's bench printed %+v", lock, r)
			}
		})
	}
	if listed["perl-token"] {
		t.Errorf("adapters to bench %v include one without a bench command", Adapters())
	}
}
