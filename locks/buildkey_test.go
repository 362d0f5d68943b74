package locks

import (
	"os"
	"path/filepath"
	"testing"
)

// A build that reads another folder's sources (redisson-rlock-3.43.0's
// `mvn -f ../redisson-rlock/pom.xml` at another version) is a new build
// when a source there changes, and not when that folder's own build
// writes its target/: else the older version's adapter ran its old code
// after the shared source changed (found 2026-11-29: its stale jar
// answered a cancel request "unknown request type").
func TestABuildIsNewWhenAFolderItsBuildReadsChanges(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("shared/pom.xml", "<project/>\n")
	write("shared/src/Adapter.java", "class Adapter {}\n")
	write("old/lock.yaml", "name: old\n")
	m := &Manifest{Name: "old", Dir: filepath.Join(root, "old"), Command: []string{"java", "-jar", "target/a.jar"},
		Build: []string{"mvn", "-q", "-f", "../shared/pom.xml", "package", "-Dx=1"}}
	key := func() string {
		t.Helper()
		k, err := m.BuildKey()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	before := key()
	write("shared/target/a.jar", "built by the shared folder's own build\n")
	if key() != before {
		t.Error("the shared folder's target/ changed the key: every build there would rebuild this one")
	}
	write("shared/src/Adapter.java", "class Adapter { void cancel() {} }\n")
	if key() == before {
		t.Error("a source in the folder the build reads (-f ../shared/pom.xml) changed, and the key did not")
	}
}
