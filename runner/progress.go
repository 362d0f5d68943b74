package runner

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress is where a run says how it is going. Lines written to it stay;
// the status (time, acquires, holds, faults) is one line kept up to date
// on a terminal, and elsewhere (a CI log) a line every 2 s at first, less
// often as the run gets longer (progressGap): an hour's soak prints 80
// lines, not 1,800.
type progress struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool
	// status is the status line on screen, without its newline (tty).
	status string
	// next is the elapsed time from which the next status line is due
	// (not a tty).
	next time.Duration
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok && os.Getenv("TERM") != "dumb" {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// Write writes lines that stay: on a terminal, above the status line.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status != "" {
		fmt.Fprint(p.w, "\r\033[K")
	}
	n, err := p.w.Write(b)
	if p.status != "" {
		fmt.Fprint(p.w, p.status)
	}
	return n, err
}

// tick offers the status at elapsed: shown on a terminal at once, in
// place of the last; elsewhere only when it is due.
func (p *progress) tick(elapsed time.Duration, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		p.status = strings.TrimRight(line, "\n")
		fmt.Fprint(p.w, "\r\033[K"+p.status)
		return
	}
	if elapsed+time.Second/2 < p.next {
		return
	}
	p.next = elapsed + progressGap(elapsed)
	fmt.Fprintln(p.w, strings.TrimRight(line, "\n"))
}

// end ends the status line on a terminal, leaving the last one shown.
func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status != "" {
		fmt.Fprintln(p.w)
		p.status = ""
	}
}

// progressGap is the time from one status line to the next in a log, at
// elapsed: 2 s in the first 30 s, 10 s to 5 min, 1 min to 1 h, then 5 min.
func progressGap(elapsed time.Duration) time.Duration {
	switch {
	case elapsed < 30*time.Second:
		return 2 * time.Second
	case elapsed < 5*time.Minute:
		return 10 * time.Second
	case elapsed < time.Hour:
		return time.Minute
	}
	return 5 * time.Minute
}
