package cluster

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// scratchDir is where nodes and sentinels keep their directories: memory
// (/dev/shm) where the machine has it, else the temp directory. A sentinel
// fsyncs its configuration at every epoch, and a redis node with
// appendfsync always fsyncs every write; on a shared disk one fsync can
// take seconds, long enough to send Sentinel into TILT mode and have it
// skip the failover a cell waits for. Memory makes fsync free and changes
// nothing a crash of a process shows (the kernel keeps what it was
// written either way).
var scratchDir = sync.OnceValue(func() string {
	const shm = "/dev/shm"
	if st, err := os.Stat(shm); err == nil && st.IsDir() && unix.Access(shm, unix.W_OK) == nil {
		return shm
	}
	return os.TempDir()
})

// mkScratch makes a directory for one node or sentinel named name.
func mkScratch(name string) (string, error) {
	return os.MkdirTemp(scratchDir(), "lockchaos-"+name+"-")
}
