package cluster

import (
	"math"
	"path/filepath"
	"testing"
)

// The servers' directories go to memory only where it has room for them:
// a folder with less free space than asked for (a container's 64 MB
// /dev/shm against what etcd preallocates) is not taken, nor one that is
// not there. TestImageAuditsAMountedRepository (cli) runs etcd in such a
// container.
func TestScratchMemoryNeedsRoom(t *testing.T) {
	dir := t.TempDir()
	if !memoryFor(dir, 1) {
		t.Errorf("memoryFor(%s, 1 byte) = false, want true", dir)
	}
	if memoryFor(dir, math.MaxUint64) {
		t.Errorf("memoryFor(%s, %d bytes) = true, want false: no filesystem has that much free", dir, uint64(math.MaxUint64))
	}
	if missing := filepath.Join(dir, "missing"); memoryFor(missing, 1) {
		t.Errorf("memoryFor(%s) = true for a folder that is not there", missing)
	}
}
