// Package option holds the named parameters that locks and nemeses declare
// (`--opt NAME.KEY=VALUE` on the command line, a map in scenario files).
//
// A lock or nemesis declares its options as the tagged fields of a struct,
// the way toxiproxy's toxics carry theirs; Decode fills such a struct once,
// from the defaults and what the user gave, and the code reads plain fields
// from then on. `lockchaos list` and the docs show Specs of the same struct.
//
//	type Latency struct {
//		Delay  time.Duration `opt:"delay" default:"0.25ttl" help:"added delay per direction"`
//		Stream string        `opt:"stream" default:"both" oneof:"upstream,downstream,both" help:"…"`
//	}
//
// Field types:
//   - time.Duration: a Span (a duration or a multiple of the TTL), resolved
//     against the run's TTL; *time.Duration is nil when the value is "";
//   - int, float64, bool, string (`oneof:"a,b"` lists the allowed values);
//   - any type whose pointer implements encoding.TextUnmarshaler (Span,
//     Fraction, a package's own enums), whose error says what it wants.
//
// A struct that has a Validate() error method gets it called after decoding,
// for checks that involve several fields.
package option

import (
	"encoding"
	"fmt"
	"github.com/lockchaos/lockchaos/internal/suggest"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Spec declares one option: its key, default and a line of help.
type Spec struct {
	Key     string
	Default string
	Help    string
	// OneOf lists the allowed values of an enumerated option.
	OneOf []string
	// Margin, on a nemesis's option, marks it as the fault's size, the one
	// `lockchaos margin` varies, and gives the range it searches by
	// default: "LOW..HIGH" (tag margin:"0.1ttl..4ttl").
	Margin string
}

// Validator is a config struct with checks that involve several fields.
type Validator interface {
	Validate() error
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	unmarshaler  = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Specs lists the options that the config struct cfg (a struct or a pointer
// to one; nil for none) declares, in field order. A malformed declaration
// is a programming error and panics at start-up.
func Specs(cfg any) []Spec {
	if cfg == nil {
		return nil
	}
	if d, ok := declared(cfg); ok {
		return d.specs()
	}
	t := reflect.TypeOf(cfg)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("option.Specs: %s is not a struct", t))
	}
	var out []Spec
	seen := map[string]bool{}
	for _, f := range fields(t) {
		key := f.Tag.Get("opt")
		if !f.IsExported() || !decodable(f.Type) || key == "" || seen[key] {
			panic(fmt.Sprintf("option.Specs: field %s.%s (%s) cannot hold option %q (unexported, of a type Decode cannot fill, or a key declared twice)", t, f.Name, f.Type, key))
		}
		seen[key] = true
		s := Spec{Key: key, Default: f.Tag.Get("default"), Help: f.Tag.Get("help"), Margin: f.Tag.Get("margin")}
		if o := f.Tag.Get("oneof"); o != "" {
			s.OneOf = strings.Split(o, ",")
		}
		out = append(out, s)
	}
	return out
}

// fields lists the option fields of struct type t, those of embedded
// structs without an opt tag in their place (Index is the path to each).
func fields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("opt"); ok {
			out = append(out, f)
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for _, sub := range fields(f.Type) {
				sub.Index = append([]int{i}, sub.Index...)
				out = append(out, sub)
			}
		}
	}
	return out
}

func decodable(t reflect.Type) bool {
	if t == durationType || t == reflect.PointerTo(durationType) || reflect.PointerTo(t).Implements(unmarshaler) {
		return true
	}
	switch t.Kind() {
	case reflect.Int, reflect.Float64, reflect.Bool, reflect.String:
		return true
	}
	return false
}

// Fresh returns a pointer to a new zero value of proto's type (proto a
// config struct), or nil for a nil proto: what Decode fills.
func Fresh(proto any) any {
	if proto == nil {
		return nil
	}
	if d, ok := declared(proto); ok {
		return &Declared{Options: d.Options}
	}
	return reflect.New(reflect.TypeOf(proto)).Interface()
}

// Decode fills cfg, a pointer to a config struct (nil for none), from its
// defaults overlaid with given, and returns the values it used, for the
// record. owner names the lock or nemesis in errors: an unknown key lists
// the known ones, a bad value says what it wants. ttl gives meaning to
// durations written as multiples of the TTL ("3ttl").
func Decode(owner string, cfg any, given map[string]string, ttl time.Duration) (map[string]string, error) {
	specs := Specs(cfg)
	used := map[string]string{}
	known := map[string]bool{}
	for _, s := range specs {
		known[s.Key] = true
		used[s.Key] = s.Default
	}
	for _, k := range sortedKeys(given) {
		if !known[k] {
			return nil, fmt.Errorf("%s has no option %q%s; its options are: %s", owner, k, suggest.Hint(k, KeyList(specs), "%s"), Keys(specs))
		}
		used[k] = given[k]
	}
	if cfg == nil {
		return used, nil
	}
	if d, ok := declared(cfg); ok {
		return used, d.fill(owner, used, ttl)
	}
	v := reflect.ValueOf(cfg).Elem()
	for i, f := range fields(v.Type()) {
		spec := specs[i]
		if err := set(v.FieldByIndex(f.Index), spec, used[spec.Key], ttl); err != nil {
			return nil, fmt.Errorf("option %s.%s=%q: %w", owner, spec.Key, used[spec.Key], err)
		}
	}
	if val, ok := cfg.(Validator); ok {
		if err := val.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", owner, err)
		}
	}
	return used, nil
}

func set(f reflect.Value, spec Spec, raw string, ttl time.Duration) error {
	switch {
	case f.Type() == durationType:
		d, err := resolve(raw, ttl)
		f.SetInt(int64(d))
		return err
	case f.Type() == reflect.PointerTo(durationType):
		if strings.TrimSpace(raw) == "" {
			f.SetZero()
			return nil
		}
		d, err := resolve(raw, ttl)
		f.Set(reflect.ValueOf(&d))
		return err
	case f.Addr().Type().Implements(unmarshaler):
		return f.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(strings.TrimSpace(raw)))
	}
	raw = strings.TrimSpace(raw)
	switch f.Kind() {
	case reflect.Int:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return fmt.Errorf("want a whole number")
		}
		f.SetInt(int64(n))
	case reflect.Float64:
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Errorf("want a number")
		}
		f.SetFloat(x)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		f.SetBool(b)
	case reflect.String:
		if len(spec.OneOf) > 0 && !slices.Contains(spec.OneOf, raw) {
			return fmt.Errorf("want %s", orList(spec.OneOf))
		}
		f.SetString(raw)
	}
	return nil
}

// resolve reads a Span and resolves it under ttl, refusing one too long to
// be a duration.
func resolve(raw string, ttl time.Duration) (time.Duration, error) {
	s, err := ParseSpan(raw)
	if err != nil {
		return 0, err
	}
	return s.Within(ttl)
}

// Fraction is a number from 0 up to, not including, 1 (a drift factor).
type Fraction float64

// UnmarshalText implements encoding.TextUnmarshaler.
func (f *Fraction) UnmarshalText(b []byte) error {
	x, err := strconv.ParseFloat(string(b), 64)
	if err != nil || x < 0 || x >= 1 {
		return fmt.Errorf("want a fraction from 0 up to 1, such as 0.01")
	}
	*f = Fraction(x)
	return nil
}

// Keys lists the keys of specs for error messages.
func Keys(specs []Spec) string {
	if len(specs) == 0 {
		return "(none)"
	}
	return strings.Join(KeyList(specs), ", ")
}

// KeyList is the specs' keys, sorted.
func KeyList(specs []Spec) []string {
	var ks []string
	for _, s := range specs {
		ks = append(ks, s.Key)
	}
	sort.Strings(ks)
	return ks
}

// Split parses "NAME.KEY=VALUE" assignments into per-name maps. A key has
// no dot, a name may (a lock named for its version:
// redisson-rlock-3.43.0.lease=1s): the last dot ends the name.
func Split(assignments []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, a := range assignments {
		kv := strings.SplitN(a, "=", 2)
		dot := strings.LastIndexByte(kv[0], '.')
		if len(kv) != 2 || dot <= 0 || dot == len(kv[0])-1 {
			return nil, fmt.Errorf("--opt %q: want NAME.KEY=VALUE, e.g. --opt pause-client.duration=3ttl", a)
		}
		name, key := kv[0][:dot], kv[0][dot+1:]
		if out[name] == nil {
			out[name] = map[string]string{}
		}
		out[name][key] = kv[1]
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// orList writes "a, b or c".
func orList(vs []string) string {
	if len(vs) == 1 {
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// Merged is base with over set on top, a new map.
func Merged(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
