package nemesis

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// A fault file (one that registers a nemesis) uses only its own code and
// the shared machinery, in files named for what it is (aim.go, links.go,
// node.go, promote.go, replication.go, ...): adding or removing a fault
// is one file.
func TestNoFaultFileUsesAnother(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	definedIn := map[string]string{} // package-level name → file
	fault := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[f] = af
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					continue
				}
				if d.Name.Name == "init" {
					ast.Inspect(d, func(n ast.Node) bool {
						if c, ok := n.(*ast.CallExpr); ok {
							if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "Register" {
								fault[f] = true
							}
						}
						return true
					})
					continue
				}
				definedIn[d.Name.Name] = f
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						definedIn[s.Name.Name] = f
					case *ast.ValueSpec:
						for _, n := range s.Names {
							definedIn[n.Name] = f
						}
					}
				}
			}
		}
	}
	if len(fault) < 10 {
		t.Fatalf("found %d fault files; the test no longer finds them", len(fault))
	}
	for f, af := range parsed {
		if !fault[f] {
			continue
		}
		// Unresolved: the names a file uses but does not declare itself,
		// package-level names of other files among them.
		for _, id := range af.Unresolved {
			if g := definedIn[id.Name]; g != "" && g != f && fault[g] {
				t.Errorf("%s uses %s, defined in the fault file %s: move it to a shared file named for what it is", f, id.Name, g)
			}
		}
	}
}
