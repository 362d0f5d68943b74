package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/logtail"
	"github.com/lockchaos/lockchaos/internal/procs"
	"github.com/lockchaos/lockchaos/workload"
)

// workerProc is one client's OS process, seen from the coordinator.
type workerProc struct {
	client int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{} // closed once every event is read and the exit recorded
	ready  chan struct{} // closed when it says it can start (workload.Ready)

	readyOnce sync.Once

	mu       sync.Mutex
	closed   bool // its standard input is closed: it was told to stop
	exited   bool
	expected bool   // the coordinator or a nemesis asked for this exit
	why      string // why it was killed, when it was
	status   string // its exit status, once it exited ("exit 0", "exit status 2")
	// lostEvents says why some of its events could not be recorded: the
	// history then has a hole, and the run cannot be called safe.
	lostEvents string
}

// startWorker launches a worker and a goroutine that copies its events into
// the history (and the tracker) as they arrive, then records its exit.
func startWorker(argv []string, cfg workload.Config, logPath string, record func(history.Event), trk *tracker) (*workerProc, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe for worker %d: %w", cfg.Client, err)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("worker %d log: %w", cfg.Client, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), workload.RoleEnv+"=worker")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw} // becomes fd 3 = workload.EventsFD
	// Own process group: a terminal's Ctrl-C reaches only the coordinator,
	// which stops the workers in order. Pdeathsig: if the coordinator dies
	// anyway, the kernel kills its workers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		pr.Close()
		pw.Close()
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logf.Close()
		return nil, fmt.Errorf("start worker %d (%s): %w", cfg.Client, argv[0], err)
	}
	pw.Close() // the worker holds the only write end: EOF means it is gone
	w := &workerProc{client: cfg.Client, cmd: cmd, stdin: stdin, done: make(chan struct{}), ready: make(chan struct{})}

	b, _ := json.Marshal(cfg)
	if _, err := stdin.Write(append(b, '\n')); err != nil {
		w.kill("could not send its configuration")
	}

	go func() {
		defer close(w.done)
		defer logf.Close()
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var e history.Event
			// Event.Unmarshal reads a worker's lines without reflection
			// (encoding/json was a quarter of this loop's cost) and is
			// encoding/json on anything else.
			if err := e.Unmarshal(sc.Bytes()); err != nil {
				fmt.Fprintf(logf, "coordinator: unreadable event from worker %d: %v\n", cfg.Client, err)
				w.noteLost(fmt.Sprintf("worker %d sent an unreadable event: %v", cfg.Client, err))
				continue
			}
			e.Client = cfg.Client // a worker speaks only for itself
			if e.Kind == workload.Ready {
				w.readyOnce.Do(func() { close(w.ready) })
				continue
			}
			trk.observe(e)
			record(e)
		}
		if err := sc.Err(); err != nil {
			w.noteLost(fmt.Sprintf("reading worker %d's events stopped: %v", cfg.Client, err))
			_, _ = io.Copy(io.Discard, pr) // never leave the worker blocked on a full pipe
		}
		werr := cmd.Wait()
		trk.exited(cfg.Client)
		msg := "exit 0"
		if werr != nil {
			msg = werr.Error()
		}
		w.mu.Lock()
		w.exited, w.status = true, msg
		exp, why := w.expected, w.why
		w.mu.Unlock()
		if why != "" {
			msg = why + ": " + msg
		}
		if werr != nil && !exp {
			msg += " (log: " + filepath.Base(logPath) + ")"
		}
		record(history.Event{Time: history.Now(), Kind: history.WorkerExit, Client: cfg.Client, Expected: exp && (werr == nil || why != ""), Message: msg})
	}()
	return w, nil
}

// notReady says why the worker exited before it was ready: the line in
// which it said why ("worker N: …", workload.Main) and what its log holds
// after it (an adapter's standard error), else the end of its log, quoted
// (logtail) with its exit status, so that the reason is on the error's
// first line and not only in the log.
func (w *workerProc) notReady(logPath string) error {
	w.mu.Lock()
	status := w.status
	w.mu.Unlock()
	lines := logtail.File(logPath, 12, nil)
	if len(lines) == 0 {
		return fmt.Errorf("worker %d exited before it was ready (%s), and its log %s is empty", w.client, status, logPath)
	}
	quote := func(ls []string) string {
		if len(ls) == 0 {
			return ""
		}
		return "\n    " + strings.Join(ls, "\n    ")
	}
	said := fmt.Sprintf("worker %d: ", w.client)
	for i := len(lines) - 1; i >= 0; i-- {
		if why, ok := strings.CutPrefix(lines[i], said); ok {
			return fmt.Errorf("worker %d exited before it was ready (%s): %s%s\n  (its log: %s)", w.client, status, why, quote(lines[i+1:]), logPath)
		}
	}
	return fmt.Errorf("worker %d exited before it was ready (%s); its log %s ends:%s", w.client, status, logPath, quote(lines))
}

func (w *workerProc) noteLost(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lostEvents == "" {
		w.lostEvents = why
	}
}

func (w *workerProc) signal(sig syscall.Signal) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.exited {
		return errExited
	}
	// The whole process group (the worker is its leader): an adapter lock's
	// process is paused, resumed and killed with its worker.
	if err := syscall.Kill(-w.cmd.Process.Pid, sig); err == nil {
		return nil
	}
	return w.cmd.Process.Signal(sig)
}

var errExited = fmt.Errorf("worker already exited")

// awaitStopped waits until every thread of the worker's process is stopped
// (state T in /proc), or the process has exited, for at most d.
func (w *workerProc) awaitStopped(d time.Duration) error {
	tasks := fmt.Sprintf("/proc/%d/task", w.cmd.Process.Pid)
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Microsecond) {
		ids, err := os.ReadDir(tasks)
		if err != nil {
			return nil // gone: nothing runs
		}
		stopped := true
		for _, id := range ids {
			b, err := os.ReadFile(filepath.Join(tasks, id.Name(), "stat"))
			if err != nil {
				continue // that thread ended
			}
			if st := threadState(b); st != 0 && !strings.ContainsRune("TtZX", rune(st)) {
				stopped = false
				break
			}
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("worker %d did not stop within %v of SIGSTOP", w.client, d)
		}
	}
}

// threads are the /proc folders of every thread of the worker's process
// and of its descendants (an adapter, and what that runs), as they are
// now.
func (w *workerProc) threads() []string {
	var dirs []string
	var walk func(pid string)
	walk = func(pid string) {
		tasks := filepath.Join("/proc", pid, "task")
		ids, err := os.ReadDir(tasks)
		if err != nil {
			return // gone
		}
		for _, id := range ids {
			dirs = append(dirs, filepath.Join(tasks, id.Name()))
			b, _ := os.ReadFile(filepath.Join(tasks, id.Name(), "children"))
			for _, child := range strings.Fields(string(b)) {
				walk(child)
			}
		}
	}
	walk(strconv.Itoa(w.cmd.Process.Pid))
	return dirs
}

// cpuUse is how much CPU time the threads have run (schedstat's first
// field, in nanoseconds), and whether one of them is running or waits
// for a CPU (state R). A thread that ended counts no more.
func cpuUse(threads []string) (ran time.Duration, runnable bool) {
	for _, t := range threads {
		if b, err := os.ReadFile(filepath.Join(t, "schedstat")); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				ran += time.Duration(ns)
			}
		}
		if b, err := os.ReadFile(filepath.Join(t, "stat")); err == nil && threadState(b) == 'R' {
			runnable = true
		}
	}
	return ran, runnable
}

// threadState is the state letter of a /proc stat line (R, S, T, …), or 0:
// it follows the command name, which is in parentheses.
func threadState(stat []byte) byte {
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2]
	}
	return 0
}

// send writes one control line to the worker (workload/control.go).
func (w *workerProc) send(line string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.exited {
		return errExited
	}
	if _, err := io.WriteString(w.stdin, line+"\n"); err != nil {
		return fmt.Errorf("tell worker %d %q: %w", w.client, line, err)
	}
	return nil
}

// stop asks the worker to finish its iteration and exit.
func (w *workerProc) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expected = true
	if !w.closed {
		w.closed = true
		_ = w.stdin.Close()
	}
}

// killExpected kills the worker on purpose (a nemesis); its exit is expected.
func (w *workerProc) killExpected(why string) error {
	w.mu.Lock()
	w.expected, w.why = true, why
	w.mu.Unlock()
	return w.signal(syscall.SIGKILL)
}

// kill ends a worker that misbehaved; its exit is not expected.
func (w *workerProc) kill(why string) {
	w.mu.Lock()
	w.expected, w.why = false, why
	w.mu.Unlock()
	_ = w.signal(syscall.SIGCONT)
	_ = w.signal(syscall.SIGKILL)
}

// shimActive says whether a process of the worker's process group other
// than the worker itself (its adapter) has the clock shim lib mapped and
// reads its clock from clockFile: its environment names that file, by a
// path that leads there from the folder it runs in. A shim pointed at no
// file keeps the real clock, and a step would never reach the lock.
func (w *workerProc) shimActive(lib, clockFile string) bool {
	if lib == "" || lib == "." || clockFile == "" {
		return false
	}
	for _, pid := range procs.Group(w.cmd.Process.Pid) {
		if pid == w.cmd.Process.Pid {
			continue
		}
		m, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		if err != nil || !bytes.Contains(m, []byte("/"+lib)) {
			continue
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(environ, []byte{0}) {
			path, ok := bytes.CutPrefix(kv, []byte(cluster.ClockFileEnv+"="))
			if !ok {
				continue
			}
			p := string(path)
			if !filepath.IsAbs(p) {
				cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
				if err != nil {
					break
				}
				p = filepath.Join(cwd, p)
			}
			if filepath.Clean(p) == filepath.Clean(clockFile) {
				return true
			}
		}
	}
	return false
}
