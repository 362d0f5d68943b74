package option

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Declared is a config whose options are data rather than struct fields:
// an adapter lock's manifest declares them (docs/protocol.md). Specs, Fresh
// and Decode take a Declared (or a pointer to one) like a config struct.
// Decode fills Values with every option's value as the adapter receives it:
// a string, a duration in whole milliseconds, an int or a bool, checked
// against the declaration.
type Declared struct {
	Options []DeclaredOption
	// Values, after Decode: key → the value sent to the adapter.
	Values map[string]string
}

// DeclaredOption is one option of a Declared config.
type DeclaredOption struct {
	Spec
	// Kind is "string" (or ""), "duration", "int" or "bool".
	Kind string
}

// Kinds of a DeclaredOption.
const (
	KindString   = "string"
	KindDuration = "duration"
	KindInt      = "int"
	KindBool     = "bool"
)

// CheckKind says whether kind is one a DeclaredOption may have.
func CheckKind(kind string) error {
	switch kind {
	case "", KindString, KindDuration, KindInt, KindBool:
		return nil
	}
	return fmt.Errorf("kind %q: want string, duration, int or bool", kind)
}

func declared(cfg any) (*Declared, bool) {
	switch d := cfg.(type) {
	case Declared:
		return &d, true
	case *Declared:
		return d, true
	}
	return nil, false
}

func (d *Declared) specs() []Spec {
	out := make([]Spec, len(d.Options))
	for i, o := range d.Options {
		out[i] = o.Spec
	}
	return out
}

// fill sets d.Values from used (every key, defaults included).
func (d *Declared) fill(owner string, used map[string]string, ttl time.Duration) error {
	d.Values = map[string]string{}
	for _, o := range d.Options {
		raw := strings.TrimSpace(used[o.Key])
		v, err := declaredValue(o, raw, ttl)
		if err != nil {
			return fmt.Errorf("option %s.%s=%q: %w", owner, o.Key, used[o.Key], err)
		}
		d.Values[o.Key] = v
	}
	return nil
}

func declaredValue(o DeclaredOption, raw string, ttl time.Duration) (string, error) {
	switch o.Kind {
	case KindDuration:
		if raw == "" {
			return "", nil
		}
		dur, err := resolve(raw, ttl)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(dur.Milliseconds(), 10), nil
	case KindInt:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return "", fmt.Errorf("want a whole number")
		}
		return strconv.Itoa(n), nil
	case KindBool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return "", fmt.Errorf("want true or false")
		}
		return strconv.FormatBool(b), nil
	}
	if len(o.OneOf) > 0 {
		for _, v := range o.OneOf {
			if v == raw {
				return raw, nil
			}
		}
		return "", fmt.Errorf("want %s", orList(o.OneOf))
	}
	return raw, nil
}
