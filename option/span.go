package option

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Span is a length of time as the user writes it anywhere (a flag, a
// scenario file, a lock or nemesis option, a schedule): a Go duration
// ("300ms", "2.5s") or a multiple of the run's TTL ("2ttl", "0.85ttl"). It
// is the one parser of such values; Resolve turns one into a duration once
// the TTL is known.
type Span struct {
	D   time.Duration // when TTL is 0
	TTL float64       // a multiple of the TTL, when not 0
}

// SpanHint says what a Span looks like, for error messages.
const SpanHint = "a duration such as 300ms or a multiple of the TTL such as 2ttl"

// ParseSpan reads a Span. The whole text must be one: "2,5ttl" and "1s x"
// are errors, as are negative values. A bare number is an error whose
// message names the missing unit.
func ParseSpan(s string) (Span, error) {
	s = strings.TrimSpace(s)
	if f, ok := strings.CutSuffix(s, "ttl"); ok {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) || f != strings.TrimSpace(f) {
			return Span{}, spanError(s)
		}
		return Span{TTL: x}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return Span{}, spanError(s)
	}
	return Span{D: d}, nil
}

func spanError(s string) error {
	if _, err := strconv.ParseFloat(s, 64); err == nil && s != "0" {
		return errors.New("want " + SpanHint + " (a number needs a unit: " + s + "ms, " + s + "s or " + s + "ttl)")
	}
	return errors.New("want " + SpanHint)
}

// Resolve is the span as a duration under the given TTL; one too long for
// a duration (1e300ttl) is the longest duration (Within refuses it).
func (s Span) Resolve(ttl time.Duration) time.Duration {
	if s.TTL != 0 {
		if x := s.TTL * float64(ttl); x < math.MaxInt64 {
			return time.Duration(x)
		}
		return math.MaxInt64
	}
	return s.D
}

// Within is Resolve, refusing a span too long to be a duration (about 292
// years), such as 1e300ttl.
func (s Span) Within(ttl time.Duration) (time.Duration, error) {
	if s.Resolve(ttl) == math.MaxInt64 {
		return 0, errors.New("too long: " + s.String() + " is more than a duration can hold")
	}
	return s.Resolve(ttl), nil
}

// String writes the span the way ParseSpan reads it.
func (s Span) String() string {
	if s.TTL != 0 {
		return strconv.FormatFloat(s.TTL, 'g', -1, 64) + "ttl"
	}
	return s.D.String()
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Span) UnmarshalText(b []byte) error {
	v, err := ParseSpan(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (s Span) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
