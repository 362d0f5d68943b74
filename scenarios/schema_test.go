package scenarios

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// yamlInstance is a YAML file as the JSON value a schema validates.
func yamlInstance(t *testing.T, name string, b []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// Every shipped scenario file is valid under the schema, and a file with a
// misspelt field, an unknown lock, or an option its nemesis does not have
// is not.
func TestEveryScenarioFileMatchesTheSchema(t *testing.T) {
	s := compiledSchema(t)
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, n := range names {
		if n == GridFile {
			continue
		}
		b, _ := files.ReadFile(n)
		if err := s.Validate(yamlInstance(t, n, b)); err != nil {
			t.Errorf("scenarios/%s does not match the schema: %v", n, err)
		}
		checked++
	}
	if checked < 40 {
		t.Errorf("checked %d scenario files, want every one (40 or more)", checked)
	}
	for _, bad := range []struct{ name, edit, replace string }{
		{"misspelt field", "  ttl: 300ms", "  tll: 300ms"},
		{"unknown lock", "  name: token-lua", "  name: chubby"},
		{"unknown nemesis option", "        duration: 3ttl", "        duraton: 3ttl"},
		{"bad verdict", "  verdict: violation", "  verdict: broken"},
	} {
		src := strings.Replace(valid, bad.edit, bad.replace, 1)
		if src == valid {
			t.Fatalf("%s: the edit did not apply", bad.name)
		}
		if err := s.Validate(yamlInstance(t, bad.name, []byte(src))); err == nil {
			t.Errorf("%s: the schema accepts it", bad.name)
		}
	}
	if err := s.Validate(yamlInstance(t, "valid", []byte(valid))); err != nil {
		t.Errorf("the valid test scenario does not match: %v", err)
	}
}

// The schema's closed fields list what Parse accepts: each value parses,
// and a value beside them is refused.
func TestSchemaEnumsAreWhatParseAccepts(t *testing.T) {
	for _, path := range schemaPaths() {
		section, field, _ := strings.Cut(path, ".")
		for _, v := range append(fieldValues[path], "bogus") {
			src := valid
			if section == "expect" && field == "verdict" {
				src = strings.Replace(src, "  verdict: violation", "  verdict: "+v, 1)
			} else if section == "expect" {
				src = strings.Replace(src, "  verdict: violation", "  verdict: violation\n  "+field+": "+v, 1)
			} else {
				src = strings.Replace(src, "lock:\n", section+":\n  "+field+": "+v+"\nlock:\n", 1)
			}
			_, err := Parse("scenarios/enum.yaml", []byte(src))
			if (err == nil) != (v != "bogus") {
				t.Errorf("%s: %s: error %v", path, v, err)
			}
		}
	}
}

// schemaPaths lists fieldValues' paths, in order.
func schemaPaths() []string {
	var ps []string
	for p := range fieldValues {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// docs/scenario.schema.json is Schema's output (make docs writes it).
func TestSchemaDocIsGenerated(t *testing.T) {
	want, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../docs/scenario.schema.json")
	if err != nil || !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
		t.Errorf("docs/scenario.schema.json is not what Schema() makes (run make docs): %v", err)
	}
}
