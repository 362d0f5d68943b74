// Package yamlfile reads the YAML files a user writes (scenario and grid
// files, an adapter's lock.yaml) strictly: an unknown field or a value of
// the wrong kind is an error naming the file, the line, the field's path,
// what is allowed there and the field it was probably meant to be, rather
// than yaml.v3's text naming Go types.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lockchaos/lockchaos/internal/suggest"
)

// FieldError is a problem with one field of a file.
type FieldError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Field, e.Msg)
}

// KeyChecker is a mapping type whose keys are checked one by one by its
// own rule instead of walked as a Go map: settings.Section, whose keys are
// the settings of the section by their file tags.
type KeyChecker interface {
	// CheckKey says what is wrong with key: n in the section named
	// section (the last part of its path), or nil.
	CheckKey(section, key string, n *yaml.Node) error
}

var (
	yamlNodeType    = reflect.TypeOf(yaml.Node{})
	keyCheckerType  = reflect.TypeOf((*KeyChecker)(nil)).Elem()
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// Unmarshals says whether t reads itself from YAML (yaml.Unmarshaler).
func Unmarshals(t reflect.Type) bool { return reflect.PointerTo(t).Implements(unmarshalerType) }

// Decode decodes the single YAML document in b into out (a pointer to a
// struct). It first walks the document against out's type, so that an
// unknown field or a value of the wrong kind is reported with its line, its
// path and what is allowed, rather than as yaml.v3's Go type names. It
// returns the line of every field path, for later checks of values.
func Decode(name string, b []byte, out any) (map[string]int, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the file is empty", name)
		}
		return nil, fmt.Errorf("%s: not valid YAML (quote a value that holds \": \"): %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: want one YAML document, found more (a second ---)", name)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	w := walker{file: name, lines: map[string]int{}}
	w.walk(root, reflect.TypeOf(out).Elem(), "")
	if len(w.errs) > 0 {
		return nil, errors.Join(w.errs...)
	}
	// The walk has checked every field; KnownFields is the safety net.
	strict := yaml.NewDecoder(bytes.NewReader(b))
	strict.KnownFields(true)
	if err := strict.Decode(out); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return w.lines, nil
}

type walker struct {
	file  string
	lines map[string]int
	errs  []error
}

func (w *walker) fail(n *yaml.Node, path, format string, args ...any) {
	field := path
	if field == "" {
		field = "(top level)"
	}
	w.errs = append(w.errs, &FieldError{File: w.file, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if path != "" {
		w.lines[path] = n.Line
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value leaves the default
	}
	switch {
	case t.Implements(keyCheckerType):
		if n.Kind != yaml.MappingNode {
			w.fail(n, path, "want a mapping of settings")
			return
		}
		check := reflect.Zero(t).Interface().(KeyChecker)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := Join(path, k.Value)
			w.lines[sub] = v.Line
			if seen[k.Value] {
				w.fail(k, sub, "given twice")
				continue
			}
			seen[k.Value] = true
			if err := check.CheckKey(SectionName(path), k.Value, v); err != nil {
				w.fail(k, sub, "%s", err)
			}
		}
		return
	case t == yamlNodeType:
		if n.Kind != yaml.ScalarNode {
			w.fail(n, path, "want a plain value")
		}
		return
	case Unmarshals(t):
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			w.fail(n, path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		w.walk(n, t.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.fail(n, path, "want a mapping with the fields %s", strings.Join(Fields(t), ", "))
			return
		}
		fields := map[string]reflect.StructField{}
		for i := 0; i < t.NumField(); i++ {
			if tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
				fields[tag] = t.Field(i)
			}
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := Join(path, k.Value)
			f, ok := fields[k.Value]
			switch {
			case !ok:
				w.fail(k, sub, "unknown field; allowed here: %s%s", strings.Join(Fields(t), ", "), suggest.Hint(k.Value, Fields(t), "%s"))
				continue
			case seen[k.Value]:
				w.fail(k, sub, "given twice")
				continue
			}
			seen[k.Value] = true
			w.walk(v, f.Type, sub)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.fail(n, path, "want a mapping of NAME: VALUE")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				// "<<: *anchor" merges another mapping's entries here.
				w.walk(v, t, path)
				continue
			}
			w.walk(v, t.Elem(), Join(path, k.Value))
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.fail(n, path, "want a list (lines starting with -)")
			return
		}
		for i, e := range n.Content {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.fail(n, path, "want a plain value, not a list or mapping")
		}
	case reflect.Int, reflect.Int64, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			w.fail(n, path, "%q: want a whole number", n.Value)
		}
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			w.fail(n, path, "%q: want a number", n.Value)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			w.fail(n, path, "%q: want true or false", n.Value)
		}
	default:
		w.fail(n, path, "unsupported field type %s", t) // a bug in the caller's types
	}
}

// SectionName is the name of the section at path (cell.workload: workload).
func SectionName(path string) string { return path[strings.LastIndex(path, ".")+1:] }

// Join is the path of key under path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Fields lists the YAML names of t's fields, in declaration order.
func Fields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}
