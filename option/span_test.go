package option

import (
	"strings"
	"testing"
	"time"
)

func TestParseSpan(t *testing.T) {
	ttl := 400 * time.Millisecond
	for in, want := range map[string]time.Duration{
		"300ms":     300 * time.Millisecond,
		" 2.5s ":    2500 * time.Millisecond,
		"0":         0,
		"2ttl":      800 * time.Millisecond,
		"0.85ttl":   340 * time.Millisecond,
		"1e-1ttl":   40 * time.Millisecond,
		"0ttl":      0,
		"1h2m0.5s":  time.Hour + 2*time.Minute + 500*time.Millisecond,
		"2.50ttl":   time.Second,
		"+1ttl":     ttl,
		"1.000ttl ": ttl,
	} {
		s, err := ParseSpan(in)
		if err != nil || s.Resolve(ttl) != want {
			t.Errorf("ParseSpan(%q) = %v, %v; want %v", in, s.Resolve(ttl), err, want)
			continue
		}
		if back, err := ParseSpan(s.String()); err != nil || back != s {
			t.Errorf("ParseSpan(%q).String() = %q does not read back: %v, %v", in, s.String(), back, err)
		}
	}
	for in, hint := range map[string]string{
		"2,5ttl": SpanHint, // Sscanf("%g") used to read this as 2
		"2 ttl":  SpanHint,
		"infttl": SpanHint,
		"NaNttl": SpanHint,
		"ttl":    SpanHint,
		"-1ttl":  SpanHint,
		"-300ms": SpanHint,
		"1s x":   SpanHint,
		"":       SpanHint,
		"300":    "a number needs a unit: 300ms",
		"1.5":    "a number needs a unit: 1.5ms",
	} {
		_, err := ParseSpan(in)
		if err == nil || !strings.Contains(err.Error(), hint) {
			t.Errorf("ParseSpan(%q): error %v, want one saying %q", in, err, hint)
		}
	}
}

// A span too long for a duration is an error, not a wrapped-around value.
func TestWithinRefusesOverflow(t *testing.T) {
	s, _ := ParseSpan("1e300ttl")
	if _, err := s.Within(time.Second); err == nil {
		t.Error("1e300ttl resolved")
	}
	s, _ = ParseSpan("2.5ttl")
	if d, err := s.Within(time.Second); err != nil || d != 2500*time.Millisecond {
		t.Errorf("2.5ttl = %v, %v", d, err)
	}
}
