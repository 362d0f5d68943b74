// Package option holds the named parameters that locks and nemeses declare
// (`--opt NAME.KEY=VALUE` on the command line, a map in scenario files), so
// each one validates its own options and `lockchaos list` can show them.
package option

import (
	"fmt"
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
}

// Values are the options given to one lock or nemesis, after defaults.
type Values struct {
	owner string
	m     map[string]string
	ttl   time.Duration
}

// Resolve checks given against specs (an unknown key is an error that lists
// the known ones) and fills in defaults. ttl gives meaning to durations
// written as multiples of the run's TTL, such as "3ttl".
func Resolve(owner string, specs []Spec, given map[string]string, ttl time.Duration) (Values, error) {
	v := Values{owner: owner, m: map[string]string{}, ttl: ttl}
	known := map[string]bool{}
	for _, s := range specs {
		known[s.Key] = true
		v.m[s.Key] = s.Default
	}
	for k, val := range given {
		if !known[k] {
			return Values{}, fmt.Errorf("%s has no option %q; its options are: %s", owner, k, Keys(specs))
		}
		v.m[k] = val
	}
	return v, nil
}

// Keys lists the keys of specs for error messages.
func Keys(specs []Spec) string {
	if len(specs) == 0 {
		return "(none)"
	}
	var ks []string
	for _, s := range specs {
		ks = append(ks, s.Key)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// Map returns the resolved options, for recording in the history.
func (v Values) Map() map[string]string {
	out := make(map[string]string, len(v.m))
	for k, val := range v.m {
		out[k] = val
	}
	return out
}

// String returns the raw value of key.
func (v Values) String(key string) string { return v.m[key] }

// Duration parses key as a Go duration ("300ms") or a multiple of the TTL
// ("2.5ttl").
func (v Values) Duration(key string) (time.Duration, error) {
	s, err := ParseSpan(v.m[key])
	if err != nil {
		return 0, fmt.Errorf("option %s.%s=%q: %w", v.owner, key, v.m[key], err)
	}
	return s.Resolve(v.ttl), nil
}

// Int parses key as a whole number.
func (v Values) Int(key string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v.m[key]))
	if err != nil {
		return 0, v.bad(key, "a whole number")
	}
	return n, nil
}

// Bool parses key as true or false.
func (v Values) Bool(key string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v.m[key]))
	if err != nil {
		return false, v.bad(key, "true or false")
	}
	return b, nil
}

func (v Values) bad(key, want string) error {
	return fmt.Errorf("option %s.%s=%q: want %s", v.owner, key, v.m[key], want)
}

// Split parses "NAME.KEY=VALUE" assignments into per-name maps.
func Split(assignments []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, a := range assignments {
		kv := strings.SplitN(a, "=", 2)
		dot := strings.IndexByte(kv[0], '.')
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
