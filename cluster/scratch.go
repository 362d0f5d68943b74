package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ScratchDir is where nodes and sentinels keep their directories: memory
// (/dev/shm) where the machine has enough of it (scratchMemory), else the
// temp directory. A sentinel fsyncs its configuration at every epoch, and
// a redis node with appendfsync always fsyncs every write; on a shared
// disk one fsync can take seconds, long enough to send Sentinel into TILT
// mode and have it skip the failover a cell waits for. Memory makes fsync
// free and changes nothing a crash of a process shows (the kernel keeps
// what it was written either way).
var ScratchDir = sync.OnceValue(func() string {
	const shm = "/dev/shm"
	if memoryFor(shm, scratchMemory) {
		return shm
	}
	return os.TempDir()
})

// scratchMemory is the free space /dev/shm must have to hold the servers'
// directories: an etcd member preallocates its write-ahead log 64 MB at a
// time, so that a run of three members takes 200 MB and chaos's or an
// audit's runs side by side several times that. A container's /dev/shm is
// 64 MB unless docker run --shm-size says otherwise; there the directories
// go to the temp directory instead of failing with "no space left".
const scratchMemory = 1 << 30

// memoryFor says whether dir is a folder we may write to with at least
// need bytes free.
func memoryFor(dir string, need uint64) bool {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() || unix.Access(dir, unix.W_OK) != nil {
		return false
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return false
	}
	return fs.Bavail*uint64(fs.Bsize) >= need
}

// ownerFile, in each scratch directory, names the coordinator that made it
// ("pid:start-time"), so that the directories of one killed outright can
// be told from those of a run still going.
const ownerFile = "lockchaos.owner"

// mkScratch makes a directory for one node or sentinel named name.
func mkScratch(name string) (string, error) {
	dir, err := os.MkdirTemp(ScratchDir(), "lockchaos-"+name+"-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(processOwner(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// orphanCleanups release what a store's server, killed with its
// coordinator, left outside its directory (PostgreSQL's System V shared
// memory); each gets the directory before it is removed, and says false
// when it cannot release it yet (a server still attached, in a container
// not removed yet): the directory, which names what to release, then
// stays for a later run or `lockchaos clean`.
var orphanCleanups []func(dir string) bool

// releaseOrphan runs every orphan cleanup on dir; false when one could not
// finish.
func releaseOrphan(dir string) bool {
	done := true
	for _, clean := range orphanCleanups {
		done = clean(dir) && done
	}
	return done
}

// RemoveOrphanDirs removes the scratch directories whose coordinator is
// gone (killed before it could remove them; its nodes died with it) and
// returns them. A directory whose owner is still running, or that names
// none yet, is left alone. Every run calls it as it starts, and so does
// `lockchaos clean`.
func RemoveOrphanDirs() (removed []string, err error) {
	dirs, err := filepath.Glob(filepath.Join(ScratchDir(), "lockchaos-*"))
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		owner := strings.TrimSpace(string(b))
		if err != nil || owner == "" || ownerAlive(owner) {
			continue
		}
		if !releaseOrphan(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}
