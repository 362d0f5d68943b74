package history

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
