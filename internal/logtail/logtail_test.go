package logtail

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A quote is the last n non-empty lines, each bounded, less those skipped.
func TestLinesAreTheLastOnesBounded(t *testing.T) {
	b := []byte("one\n\n  two  \nlockchaos 1.2: ours\nthree\n" + strings.Repeat("x", 2*MaxLine) + "\n\n")
	got := Lines(b, 3, func(l string) bool { return strings.HasPrefix(l, "lockchaos ") })
	want := []string{"two", "three", strings.Repeat("x", MaxLine) + "…"}
	if !slices.Equal(got, want) {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

// File reads only the end of a long log, and leaves out the line it may
// have cut.
func TestFileReadsTheEndOfALongLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for range 20000 {
		b.WriteString("0123456789 a line of the log\n")
	}
	b.WriteString("the last line\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := File(path, 5000, nil)
	if len(got) == 0 || len(got) >= 20000 || got[len(got)-1] != "the last line" {
		t.Fatalf("File read %d lines, the last %q", len(got), got[len(got)-1:])
	}
	for _, l := range got[:len(got)-1] {
		if l != "0123456789 a line of the log" {
			t.Fatalf("a cut line: %q", l)
		}
	}
	if File(filepath.Join(t.TempDir(), "none"), 3, nil) != nil {
		t.Error("a log that does not exist quotes something")
	}
}
