package runner

import (
	"strings"
	"testing"
	"time"
)

// In a log, status lines thin out as a run gets longer; lines written to
// progress stay whatever the status.
func TestProgressThinsOutInALog(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := newProgress(&b)
	statuses := 0
	for elapsed := 2 * time.Second; elapsed <= time.Hour; elapsed += 2 * time.Second {
		p.tick(elapsed, "status")
		if elapsed == 10*time.Minute {
			p.Write([]byte("a line that stays\n"))
		}
	}
	p.end()
	statuses = strings.Count(b.String(), "status\n")
	// 15 in the first 30 s, 27 to 5 min, 55 to 1 h: not one every 2 s (1,800).
	if statuses < 60 || statuses > 110 {
		t.Errorf("an hour's run printed %d status lines, want about 100:\n%s", statuses, b.String())
	}
	if !strings.Contains(b.String(), "a line that stays\n") || strings.Contains(b.String(), "\r") {
		t.Errorf("log output:\n%q", b.String())
	}
}

// On a terminal the status is one line, rewritten in place; a line that
// stays goes above it, and the end leaves the last status shown.
func TestProgressKeepsOneStatusLineOnATerminal(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := &progress{w: &b, tty: true}
	p.tick(2*time.Second, "2s")
	p.tick(4*time.Second, "4s")
	p.Write([]byte("violation seen live\n"))
	p.tick(6*time.Second, "6s")
	p.end()
	want := "\r\033[K2s\r\033[K4s\r\033[Kviolation seen live\n4s\r\033[K6s\n"
	if b.String() != want {
		t.Errorf("terminal output %q, want %q", b.String(), want)
	}
}
