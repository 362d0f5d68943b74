package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockchaos/lockchaos/history"
)

// Outcomes of an acquire (Attempt.Outcome).
const (
	AttemptOK      = "ok"      // it returned the lock
	AttemptFailed  = "fail"    // the lock said no (or it definitely did not take effect)
	AttemptUnknown = "unknown" // it timed out, errored, or never completed
)

// attempt is one acquire in ns; done is -1 when it never completed.
type attempt struct {
	inv     history.Event
	done    int64
	outcome string
}

// Attempt is one acquire of the history and how it ended, in ms since the
// run started: what a report draws as availability and latency.
type Attempt struct {
	Client   int     `json:"client"`
	Key      string  `json:"key"`
	InvokeMs float64 `json:"invoke_ms"`
	// DoneMs is when it completed; for one that never completed, its
	// invocation (LatencyMs is then 0).
	DoneMs    float64 `json:"done_ms"`
	LatencyMs float64 `json:"latency_ms"`
	Outcome   string  `json:"outcome"`
	// Completed is false for an acquire that never completed.
	Completed bool `json:"completed"`
}

// Attempts are every acquire of the history (a reentrant one included), in
// order of invocation, as the checker counted them in AcquireStats.
func Attempts(events []history.Event) []Attempt {
	sorted := sortByTime(events)
	tl := newTimeline(sorted)
	tr := replay(sorted)
	out := make([]Attempt, 0, len(tr.attempts))
	for _, a := range tr.attempts {
		x := Attempt{Client: a.inv.Client, Key: a.inv.Key, InvokeMs: tl.ms(a.inv.Time), Outcome: a.outcome, Completed: a.done >= 0}
		x.DoneMs = x.InvokeMs
		if a.done >= 0 {
			x.DoneMs = tl.ms(a.done)
			x.LatencyMs = float64(a.done-a.inv.Time) / 1e6
		}
		out = append(out, x)
	}
	slices.SortStableFunc(out, func(a, b Attempt) int {
		switch {
		case a.InvokeMs < b.InvokeMs:
			return -1
		case a.InvokeMs > b.InvokeMs:
			return 1
		}
		return 0
	})
	return out
}

// RateBucket counts the acquires that completed in [StartMs, StartMs+width):
// Jepsen's rate plot. An acquire that never completed counts at its
// invocation.
type RateBucket struct {
	StartMs float64 `json:"start_ms"`
	OK      int     `json:"ok"`
	Failed  int     `json:"failed"`
	Unknown int     `json:"unknown"`
}

// Rate buckets the attempts by completion into buckets of widthMs over
// [0, spanMs].
func Rate(attempts []Attempt, widthMs, spanMs float64) []RateBucket {
	if widthMs <= 0 || spanMs <= 0 {
		return nil
	}
	n := int(spanMs/widthMs) + 1
	out := make([]RateBucket, n)
	for i := range out {
		out[i].StartMs = float64(i) * widthMs
	}
	for _, a := range attempts {
		i := int(a.DoneMs / widthMs)
		if i < 0 || i >= n {
			continue
		}
		switch a.Outcome {
		case AttemptOK:
			out[i].OK++
		case AttemptFailed:
			out[i].Failed++
		default:
			out[i].Unknown++
		}
	}
	return out
}

// NodeMark is what a fault did to one lock node, as far as its fault
// window records it (FaultWindow.Nodes, Action, Params, Effect): what
// happened at its start and at its end. Nothing beyond the record is
// inferred: a failover's promotion is not timed, so its end says only that
// the fault was over.
type NodeMark struct {
	Node   int            `json:"node"`
	Fault  int            `json:"fault"`
	Action history.Action `json:"action"`
	FromMs float64        `json:"from_ms"`
	// ToMs is nil when the fault never healed within the history.
	ToMs *float64 `json:"to_ms"`
	// Start and End say in a word or two what happened to the node then:
	// "killed" and "restarted", "paused" and "resumed", "clock +750ms" and
	// "clock restored".
	Start string `json:"start"`
	End   string `json:"end"`
	// Text is the fault's label and what it did.
	Text string `json:"text"`
}

// NodeMarks lists, per lock node, what the result's faults did to it, in
// order of the faults' start.
func NodeMarks(res Result) []NodeMark {
	var out []NodeMark
	for _, f := range res.Faults {
		start, end := nodeWords(f)
		text := f.Label()
		if f.Effect != "" {
			text += ": " + f.Effect
		}
		for _, n := range f.Nodes {
			out = append(out, NodeMark{Node: n, Fault: f.ID, Action: f.Action, FromMs: f.StartMs, ToMs: f.EndMs, Start: start, End: end, Text: text})
		}
	}
	return out
}

// nodeWords says what a fault of each action does to a node at its start
// and at its end.
func nodeWords(f FaultWindow) (string, string) {
	switch f.Action {
	case history.ActionCrash:
		return "killed", "restarted"
	case history.ActionFailover:
		return "primary killed", "failover ended"
	case history.ActionPause:
		return "paused", "resumed"
	case history.ActionClock:
		by := cmpOr(f.Params["offset"], f.Params["by"], f.Params["rate"])
		if by == "" {
			return "clock moved", "clock restored"
		}
		sign := "+"
		if d := f.Params["direction"]; d == "back" || d == "backward" || strings.HasPrefix(by, "-") {
			sign = "−"
		}
		return "clock " + sign + strings.TrimPrefix(by, "-"), "clock restored"
	case history.ActionNetwork:
		return "links faulted", "links healed"
	case history.ActionSlow:
		return "slowed", "back to speed"
	}
	return "fault", "fault over"
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// Where says whom a fault acted on, briefly: "client 3", "clients 1, 2",
// "node 4", "nodes 0, 2", or its target.
func (f FaultWindow) Where() string {
	list := func(one, many string, ids []int) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = fmt.Sprint(id)
		}
		return word(len(ids), one, many) + " " + strings.Join(s, ", ")
	}
	switch {
	case len(f.Clients) > 0:
		return list("client", "clients", f.Clients)
	case len(f.Nodes) > 0:
		return list("node", "nodes", f.Nodes)
	case f.Target != "":
		return f.Target
	}
	return "the run"
}
