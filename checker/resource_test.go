package checker

import (
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

func TestResourceOracle(t *testing.T) {
	const r0, r1 = "res:0", "res:1"
	tests := []struct {
		name    string
		history *hist
		want    ResourceResult
		gaps    int
	}{
		{
			name: "lost updates per key, floored at zero",
			history: new(hist).
				write(0, r0, 1, 2, history.OK, 1, 0).write(1, r0, 1, 3, history.OK, 1, 0).write(0, r0, 4, 5, history.OK, 2, 0).
				write(0, r1, 6, 7, history.OK, 1, 0).write(1, r1, 8, 9, history.Info, 2, 0).
				probeResource(r0, 10, 2).probeResource(r1, 10, 2),
			want: ResourceResult{Holds: 4, LostUpdates: 1, State: ResourceDamaged},
		},
		{
			name: "the last probe of a key counts",
			history: new(hist).
				write(0, r0, 1, 2, history.OK, 1, 0).write(0, r0, 3, 4, history.OK, 2, 0).
				probeResource(r0, 10, 1).probeResource(r0, 11, 2),
			want: ResourceResult{Holds: 2, Safe: true, State: ResourceIntact},
		},
		{
			name: "a key never written needs no probe; a written one does",
			history: new(hist).
				write(0, r0, 1, 2, history.OK, 1, 0).write(0, r1, 3, 4, history.Fail, 1, 0),
			want: ResourceResult{Holds: 1, State: ResourceUnknown},
			gaps: 1,
		},
		{
			name: "a read invoked at the instant a write was acknowledged is concurrent with it",
			history: new(hist).
				write(0, r0, 1, 5, history.OK, 3, 0).read(1, r0, 5, 6, 2, 0).read(1, r0, 7, 8, 2, 0).
				probeResource(r0, 10, 3),
			want: ResourceResult{Holds: 1, StaleReads: 1, State: ResourceDamaged},
		},
		{
			name: "stale reads compare with the highest value acknowledged, not the last",
			history: new(hist).
				write(0, r0, 1, 2, history.OK, 5, 0).write(1, r0, 3, 4, history.OK, 4, 0).read(1, r0, 5, 6, 4, 0).
				probeResource(r0, 10, 5),
			want: ResourceResult{Holds: 2, StaleReads: 1, State: ResourceDamaged},
		},
		{
			name: "one fencing token accepted from two clients was issued twice",
			history: new(hist).
				read(0, r0, 1, 2, 0, 7).read(1, r0, 3, 4, 0, 7).
				write(0, r0, 5, 6, history.OK, 1, 7).write(1, r0, 7, 8, history.OK, 1, 7).
				probeResource(r0, 10, 1),
			want: ResourceResult{Holds: 2, LostUpdates: 1, FenceReused: 2, State: ResourceDamaged}, // client 1's read and write
		},
		{
			name: "a fenced write invoked at the instant a higher token was answered is concurrent with it",
			history: new(hist).
				write(0, r0, 1, 5, history.OK, 1, 7).write(1, r0, 5, 6, history.OK, 2, 6).
				probeResource(r0, 10, 2),
			want: ResourceResult{Holds: 2, Safe: true, State: ResourceIntact},
		},
		{
			name: "a read carrying a higher token makes a later lower write stale; an equal token does not",
			history: new(hist).
				read(0, r0, 1, 2, 0, 7).write(1, r0, 3, 4, history.OK, 1, 7).write(1, r0, 5, 6, history.OK, 2, 6).
				write(1, r0, 7, 8, history.Fail, 3, 5).write(1, r0, 9, 10, history.Fail, 3, 0).
				probeResource(r0, 20, 2),
			want: ResourceResult{Holds: 2, StaleAccepted: 1, StaleRejected: 1, FenceReused: 1, State: ResourceDamaged}, // clients 0 and 1 both used token 7
		},
		{
			name: "a fenced read the resource refused is a stale rejection",
			history: new(hist).
				read(0, r0, 1, 2, 0, 6).write(0, r0, 3, 4, history.OK, 1, 6).
				add(history.Event{Time: ms(5), Kind: history.Invoke, Client: 1, F: history.Read, Key: r0, Fence: 5}).
				add(history.Event{Time: ms(6), Kind: history.Fail, Client: 1, F: history.Read, Key: r0, Fence: 5, Error: "stale-fence"}).
				probeResource(r0, 10, 1),
			want: ResourceResult{Holds: 1, StaleRejected: 1, Safe: true, State: ResourceFenced},
		},
		{
			name: "a fenced read accepted after a higher token is stale-accepted",
			history: new(hist).
				write(0, r0, 1, 2, history.OK, 1, 7).read(1, r0, 3, 4, 1, 6).
				probeResource(r0, 10, 1),
			want: ResourceResult{Holds: 1, StaleAccepted: 1, State: ResourceDamaged},
		},
		{
			// The hazard fenced reads close: A (5) and B (6) both read 0,
			// then both writes are accepted, each token being the highest
			// the resource had seen. No token went backwards, yet an
			// increment is lost.
			name: "fencing only the writes of a read-modify-write loses an update",
			history: new(hist).
				read(0, r0, 1, 2, 0, 0).read(1, r0, 3, 4, 0, 0).
				write(0, r0, 5, 6, history.OK, 1, 5).write(1, r0, 7, 8, history.OK, 1, 6).
				probeResource(r0, 10, 1),
			want: ResourceResult{Holds: 2, LostUpdates: 1, State: ResourceDamaged},
		},
		{
			name: "unfenced writes are never stale-accepted",
			history: new(hist).
				write(0, r0, 1, 2, history.OK, 1, 7).write(1, r0, 3, 4, history.OK, 2, 0).
				probeResource(r0, 20, 2),
			want: ResourceResult{Holds: 2, Safe: true, State: ResourceIntact},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, gaps := resourceOf(tc.history.events)
			got.Summary = ""
			if got != tc.want || len(gaps) != tc.gaps {
				t.Errorf("got %+v with gaps %q, want %+v and %d gaps", got, gaps, tc.want, tc.gaps)
			}
		})
	}
}

func TestResourceSummarySaysFencingKeptItCorrect(t *testing.T) {
	h := new(hist).
		read(1, "res:0", 1, 2, 0, 6).write(1, "res:0", 3, 4, history.OK, 1, 6).
		add(history.Event{Time: ms(5), Kind: history.Invoke, Client: 0, F: history.Read, Key: "res:0", Fence: 5}).
		add(history.Event{Time: ms(6), Kind: history.Fail, Client: 0, F: history.Read, Key: "res:0", Fence: 5, Error: "stale-fence"}).
		write(0, "res:0", 7, 8, history.Fail, 1, 5).
		probeResource("res:0", 10, 1)
	got, _ := resourceOf(h.events)
	want := "the resource stayed correct thanks to fencing: it rejected 2 operations with stale fencing tokens (1 read, 1 write) and accepted none, so no update was lost"
	if got.Summary != want || !got.Safe {
		t.Errorf("summary %q (safe %v), want %q", got.Summary, got.Safe, want)
	}
}

// resourceOf is the resource oracle's answer alone.
func resourceOf(events []history.Event) (ResourceResult, []string) {
	s := NewStream(Options{})
	for _, e := range sortByTime(events) {
		s.Add(e)
	}
	s.rp.finish()
	return s.resourceResult()
}
