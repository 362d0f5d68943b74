package scenarios

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/yamlfile"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/settings"
)

// SchemaID names the JSON Schema of a scenario file; docs/scenario.schema.json
// is Schema's output (make docs), for editors that complete and check YAML
// (a first line "# yaml-language-server: $schema=…" points one at it).
const SchemaID = "https://github.com/lockchaos/lockchaos/docs/scenario.schema.json"

// fieldValues are the values the scenario file's closed fields take, by
// path; Parse accepts exactly these (TestSchemaEnumsAreWhatParseAccepts).
var fieldValues = map[string][]string{
	"expect.verdict":       {string(checker.Safe), string(checker.Violation)},
	"expect.resource":      {string(checker.ResourceIntact), string(checker.ResourceFenced), string(checker.ResourceDamaged)},
	"expect.liveness":      {LivenessAvailable, LivenessStuck},
	"topology.persistence": {"none", "everysec", "always"},
	"topology.backend":     cluster.BackendNames(),
}

// Schema is the JSON Schema (draft 2020-12) of a scenario file, made from
// the same declarations as the loader: the file's fields (fileScenario),
// the locks and nemeses of this build, and each one's options with their
// help and defaults. It checks names and shapes; values (a span, a
// verdict's consistency with the rest) are the loader's to judge.
func Schema() ([]byte, error) {
	root := typeSchema(reflect.TypeOf(fileScenario{}), "")
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = "lockchaos scenario"
	root["description"] = "A run of lockchaos: a lock, a workload, faults, and (for the catalogue) what it shows and expects. scenarios/README.md explains every field."
	props := root["properties"].(map[string]any)

	// lock.name is a lock of this build; lock.options are its options.
	lock := props["lock"].(map[string]any)
	var lockNames []string
	var lockCases []any
	for _, s := range locks.All() {
		lockNames = append(lockNames, s.Name)
		lockCases = append(lockCases, optionCase(s.Name, s.OptionSpecs()))
	}
	lock["properties"].(map[string]any)["name"] = map[string]any{"enum": lockNames, "description": "the lock to test (lockchaos list locks)"}
	lock["required"] = []string{"name"}
	lock["allOf"] = lockCases

	// Each nemesis's name and options.
	nem := props["faults"].(map[string]any)["properties"].(map[string]any)["nemeses"].(map[string]any)["items"].(map[string]any)
	nemNames := []string{"none"}
	var nemCases []any
	for _, s := range nemesis.All() {
		nemNames = append(nemNames, s.Name)
		nemCases = append(nemCases, optionCase(s.Name, s.OptionSpecs()))
	}
	nem["properties"].(map[string]any)["name"] = map[string]any{"enum": nemNames, "description": "a nemesis (lockchaos list nemeses)"}
	nem["required"] = []string{"name"}
	nem["allOf"] = nemCases
	return json.MarshalIndent(root, "", "  ")
}

// optionCase says that an owner called name takes exactly specs as options.
func optionCase(name string, specs []option.Spec) map[string]any {
	opts := map[string]any{}
	for _, o := range specs {
		d := o.Help
		if o.Default != "" {
			d += " (default " + o.Default + ")"
		}
		opts[o.Key] = map[string]any{"type": []string{"string", "number", "boolean"}, "description": d}
	}
	return map[string]any{
		"if":   map[string]any{"properties": map[string]any{"name": map[string]any{"const": name}}},
		"then": map[string]any{"properties": map[string]any{"options": map[string]any{"type": "object", "properties": opts, "additionalProperties": false}}},
	}
}

// typeSchema is the schema of a field of Go type t at path, as the loader's
// walker reads it.
func typeSchema(t reflect.Type, path string) map[string]any {
	if vs, ok := fieldValues[path]; ok {
		return map[string]any{"enum": vs}
	}
	if t == reflect.TypeFor[settings.Section]() {
		// The settings the section gives, from their declarations.
		props := map[string]any{}
		for _, f := range settings.SectionFields(yamlfile.SectionName(path)) {
			if vs, ok := fieldValues[yamlfile.Join(path, f.Key)]; ok {
				props[f.Key] = map[string]any{"enum": vs, "description": f.Help}
				continue
			}
			switch f.Kind {
			case "span":
				props[f.Key] = map[string]any{"type": []string{"string", "integer"}, "description": f.Help + "; " + option.SpanHint}
			case "duration":
				props[f.Key] = map[string]any{"type": "string", "description": f.Help + "; a duration such as 300ms"}
			default:
				props[f.Key] = map[string]any{"type": f.Kind, "description": f.Help}
			}
		}
		return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	}
	if yamlfile.Unmarshals(t) {
		switch t {
		case reflect.TypeOf(Quick{}):
			return map[string]any{"type": []string{"string", "integer"}, "description": "skip, or the duration under chaos --quick"}
		}
		return map[string]any{"type": []string{"string", "integer"}, "description": option.SpanHint}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeSchema(t.Elem(), path)
	case reflect.Struct:
		props := map[string]any{}
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			props[tag] = typeSchema(t.Field(i).Type, yamlfile.Join(path, tag))
		}
		return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": typeSchema(t.Elem(), path+".*")}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem(), path+"[]")}
	case reflect.String:
		if strings.HasSuffix(path, ".*") {
			return map[string]any{"type": []string{"string", "number", "boolean"}}
		}
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	}
	return map[string]any{}
}
