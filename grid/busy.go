package grid

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// BusyIdle is the share of the machine's CPU time below which Pool counts
// the machine busy: then it starts runs only while fewer than half its
// budget go. Runs mostly sleep, so twice as many fit on idle cores; on
// cores that other work keeps busy (a CI runner's neighbours,
// ../shared/tools/under-load's hogs), a run's own timings are what the
// verdicts depend on, and half the budget (four runs, whatever they
// start) is what they were measured at beside hogs.
const BusyIdle = 0.25

// machineBusy says whether the CPUs were mostly busy over the last second
// or so: less than BusyIdle of their time idle, from /proc/stat. A machine
// whose /proc/stat cannot be read counts as busy. Tests replace it.
var machineBusy = func() func() bool {
	var (
		mu          sync.Mutex
		at          time.Time
		total, idle uint64
		busy        = true
	)
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) < time.Second {
			return busy
		}
		t, i, ok := cpuTimes("/proc/stat")
		if !ok {
			busy = true
			return busy
		}
		if !at.IsZero() && t > total {
			busy = float64(i-idle) < BusyIdle*float64(t-total)
		}
		at, total, idle = time.Now(), t, i
		return busy
	}
}()

// cpuTimes reads the machine's CPU time so far, in clock ticks, from the
// "cpu" line of a /proc/stat: all of it, and what was idle (idle and
// iowait).
func cpuTimes(path string) (total, idle uint64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[0] != "cpu" {
			continue
		}
		for k, s := range fields[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return 0, 0, false
			}
			// user nice system idle iowait irq softirq steal guest guest_nice:
			// guest time is counted in user and nice already.
			if k >= 8 {
				break
			}
			total += v
			if k == 3 || k == 4 {
				idle += v
			}
		}
		return total, idle, true
	}
	return 0, 0, false
}
