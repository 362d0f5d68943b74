package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/scenarios"
)

// TestRunPageShowsTheWitness: a violation's page tells its first overlap's
// story (explain.Witness); a safe run's has no such section.
func TestRunPageShowsTheWitness(t *testing.T) {
	if html := pageOf(t, pausedPastTTL()); !strings.Contains(html, `<h2 id="witness">Witness</h2>`) || !strings.Contains(html, "pause-client (client 2)") {
		t.Errorf("the page has no witness naming the pause")
	}
	if strings.Contains(pageOf(t, quiet()), `id="witness"`) {
		t.Errorf("a safe run's page has a witness")
	}
}

// TestIndexOffersToShrinkEveryViolation: every violation cell of a matrix
// shows the command that shrinks it, and links its shrink once there is one.
func TestIndexOffersToShrinkEveryViolation(t *testing.T) {
	dir := t.TempDir()
	sum := scenarios.Summary{Outcome: scenarios.OutcomeMismatch, Cells: []scenarios.CellResult{
		{Name: "broken", Kind: scenarios.KindCatalogue, Expect: "safe", Verdict: "violation", Got: "violation", Status: scenarios.StatusMismatch, Dir: "broken"},
		{Name: "fine", Kind: scenarios.KindCatalogue, Expect: "violation", Verdict: "violation", Got: "violation", Status: scenarios.StatusMatch, Dir: "fine"},
		{Name: "quiet", Kind: scenarios.KindCatalogue, Expect: "safe", Verdict: "safe", Got: "safe", Status: scenarios.StatusMatch, Dir: "quiet"},
	}}
	os.MkdirAll(filepath.Join(dir, "broken.shrink"), 0o755)
	os.WriteFile(filepath.Join(dir, "broken.shrink", "minimal.yaml"), []byte("x"), 0o644)
	page, err := WriteIndex(dir, sum)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(page)
	html := string(b)
	for _, want := range []string{
		`<code>lockchaos shrink ` + filepath.Join(dir, "fine") + `</code>`,
		`<code>lockchaos shrink ` + filepath.Join(dir, "broken") + `</code> — shrunk: <a href="broken.shrink/minimal.yaml">minimal.yaml</a>`,
		`Shrunk: <a href="broken.shrink/minimal.yaml">`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the index lacks %s", want)
		}
	}
	if strings.Contains(html, "lockchaos shrink "+filepath.Join(dir, "quiet")) {
		t.Errorf("the index offers to shrink a safe cell")
	}
}
