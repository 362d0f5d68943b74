package settings

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/option"
)

// Spans are the flags that take a time: a duration or, except where it
// would make no sense (--ttl itself), a multiple of the TTL, read by
// option.ParseSpan like every other time the user writes. A multiple waits
// for Resolve, once the run's TTL is final.
type Spans []*spanValue

type spanValue struct {
	dst   *time.Duration
	span  option.Span
	name  string
	set   bool
	noTTL bool // a plain duration only
}

// Var defines a span flag that writes to dst; def is its default.
func (sf *Spans) Var(fs *flag.FlagSet, dst *time.Duration, name string, def time.Duration, usage string) {
	*dst = def
	v := &spanValue{dst: dst, name: name, span: option.Span{D: def}}
	*sf = append(*sf, v)
	fs.Var(v, name, usage+", a `SPAN`: 300ms, 2s or 1.5ttl")
}

// DurationVar defines a flag that takes a plain duration only.
func (sf *Spans) DurationVar(fs *flag.FlagSet, dst *time.Duration, name string, def time.Duration, usage string) {
	*dst = def
	v := &spanValue{dst: dst, name: name, span: option.Span{D: def}, noTTL: true}
	*sf = append(*sf, v)
	fs.Var(v, name, usage+", a `DURATION`: 300ms or 2s")
}

func (v *spanValue) String() string {
	if v == nil || v.dst == nil {
		return ""
	}
	return v.span.String()
}

func (v *spanValue) Set(s string) error {
	span, err := option.ParseSpan(s)
	if err != nil && v.noTTL {
		if _, nerr := strconv.ParseFloat(strings.TrimSpace(s), 64); nerr == nil {
			s = strings.TrimSpace(s)
			return fmt.Errorf("want a plain duration such as 300ms or 2s (a number needs a unit: %sms or %ss)", s, s)
		}
		return errors.New("want a plain duration such as 300ms or 2s")
	}
	if err != nil {
		return err
	}
	if v.noTTL && span.TTL != 0 {
		return errors.New("want a plain duration such as 300ms (not a multiple of the TTL)")
	}
	v.span, v.set = span, true
	*v.dst = span.D
	return nil
}

// Resolve writes the flags given as multiples of the TTL, now that it is
// known; one too long for a duration is an error naming the flag.
func (sf Spans) Resolve(ttl time.Duration) error {
	for _, v := range sf {
		if v.set && v.span.TTL != 0 {
			d, err := v.span.Within(ttl)
			if err != nil {
				return fmt.Errorf("--%s: %w", v.name, err)
			}
			*v.dst = d
		}
	}
	return nil
}

// Defaults are the run's settings before any flag or scenario file: what
// `lockchaos run` shows as each flag's default.
func Defaults() Run {
	var r Run
	r.Clients, r.Keys, r.TTL, r.Hold, r.Think = DefaultClients, DefaultKeys, DefaultTTL, DefaultHold, DefaultThink
	r.Duration, r.Backend, r.Persistence = DefaultDuration, "local", "none"
	return r
}

// BindFlags defines a flag for every setting of r that has a help tag, by
// its flag tag, with r's value as its default: the settings declare their
// flags, and a new setting needs no line here. A time is a span (a
// multiple of the TTL allowed, resolved by spans.Resolve) unless its tag
// says span:"plain". The settings that are lists or maps (--nemesis,
// --opt), and --lock-file (which may be given several times), are the
// command's to parse.
func BindFlags(fs *flag.FlagSet, r *Run, spans *Spans) {
	bindFlags(fs, reflect.ValueOf(r).Elem(), spans)
}

// metavar turns {NAME} in a help tag into the flag package's `NAME`,
// which a struct tag cannot hold.
var metavar = strings.NewReplacer("{", "`", "}", "`")

func bindFlags(fs *flag.FlagSet, v reflect.Value, spans *Spans) {
	for i := 0; i < v.NumField(); i++ {
		f, fv := v.Type().Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			bindFlags(fs, fv, spans)
			continue
		}
		name, help := f.Tag.Get("flag"), metavar.Replace(f.Tag.Get("help"))
		if name == "" || help == "" {
			continue
		}
		switch p := fv.Addr().Interface().(type) {
		case *time.Duration:
			if f.Tag.Get("span") == "plain" {
				spans.DurationVar(fs, p, name, *p, help)
			} else {
				spans.Var(fs, p, name, *p, help)
			}
		case *int:
			fs.IntVar(p, name, *p, help)
		case *int64:
			fs.Int64Var(p, name, *p, help)
		case *float64:
			fs.Float64Var(p, name, *p, help)
		case *bool:
			fs.BoolVar(p, name, *p, help)
		case *string:
			fs.StringVar(p, name, *p, help)
		default:
			panic(fmt.Sprintf("settings: no flag for %s (%s)", f.Name, f.Type))
		}
	}
}
