package option

import (
	"strings"
	"testing"
	"time"
)

func TestResolveDefaultsUnknownKeysAndTTLMultiples(t *testing.T) {
	specs := []Spec{{Key: "duration", Default: "3ttl"}, {Key: "n", Default: "2"}}
	v, err := Resolve("pause-client", specs, map[string]string{"n": "5"}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := v.Duration("duration"); err != nil || d != 600*time.Millisecond {
		t.Errorf("3ttl = %v, %v; want 600ms", d, err)
	}
	if n, err := v.Int("n"); err != nil || n != 5 {
		t.Errorf("n = %v, %v", n, err)
	}
	_, err = Resolve("pause-client", specs, map[string]string{"durration": "1s"}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "its options are: duration, n") {
		t.Errorf("unknown key error = %v", err)
	}
	v, _ = Resolve("x", specs, map[string]string{"duration": "-1s"}, time.Second)
	if _, err := v.Duration("duration"); err == nil || !strings.Contains(err.Error(), "x.duration") {
		t.Errorf("negative duration error = %v", err)
	}
}

func TestSplit(t *testing.T) {
	m, err := Split([]string{"latency.delay=40ms", "latency.jitter=1ms", "setnx-expire.gap=0.5ttl"})
	if err != nil || m["latency"]["delay"] != "40ms" || m["latency"]["jitter"] != "1ms" || m["setnx-expire"]["gap"] != "0.5ttl" {
		t.Errorf("Split = %v, %v", m, err)
	}
	for _, bad := range []string{"latency", "latency.=1", ".x=1", "latencydelay=1"} {
		if _, err := Split([]string{bad}); err == nil {
			t.Errorf("Split(%q) accepted", bad)
		}
	}
}
