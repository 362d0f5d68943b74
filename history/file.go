package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// FlushEvery bounds how long the Writer keeps an operation event in memory.
const FlushEvery = 2 * time.Millisecond

// Writer appends events to a file. Operation events (invoke, ok, fail,
// info) are gathered in memory and written together, at most FlushEvery
// after the first of them was appended (or sooner, when 256 KiB gather):
// at the harness's full rate this makes one write(2) of many events instead
// of one per event, which was most of the coordinator's own cost. Every
// other event (run-start, fault-start and -end, worker-exit, stall,
// stretch, lost, probe, run-end) is written at once together with all
// before it, and so are the events before Err and Close.
//
// What a crash of the coordinator can lose is therefore bounded: the
// operation events of the last FlushEvery (plus the time the process could
// not run, which its stall watch records) that followed the last fault
// boundary; everything else appended before it is in the file (write(2)
// done, in the kernel's page cache). A history cut that way has no run-end
// and is checked as cut short, as before. A worker's crash loses nothing
// here: what its pipe delivered is appended like any other event.
type Writer struct {
	mu    sync.Mutex
	f     *os.File
	err   error
	path  string
	onErr func(error)
	// buf holds the encoded events not yet written; armed says the timer
	// that writes them is set.
	buf    []byte
	armed  bool
	timer  *time.Timer
	closed bool
}

// maxBuffered is how much the Writer gathers before it writes at once.
const maxBuffered = 256 << 10

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
	w := &Writer{f: f, path: path}
	w.timer = time.AfterFunc(time.Hour, w.timed)
	w.timer.Stop()
	return w, nil
}

// Append records e (see Writer for when it reaches the file). The first
// write error is kept and returned by Err and Close: a history with a hole
// must not be checked as if it were whole.
func (w *Writer) Append(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.buf = append(e.AppendJSON(w.buf), '\n')
	switch {
	case !isOperation(e.Kind) || len(w.buf) >= maxBuffered || w.closed:
		w.flushLocked()
	case !w.armed:
		w.armed = true
		w.timer.Reset(FlushEvery)
	}
}

// isOperation says whether events of kind k may wait in memory: the
// operations of the clients, which come by the thousand per second.
func isOperation(k Kind) bool {
	return k == Invoke || k == OK || k == Fail || k == Info
}

// timed writes what gathered since the timer was set.
func (w *Writer) timed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	w.flushLocked()
}

// flushLocked writes the gathered events in one write.
func (w *Writer) flushLocked() {
	if len(w.buf) == 0 || w.err != nil {
		w.buf = w.buf[:0]
		return
	}
	_, err := w.f.Write(w.buf)
	w.buf = w.buf[:0]
	if err != nil {
		w.err = fmt.Errorf("append to history %s: %w", w.path, err)
		if w.onErr != nil {
			w.onErr(w.err)
		}
	}
}

// Err writes what is gathered and returns the first write error.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return w.err
}

// Close writes what is gathered, syncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer.Stop()
	w.closed = true
	w.flushLocked()
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
	truncated, err = ScanFile(path, func(e Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return events, truncated, nil
}

// Parse reads events from r; name is used in error messages.
func Parse(r io.Reader, name string) (events []Event, truncated bool, err error) {
	truncated, err = Scan(r, name, func(e Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return events, truncated, nil
}

// ScanFile calls fn with each event of a history file in file order,
// without holding the file in memory: the way to read an hour-long history.
// Its errors and truncated are ReadFile's; an error from fn stops the scan
// and is returned as it is.
func ScanFile(path string, fn func(Event) error) (truncated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	return Scan(f, path, fn)
}

// Scan is ScanFile on a reader; name is used in error messages.
func Scan(r io.Reader, name string, fn func(Event) error) (truncated bool, err error) {
	return scanLines(r, name, func(line []byte) (error, error) {
		var e Event
		if jerr := e.Unmarshal(line); jerr != nil {
			return jerr, nil
		}
		return nil, fn(e)
	})
}

// ScanFileTimes calls fn with each event's time, in file order, reading no
// more of each line than it needs when the line starts with its time (as
// Marshal writes it). truncated and errors are ScanFile's.
func ScanFileTimes(path string, fn func(t int64)) (truncated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	return scanLines(f, path, func(line []byte) (error, error) {
		// A line without its newline may be cut: only a whole parse of it
		// tells.
		t, ok := leadingTime(line)
		if !ok || !bytes.HasSuffix(line, []byte("\n")) {
			var e struct {
				Time int64 `json:"time"`
			}
			if jerr := json.Unmarshal(line, &e); jerr != nil {
				return jerr, nil
			}
			t = e.Time
		}
		fn(t)
		return nil, nil
	})
}

// scanLines calls parse with each non-blank line of r, its newline
// included, gathering a line longer than the buffer whole. parse returns
// the line's own error (malformed: an error naming the line, or, for a
// last line cut in the middle, truncated) and an error of its caller's,
// which stops the scan and is returned as it is.
func scanLines(r io.Reader, name string, parse func(line []byte) (bad, stop error)) (truncated bool, err error) {
	br := bufio.NewReaderSize(r, 1<<20)
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			long := append([]byte(nil), line...)
			for rerr == bufio.ErrBufferFull {
				line, rerr = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(bytes.TrimSpace(line)) > 0 {
			bad, stop := parse(line)
			if bad != nil {
				if rerr == io.EOF && !bytes.HasSuffix(line, []byte("\n")) {
					return true, nil
				}
				return false, fmt.Errorf("%s line %d: %w", name, lineNo, bad)
			}
			if stop != nil {
				return false, stop
			}
		}
		if rerr == io.EOF {
			return false, nil
		}
		if rerr != nil {
			return false, fmt.Errorf("read %s: %w", name, rerr)
		}
	}
}

// leadingTime reads the time of a line that starts {"time":N,.
func leadingTime(line []byte) (int64, bool) {
	prefix := []byte(`{"time":`)
	if !bytes.HasPrefix(line, prefix) {
		return 0, false
	}
	var t int64
	i := len(prefix)
	neg := i < len(line) && line[i] == '-'
	if neg {
		i++
	}
	start := i
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
		t = t*10 + int64(line[i]-'0')
	}
	if i == start || i-start > 18 || i >= len(line) || (line[i] != ',' && line[i] != '}') {
		return 0, false
	}
	if neg {
		t = -t
	}
	return t, true
}
