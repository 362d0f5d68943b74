package cli

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/option"
)

// spanFlags are the flags that take a time: a duration or, except where it
// would make no sense (--ttl itself), a multiple of the TTL, read by
// option.ParseSpan like every other time the user writes. A multiple waits
// for resolve, once the run's TTL is final.
type spanFlags []*spanValue

type spanValue struct {
	dst   *time.Duration
	span  option.Span
	name  string
	set   bool
	noTTL bool // a plain duration only
}

// Var defines a span flag that writes to dst; def is its default.
func (sf *spanFlags) Var(fs *flag.FlagSet, dst *time.Duration, name string, def time.Duration, usage string) {
	*dst = def
	v := &spanValue{dst: dst, name: name, span: option.Span{D: def}}
	*sf = append(*sf, v)
	fs.Var(v, name, usage+", a `SPAN`: 300ms, 2s or 1.5ttl")
}

// DurationVar defines a flag that takes a plain duration only.
func (sf *spanFlags) DurationVar(fs *flag.FlagSet, dst *time.Duration, name string, def time.Duration, usage string) {
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

// resolve writes the flags given as multiples of the TTL, now that it is
// known; one too long for a duration is an error naming the flag.
func (sf spanFlags) resolve(ttl time.Duration) error {
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
