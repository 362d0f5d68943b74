// Package browser renders the project's HTML pages in headless Chromium
// for the tests that assert on them: the DOM it dumps (scripts run, CSS
// applies) and the screenshots it takes.
package browser

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/logtail"
)

// Chromium finds the browser. A missing browser fails the test: skipping
// would let the pages go untested without anyone noticing.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("headless Chromium is needed to test the HTML reports and was not found: run `make setup` " +
		"(as root it installs Debian's chromium package; otherwise it says what to install)")
	return ""
}

// Browse runs Chromium on the file page with extra flags (--dump-dom,
// --screenshot=…, --window-size=… to replace the default 1280×1600) and
// returns what it printed.
func Browse(t testing.TB, page string, extra ...string) string {
	t.Helper()
	bin := Chromium(t)
	profile := t.TempDir() // a fresh profile each time: no state between runs
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	// The networking flags keep Chromium from reaching out (it is refused
	// here anyway, and a report must not need the network).
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--window-size=1280,1600"}
	args = append(args, extra...)
	args = append(args, "file://"+abs)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, strings.Join(logtail.Lines(errb.Bytes(), 10, nil), "\n"))
	}
	return out.String()
}

// ScreenshotsEnv, set to 1, makes the tests that take the screenshots the
// docs show write them there (Publish): `make screenshots` sets it. A plain
// test run leaves them in the test's artifact folder, so that it leaves the
// checkout as it found it.
const ScreenshotsEnv = "LOCKCHAOS_DOCS_SCREENSHOTS"

// Publish writes the screenshot shot to docs, a path of the checkout's
// (relative to the test's package), when ScreenshotsEnv is 1, and otherwise
// only logs where the test left it.
func Publish(t testing.TB, shot, docs string) {
	t.Helper()
	if os.Getenv(ScreenshotsEnv) != "1" {
		t.Logf("screenshot: %s (%s=1, as make screenshots sets it, writes it to %s)", shot, ScreenshotsEnv, docs)
		return
	}
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(docs, b, 0o644); err != nil {
		t.Fatalf("write the screenshot: %v", err)
	}
	t.Logf("screenshot: %s", docs)
}

// Elements returns the attributes of every start tag of the given name
// whose attributes match filter (nil: all), in the DOM Chromium dumped.
func Elements(dom, tag string, filter func(map[string]string) bool) []map[string]string {
	var out []map[string]string
	attr := regexp.MustCompile(`([a-zA-Z_:][-a-zA-Z0-9_:.]*)="([^"]*)"`)
	for _, m := range regexp.MustCompile(`<`+tag+`\b([^>]*)>`).FindAllStringSubmatch(dom, -1) {
		a := map[string]string{}
		for _, kv := range attr.FindAllStringSubmatch(m[1], -1) {
			a[kv[1]] = strings.ReplaceAll(kv[2], "&amp;", "&")
		}
		if filter == nil || filter(a) {
			out = append(out, a)
		}
	}
	return out
}

// CountColor counts the pixels of the PNG at path that have the colour
// #rrggbb.
func CountColor(t testing.TB, path, hex string) int {
	t.Helper()
	var r, g, b uint8
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b); err != nil {
		t.Fatalf("colour %q: want #rrggbb", hex)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the screenshot was not written: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if uint8(pr>>8) == r && uint8(pg>>8) == g && uint8(pb>>8) == b {
				n++
			}
		}
	}
	return n
}
