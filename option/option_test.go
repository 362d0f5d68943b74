package option

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type color string

func (c *color) UnmarshalText(b []byte) error {
	if s := string(b); s == "red" || s == "blue" {
		*c = color(s)
		return nil
	}
	return errors.New("want red or blue")
}

type shared struct {
	Node int `opt:"node" default:"0" help:"a node"`
}

type sample struct {
	Duration time.Duration  `opt:"duration" default:"3ttl" help:"how long"`
	Delay    *time.Duration `opt:"delay" default:"" help:"optional"`
	N        int            `opt:"n" default:"2"`
	Ratio    float64        `opt:"ratio" default:"0.5"`
	Drift    Fraction       `opt:"drift" default:"0.01"`
	On       bool           `opt:"on" default:"false"`
	Phase    string         `opt:"phase" default:"hold" oneof:"hold,acquire"`
	Color    color          `opt:"color" default:"red"`
	Span     Span           `opt:"span" default:"2ttl"`
	shared
	internal int
}

func (s *sample) Validate() error {
	if s.N > 10 {
		return errors.New("n: at most 10")
	}
	return nil
}

func TestDecodeFillsDefaultsAndGivenValues(t *testing.T) {
	var s sample
	used, err := Decode("x", &s, map[string]string{"n": "5", "phase": "acquire", "node": "3", "delay": "40ms"}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration != 600*time.Millisecond || s.N != 5 || s.Ratio != 0.5 || s.Drift != 0.01 || s.On || s.Phase != "acquire" || s.Color != "red" || s.Node != 3 {
		t.Errorf("decoded %+v", s)
	}
	if s.Delay == nil || *s.Delay != 40*time.Millisecond || s.Span != (Span{TTL: 2}) {
		t.Errorf("delay %v, span %v", s.Delay, s.Span)
	}
	if used["duration"] != "3ttl" || used["n"] != "5" || len(used) != 10 {
		t.Errorf("used = %v", used)
	}
	var d sample
	if _, err := Decode("x", &d, nil, time.Second); err != nil || d.Delay != nil {
		t.Errorf("an empty optional duration = %v, %v; want nil", d.Delay, err)
	}
}

func TestDecodeErrorsNameTheOptionAndWhatItWants(t *testing.T) {
	for given, want := range map[string]string{
		"durration=1s":      `x has no option "durration" (did you mean duration?); its options are: color, delay, drift, duration, n, node, on, phase, ratio, span`,
		"duration=-1s":      `option x.duration="-1s": want a duration`,
		"duration=300":      `a number needs a unit: 300ms, 300s or 300ttl`,
		"duration=2,5ttl":   `option x.duration="2,5ttl"`,
		"duration=1e300ttl": `too long`,
		"n=two":             `option x.n="two": want a whole number`,
		"ratio=NaN":         `option x.ratio="NaN": want a number`,
		"drift=1":           `option x.drift="1": want a fraction`,
		"on=yes please":     `want true or false`,
		"phase=later":       `option x.phase="later": want hold or acquire`,
		"color=green":       `option x.color="green": want red or blue`,
		"n=11":              `x: n: at most 10`,
	} {
		k, v, _ := strings.Cut(given, "=")
		var s sample
		_, err := Decode("x", &s, map[string]string{k: v}, time.Second)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", given, err, want)
		}
	}
}

func TestSpecsListTheDeclaredOptionsInOrder(t *testing.T) {
	specs := Specs(sample{})
	var keys []string
	for _, s := range specs {
		keys = append(keys, s.Key)
	}
	if got := strings.Join(keys, " "); got != "duration delay n ratio drift on phase color span node" {
		t.Errorf("keys = %s", got)
	}
	if specs[6].OneOf[1] != "acquire" || specs[0].Help != "how long" {
		t.Errorf("phase spec = %+v", specs[6])
	}
	if Specs(nil) != nil {
		t.Error("Specs(nil) should list nothing")
	}
	if _, err := Decode("none", nil, map[string]string{"k": "v"}, 0); err == nil || !strings.Contains(err.Error(), "its options are: (none)") {
		t.Errorf("an option for a lock without options: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a field that cannot hold an option did not panic")
		}
	}()
	Specs(struct {
		M map[string]int `opt:"m"`
	}{})
}

func TestSplit(t *testing.T) {
	m, err := Split([]string{"latency.delay=40ms", "latency.jitter=1ms", "setnx-expire.gap=0.5ttl", "redisson-rlock-3.43.0.lease=1s"})
	if err != nil || m["latency"]["delay"] != "40ms" || m["latency"]["jitter"] != "1ms" || m["setnx-expire"]["gap"] != "0.5ttl" ||
		m["redisson-rlock-3.43.0"]["lease"] != "1s" {
		t.Errorf("Split = %v, %v", m, err)
	}
	for _, bad := range []string{"latency", "latency.=1", ".x=1", "latencydelay=1"} {
		if _, err := Split([]string{bad}); err == nil {
			t.Errorf("Split(%q) accepted", bad)
		}
	}
}
