package history

import (
	"encoding/json"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// genEvent draws events as the harness writes them, with strings that need
// escaping now and then and the nested objects of the coordinator's events.
func genEvent(t *rapid.T) Event {
	str := rapid.OneOf(rapid.SampledFrom([]string{"", "lock:7", "invoke", "not-held", "client-3-1f-9a"}), rapid.String(), rapid.StringMatching(`[ -~]{0,12}`))
	num := rapid.OneOf(rapid.Int64(), rapid.Int64Range(-3, 3))
	e := Event{
		Time: num.Draw(t, "time"), Kind: Kind(str.Draw(t, "kind")), Client: rapid.IntRange(-1, 300).Draw(t, "client"),
		F: str.Draw(t, "f"), Key: str.Draw(t, "key"), Fence: num.Draw(t, "fence"), Owner: str.Draw(t, "owner"),
		Token: str.Draw(t, "token"), Error: str.Draw(t, "error"), Message: str.Draw(t, "message"), Node: str.Draw(t, "node"),
		Expected: rapid.Bool().Draw(t, "expected"), Queued: rapid.Bool().Draw(t, "queued"), StallNs: num.Draw(t, "stall"), WorkloadNs: num.Draw(t, "workload"),
	}
	if rapid.Bool().Draw(t, "hasValue") {
		e.Value = Int64(num.Draw(t, "value"))
	}
	if rapid.IntRange(0, 4).Draw(t, "nested") == 0 {
		e.Fault = &Fault{ID: 3, Name: str.Draw(t, "fname"), Target: "n0", Params: map[string]string{"a": str.Draw(t, "p")}, Clients: []int{1}}
		e.Run = &RunInfo{Lock: "token-lua", Nemesis: []string{}}
		e.Effect = &Effect{Landed: true, Note: str.Draw(t, "note")}
		e.PTTL = rapid.SliceOf(rapid.Int64()).Draw(t, "pttl")
	}
	return e
}

// The encoder writes exactly encoding/json's bytes, and the decoder reads
// them (and any other line) exactly as encoding/json does.
func TestEventJSONMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := genEvent(t)
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got := e.Marshal()
		if string(got) != string(want) {
			t.Fatalf("Marshal:\n got %s\nwant %s", got, want)
		}
		var a, b Event
		errA := a.Unmarshal(got)
		errB := json.Unmarshal(got, &b)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Fatalf("Unmarshal(%s):\n got %+v, %v\nwant %+v, %v", got, a, errA, b, errB)
		}
	})
}

func TestEventUnmarshalMatchesEncodingJSONOnOddLines(t *testing.T) {
	lines := []string{
		`{}`, ` { "time" : 5 , "kind":"ok" } `, `{"time":01}`, `{"time":-0}`, `{"time":1.5}`, `{"time":"5"}`,
		`{"kind":5}`, `{"Time":7}`, `{"time":1,}`, `{"time":1`, `not json`, `{"value":null}`, `{"expected":false,"expected":true}`,
		`{"client":99999999999999999999}`, `{"key":"a\"b"}`, `{"key":"é"}`, `{"unknown":1}`, `{"time":1}x`, `[]`, ``,
		`{"time":9223372036854775807,"value":-9223372036854775808}`, `{"expected":tru}`, `{"stall_ns":1e3}`,
	}
	for _, l := range lines {
		var a, b Event
		errA := a.Unmarshal([]byte(l))
		errB := json.Unmarshal([]byte(l), &b)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Errorf("Unmarshal(%s) = %+v, %v; encoding/json: %+v, %v", l, a, errA, b, errB)
		}
	}
}

func BenchmarkEventMarshal(b *testing.B) {
	e := Event{Time: 1234567890123, Kind: OK, Client: 3, F: Write, Key: "lock:123", Value: Int64(42)}
	b.Run("AppendJSON", func(b *testing.B) {
		var buf []byte
		for i := 0; i < b.N; i++ {
			buf = e.AppendJSON(buf[:0])
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			json.Marshal(e)
		}
	})
	line := e.Marshal()
	b.Run("Unmarshal", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var d Event
			d.Unmarshal(line)
		}
	})
	b.Run("encoding-json-Unmarshal", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var d Event
			json.Unmarshal(line, &d)
		}
	})
}
