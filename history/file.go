package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// Writer appends events to a file, one write per event, so whatever was
// recorded before a crash of the coordinator is on disk.
type Writer struct {
	mu    sync.Mutex
	f     *os.File
	err   error
	path  string
	onErr func(error)
}

// OnError sets f to be called, once, with the first write error: a run
// whose history has a hole is no evidence, so it should end at once rather
// than go on for its whole duration.
func (w *Writer) OnError(f func(error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onErr = f
}

// Create opens path for appending, truncating any previous history.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create history %s: %w", path, err)
	}
	return &Writer{f: f, path: path}, nil
}

// Append writes e. The first write error is kept and returned by Close: a
// history with a hole must not be checked as if it were whole.
func (w *Writer) Append(e Event) {
	line := append(e.Marshal(), '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if _, err := w.f.Write(line); err != nil {
		w.err = fmt.Errorf("append to history %s: %w", w.path, err)
		if w.onErr != nil {
			w.onErr(w.err)
		}
	}
}

// Err returns the first write error.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close syncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Sync(); err != nil && w.err == nil {
		w.err = err
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}

// ReadFile parses a history file. A last line cut in the middle (the coordinator
// died while writing it) is dropped and reported through truncated; any other
// malformed line is an error naming its line number.
func ReadFile(path string) (events []Event, truncated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads events from r; name is used in error messages.
func Parse(r io.Reader, name string) (events []Event, truncated bool, err error) {
	br := bufio.NewReaderSize(r, 1<<20)
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e Event
			if jerr := json.Unmarshal(line, &e); jerr != nil {
				if rerr == io.EOF && !bytes.HasSuffix(line, []byte("\n")) {
					return events, true, nil
				}
				return nil, false, fmt.Errorf("%s line %d: %w", name, lineNo, jerr)
			}
			events = append(events, e)
		}
		if rerr == io.EOF {
			return events, false, nil
		}
		if rerr != nil {
			return nil, false, fmt.Errorf("read %s: %w", name, rerr)
		}
	}
}
