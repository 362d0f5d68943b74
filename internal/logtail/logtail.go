// Package logtail quotes the end of a log in an error: a server's that
// would not start, a worker's that exited before it was ready, an adapter's
// standard error. The quote is bounded, however long the log or its lines.
package logtail

import (
	"io"
	"os"
	"strings"
)

// MaxLine is the most characters of one line a quote keeps.
const MaxLine = 300

// readMax is how much of a log's end File reads.
const readMax = 64 << 10

// Lines is the last n non-empty lines of b, trimmed, each cut to MaxLine
// characters; skip, when given, leaves out the lines it returns true for.
func Lines(b []byte, n int, skip func(line string) bool) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || skip != nil && skip(l) {
			continue
		}
		if r := []rune(l); len(r) > MaxLine {
			l = string(r[:MaxLine]) + "…"
		}
		out = append(out, l)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// File is Lines of the end of the log file at path (its last 64 KiB; the
// first line read is left out when it may be cut); nil when it cannot be
// read.
func File(path string, n int, skip func(line string) bool) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	from := max(st.Size()-readMax, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, from, st.Size()-from))
	if err != nil {
		return nil
	}
	if from > 0 {
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return Lines(b, n, skip)
}
