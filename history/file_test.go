package history

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestWriterRoundTripsAndReadDropsOnlyAHalfWrittenLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Time: 1, Kind: RunStart, Client: NoClient, Run: &RunInfo{Lock: "token-lua", Nemesis: []string{}}},
		{Time: 2, Kind: Invoke, Client: 0, F: Acquire, Key: "lock:0"},
		{Time: 3, Kind: OK, Client: 0, F: Read, Key: "lock:0", Value: Int64(0)},
	}
	for _, e := range want {
		w.Append(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, truncated, err := ReadFile(path)
	if err != nil || truncated || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadFile = %+v, %v, %v", got, truncated, err)
	}

	cut := `{"time":1,"kind":"invoke","client":0}` + "\n" + `{"time":2,"kind":"o`
	got, truncated, err = Parse(strings.NewReader(cut), "cut")
	if err != nil || !truncated || len(got) != 1 {
		t.Errorf("half-written last line: %d events, truncated=%v, err=%v", len(got), truncated, err)
	}
	_, _, err = Parse(strings.NewReader("{broken\n"+`{"time":2}`+"\n"), "bad")
	if err == nil || !strings.Contains(err.Error(), "bad line 1") {
		t.Errorf("a malformed line in the middle must be an error naming it, got %v", err)
	}
}

func TestNowIsMonotonic(t *testing.T) {
	a := Now()
	b := Now()
	if a <= 0 || b < a {
		t.Errorf("Now went from %d to %d", a, b)
	}
}

// The Writer gathers the clients' operations, but what a crash of the
// coordinator can lose stays bounded: a fault boundary (or any event that
// is not an operation) and Err write everything before them at once, and
// the rest reaches the file on its own, without another Append.
func TestWriterBoundsWhatItKeepsInMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	onFile := func() []Event {
		t.Helper()
		got, truncated, err := ReadFile(path)
		if err != nil || truncated {
			t.Fatalf("ReadFile: %v, truncated %v", err, truncated)
		}
		return got
	}
	op := Event{Time: 1, Kind: Invoke, Client: 0, F: Acquire, Key: "lock:0"}
	w.Append(op)
	w.Append(Event{Time: 2, Kind: FaultStart, Client: NoClient, Fault: &Fault{ID: 1, Name: "pause"}})
	if got := onFile(); len(got) != 2 || got[0].Kind != Invoke || got[1].Kind != FaultStart {
		t.Fatalf("after a fault-start the file holds %+v, want the invoke and the fault-start", got)
	}
	w.Append(Event{Time: 3, Kind: OK, Client: 0, F: Acquire, Key: "lock:0"})
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	if got := onFile(); len(got) != 3 {
		t.Fatalf("after Err the file holds %d events, want 3", len(got))
	}
	w.Append(Event{Time: 4, Kind: Invoke, Client: 0, F: Read, Key: "lock:0"})
	// No timing is asserted: the event must get there by itself, however
	// slow the machine (the bound, FlushEvery, is the documented intent).
	for deadline := time.Now().Add(time.Minute); len(onFile()) != 4; time.Sleep(FlushEvery) {
		if time.Now().After(deadline) {
			t.Fatal("a gathered operation never reached the file without another Append")
		}
	}
}
