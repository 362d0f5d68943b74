package settings

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lockchaos/lockchaos/internal/suggest"
	"github.com/lockchaos/lockchaos/option"
)

// Section is a section of a scenario or grid file that gives settings by
// their file tags — the workload section's keys are the settings tagged
// file:"workload.KEY" — each value as written, with its line. The file's
// loader checks each key where it reads it (CheckKey) and Apply writes
// them, so a setting declared with a file tag needs no line in the loader.
type Section map[string]yaml.Node

// SectionField is a setting a section may give: its key in the section,
// the kind of value (integer, number, boolean, string, span: a duration or
// a multiple of the TTL, duration: a plain one) and its help.
type SectionField struct {
	Key, Kind, Help string
	index           []int // in Run
}

// SectionFields are the settings the section name gives (workload), in
// their order of declaration.
func SectionFields(name string) []SectionField {
	var out []SectionField
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			at := append(slices.Clone(index), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, at)
				continue
			}
			key, ok := strings.CutPrefix(f.Tag.Get("file"), name+".")
			if !ok || strings.Contains(key, ".") {
				continue
			}
			kind := map[reflect.Kind]string{reflect.Int: "integer", reflect.Int64: "integer", reflect.Float64: "number", reflect.Bool: "boolean", reflect.String: "string"}[f.Type.Kind()]
			if f.Type == reflect.TypeFor[time.Duration]() {
				kind = "span"
				if f.Tag.Get("span") == "plain" {
					kind = "duration"
				}
			}
			if kind == "" {
				panic(fmt.Sprintf("settings: no section value for %s (%s)", f.Name, f.Type))
			}
			out = append(out, SectionField{Key: key, Kind: kind, Help: strings.NewReplacer("{", "", "}", "").Replace(f.Tag.Get("help")), index: at})
		}
	}
	walk(reflect.TypeFor[Run](), nil)
	return out
}

// Over is s with over's keys in place of its own: a lock's, a fault's or
// a cell's section on top of the grid's.
func (s Section) Over(over Section) Section {
	out := maps.Clone(s)
	if out == nil {
		out = Section{}
	}
	maps.Copy(out, over)
	return out
}

// With is s with key set to value, as if written so.
func (s Section) With(key, value string) Section {
	// No tag: the value's kind is resolved as YAML would (clients: 4 is
	// an int).
	return s.Over(Section{key: yaml.Node{Kind: yaml.ScalarNode, Value: value}})
}

// KeyError is a bad key or value of a section, by its key there.
type KeyError struct{ Key, Msg string }

func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

// field is the setting key gives in the section name.
func field(name, key string) (SectionField, error) {
	var keys []string
	for _, f := range SectionFields(name) {
		if f.Key == key {
			return f, nil
		}
		keys = append(keys, f.Key)
	}
	return SectionField{}, fmt.Errorf("unknown field; allowed here: %s%s", strings.Join(keys, ", "), suggest.Hint(key, keys, "%s"))
}

// read reads n as f's value: an int64, a float64, a bool, a string or an
// option.Span (unresolved); nil for an empty value.
func (f SectionField) read(n *yaml.Node) (any, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("want a plain value, not a list or mapping")
	}
	if n.ShortTag() == "!!null" {
		return nil, nil
	}
	text, tag := strings.TrimSpace(n.Value), n.ShortTag()
	switch f.Kind {
	case "integer":
		if x, err := strconv.ParseInt(text, 0, 64); err == nil && tag == "!!int" {
			return x, nil
		}
		return nil, fmt.Errorf("%q: want a whole number", n.Value)
	case "number":
		if x, err := strconv.ParseFloat(text, 64); err == nil && (tag == "!!int" || tag == "!!float") {
			return x, nil
		}
		return nil, fmt.Errorf("%q: want a number", n.Value)
	case "boolean":
		var b bool
		if tag != "!!bool" || n.Decode(&b) != nil {
			return nil, fmt.Errorf("%q: want true or false", n.Value)
		}
		return b, nil
	case "string":
		return text, nil
	}
	sp, err := option.ParseSpan(text)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q: %w", text, err)
	case sp.TTL != 0 && f.Kind == "duration":
		return nil, fmt.Errorf("cannot be a multiple of the TTL: want a duration such as 300ms")
	}
	return sp, nil
}

// CheckKey says what is wrong with key: n in the section name, or nil: a
// file's loader checks every key where it reads it, with its line.
func CheckKey(name, key string, n *yaml.Node) error {
	f, err := field(name, key)
	if err == nil {
		_, err = f.read(n)
	}
	return err
}

// CheckKey is the package's CheckKey, by which yamlfile.Decode checks a
// section's keys where it reads them, with their lines.
func (Section) CheckKey(name, key string, n *yaml.Node) error { return CheckKey(name, key, n) }

// Apply writes into r the settings s gives of the section name; a time
// written as a multiple of the TTL is resolved with the TTL s leaves in r
// (plain durations, the TTL among them, are applied first). An empty value
// leaves the setting as it was.
func (s Section) Apply(r *Run, name string) []error {
	var errs []error
	rank := func(key string) int { // plain durations (the TTL) first
		if f, _ := field(name, key); f.Kind == "duration" {
			return 0
		}
		return 1
	}
	keys := slices.Sorted(maps.Keys(s))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(rank(a), rank(b)) })
	for _, key := range keys {
		n := s[key]
		f, err := field(name, key)
		var x any
		if err == nil {
			x, err = f.read(&n)
		}
		if sp, ok := x.(option.Span); ok && err == nil {
			x, err = sp.Within(r.TTL)
		}
		if err != nil {
			errs = append(errs, &KeyError{Key: key, Msg: err.Error()})
			continue
		}
		dst := reflect.ValueOf(r).Elem().FieldByIndex(f.index)
		switch x := x.(type) {
		case int64:
			dst.SetInt(x)
		case float64:
			dst.SetFloat(x)
		case bool:
			dst.SetBool(x)
		case string:
			dst.SetString(x)
		case time.Duration:
			dst.SetInt(int64(x))
		}
	}
	return errs
}
