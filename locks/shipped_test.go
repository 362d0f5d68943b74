package locks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Inside the repository its adapters/ is the one used (developers edit
// it); another project's adapters/ laid out the same way (a lock
// library's) does not hide the shipped locks: there the binary's own are
// unpacked into the cache; $LOCKCHAOS_ADAPTERS wins over both.
func TestAdaptersDirIsTheRepositorysOrTheCarriedOnes(t *testing.T) {
	t.Setenv(AdaptersEnv, "")
	repo, err := filepath.Abs(filepath.Join("..", "adapters"))
	if err != nil {
		t.Fatal(err)
	}
	if got := AdaptersDir(); got != repo {
		t.Errorf("in the repository: %q, want %q", got, repo)
	}
	other, cache := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	yaml := filepath.Join(other, "adapters", "go", "mine", "lock.yaml")
	if err := os.MkdirAll(filepath.Dir(yaml), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, b := range map[string]string{yaml: "name: mine\ncommand: [./mine]\n", filepath.Join(other, "go.mod"): "module example.com/mine\n"} {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(filepath.Join(other, "adapters"))
	got := AdaptersDir()
	if !strings.HasPrefix(got, filepath.Join(cache, "lockchaos", "adapters")+string(filepath.Separator)) {
		t.Fatalf("in another project: %q, want the carried adapters unpacked under %s", got, cache)
	}
	if _, err := os.Stat(filepath.Join(got, "python", "redis-py-lock", "lock.yaml")); err != nil {
		t.Errorf("the carried adapters: %v", err)
	}
	t.Setenv(AdaptersEnv, filepath.Join(other, "adapters"))
	if got := AdaptersDir(); got != filepath.Join(other, "adapters") {
		t.Errorf("with $%s: %q", AdaptersEnv, got)
	}
}
