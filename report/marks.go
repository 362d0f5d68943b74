package report

import (
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// What a report draws of a checked run that the checker's Result and
// Attempts hold: the acquire-rate buckets and the faults' marks on each
// lock node.

// rate buckets the attempts by completion into buckets of widthMs over
// [0, spanMs].
func rate(attempts []checker.Attempt, widthMs, spanMs float64) []checker.RateBucket {
	if widthMs <= 0 || spanMs <= 0 {
		return nil
	}
	n := int(spanMs/widthMs) + 1
	out := make([]checker.RateBucket, n)
	for i := range out {
		out[i].StartMs = float64(i) * widthMs
	}
	for _, a := range attempts {
		i := int(a.DoneMs / widthMs)
		if i < 0 || i >= n {
			continue
		}
		switch a.Outcome {
		case checker.AttemptOK:
			out[i].OK++
		case checker.AttemptFailed:
			out[i].Failed++
		default:
			out[i].Unknown++
		}
	}
	return out
}

// nodeMark is what a fault did to one lock node, as far as its fault
// window records it (FaultWindow.Nodes, Action, Params, Effect): what
// happened at its start and at its end. Nothing beyond the record is
// inferred: a failover's promotion is not timed, so its end says only that
// the fault was over.
type nodeMark struct {
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

// nodeMarks lists, per lock node, what the result's faults did to it, in
// order of the faults' start.
func nodeMarks(res checker.Result) []nodeMark {
	var out []nodeMark
	for _, f := range res.Faults {
		start, end := nodeWords(f)
		text := f.Label()
		if f.Effect != "" {
			text += ": " + f.Effect
		}
		for _, n := range f.Nodes {
			out = append(out, nodeMark{Node: n, Fault: f.ID, Action: f.Action, FromMs: f.StartMs, ToMs: f.EndMs, Start: start, End: end, Text: text})
		}
	}
	return out
}

// nodeWords says what a fault of each action does to a node at its start
// and at its end.
func nodeWords(f checker.FaultWindow) (string, string) {
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
	case history.ActionCancel:
		return "call cancelled", "cancel settled"
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
