// Package linuxonly stops a build of lockchaos for another system with a
// plain message, before the packages that use Linux's own process
// controls (Pdeathsig, System V IPC, LD_PRELOAD) fail with theirs: they
// import it, and a package whose import fails is not compiled.
package linuxonly
