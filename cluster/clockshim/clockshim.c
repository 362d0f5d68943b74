/*
 * clockshim: an LD_PRELOAD library that shifts the wall clock of one process
 * (a redis-server) by an offset and a rate that a nemesis rewrites while the
 * process runs. Redis expires keys by its wall clock (gettimeofday through
 * ustime()/mstime()), so a node whose clock jumps forward expires locks early.
 *
 * Why not libfaketime: it hangs Debian's jemalloc-built redis-server at
 * start-up (libfaketime issue #130). jemalloc calls clock_gettime while it
 * initialises; libfaketime then calls dlsym, which calls malloc, which is
 * jemalloc, which is not initialised yet. This shim therefore never
 * allocates, never calls dlsym and never uses stdio: the real time comes from
 * raw syscalls, the control file is read with raw syscalls into a buffer on
 * the stack, and everything else is integer arithmetic.
 *
 * Control file: the path in $LOCKCHAOS_CLOCK_FILE (no variable: the shim does
 * nothing but pass the real time through). One line, three integers:
 *
 *     <offset_ns> <rate_ppm> <anchor_ns>
 *
 * and the shifted time of a real CLOCK_REALTIME reading t is
 *
 *     t + offset_ns + (t - anchor_ns) * (rate_ppm - 1000000) / 1000000
 *
 * so "0 1000000 0" is the real clock, "2000000000 1000000 0" a clock 2 s
 * ahead, and "<o> 2000000 <now>" a clock that from now on runs twice as fast.
 * The writer (lockchaos) picks anchor and offset so that a change of rate does
 * not make the clock jump. It replaces the file with rename(2), so the shim
 * never reads half a line; the shim looks at the file's inode and mtime at
 * most once per millisecond of real time and re-reads it only when they
 * changed. A file that is missing or does not parse leaves the last values.
 *
 * Only CLOCK_REALTIME and CLOCK_REALTIME_COARSE (clock_gettime),
 * gettimeofday and time are shifted; CLOCK_MONOTONIC and every other clock
 * pass through, so timers and timeouts inside the process are unaffected, as
 * with a real clock step.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000LL
#define PPM 1000000LL
#define RELOAD_EVERY_NS 1000000LL /* look at the file at most once per ms */

struct params {
	int64_t offset;
	int64_t rate_ppm;
	int64_t anchor;
};

/* State, all static: nothing is allocated. params is guarded by a seqlock
 * (odd seq: a write is in progress) so that threads read it without a lock;
 * only the thread holding reloading writes it. */
static int inited;          /* 0 unknown, 1 active, 2 disabled (no variable) */
static const char *path;
static unsigned seq;
static struct params cur = {0, PPM, 0};
static int reloading;
static int64_t last_check; /* real ns of the last look at the file */
static int64_t seen_ino, seen_mtime, seen_size = -1;

static int64_t raw_clock(clockid_t clk) {
	struct timespec ts;
	if (syscall(SYS_clock_gettime, clk, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* parse reads one signed decimal integer; it returns the position after it
 * or 0 when there is none. */
static const char *parse(const char *p, const char *end, int64_t *out) {
	int neg = 0, digits = 0;
	int64_t v = 0;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p < end && (*p == '-' || *p == '+')) {
		neg = *p == '-';
		p++;
	}
	while (p < end && *p >= '0' && *p <= '9') {
		if (v > (INT64_MAX - (*p - '0')) / 10)
			return 0; /* does not fit */
		v = v * 10 + (*p - '0');
		p++;
		digits++;
	}
	if (digits == 0)
		return 0;
	*out = neg ? -v : v;
	return p;
}

static void load(void) {
	struct stat st;
	if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0)
		return;
	int64_t mtime = (int64_t)st.st_mtim.tv_sec * NS + st.st_mtim.tv_nsec;
	if ((int64_t)st.st_ino == seen_ino && mtime == seen_mtime && (int64_t)st.st_size == seen_size)
		return;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[128];
	long n = syscall(SYS_read, fd, buf, sizeof buf);
	syscall(SYS_close, fd);
	if (n <= 0)
		return;
	struct params p;
	const char *q = buf, *end = buf + n;
	if (!(q = parse(q, end, &p.offset)) || !(q = parse(q, end, &p.rate_ppm)) || !(q = parse(q, end, &p.anchor)))
		return;
	if (p.rate_ppm < 0)
		return;
	seen_ino = (int64_t)st.st_ino;
	seen_mtime = mtime;
	seen_size = (int64_t)st.st_size;
	__atomic_add_fetch(&seq, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&cur.offset, p.offset, __ATOMIC_RELAXED);
	__atomic_store_n(&cur.rate_ppm, p.rate_ppm, __ATOMIC_RELAXED);
	__atomic_store_n(&cur.anchor, p.anchor, __ATOMIC_RELAXED);
	__atomic_add_fetch(&seq, 1, __ATOMIC_RELEASE);
}

static void maybe_reload(int64_t now) {
	int state = __atomic_load_n(&inited, __ATOMIC_ACQUIRE);
	if (state == 2)
		return;
	if (state == 0) {
		/* getenv only reads environ: it allocates nothing. */
		const char *p = getenv("LOCKCHAOS_CLOCK_FILE");
		if (p == 0 || *p == 0) {
			__atomic_store_n(&inited, 2, __ATOMIC_RELEASE);
			return;
		}
		path = p;
		__atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
	}
	int64_t last = __atomic_load_n(&last_check, __ATOMIC_RELAXED);
	if (now - last < RELOAD_EVERY_NS && now >= last)
		return;
	if (__atomic_exchange_n(&reloading, 1, __ATOMIC_ACQUIRE))
		return; /* another thread is at it; use the values we have */
	__atomic_store_n(&last_check, now, __ATOMIC_RELAXED);
	load();
	__atomic_store_n(&reloading, 0, __ATOMIC_RELEASE);
}

/* shifted maps a real CLOCK_REALTIME reading to this process's clock. */
static int64_t shifted(int64_t real) {
	maybe_reload(real);
	if (__atomic_load_n(&inited, __ATOMIC_ACQUIRE) != 1)
		return real;
	struct params p;
	unsigned s;
	do {
		s = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
		p.offset = __atomic_load_n(&cur.offset, __ATOMIC_RELAXED);
		p.rate_ppm = __atomic_load_n(&cur.rate_ppm, __ATOMIC_RELAXED);
		p.anchor = __atomic_load_n(&cur.anchor, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while ((s & 1) || s != __atomic_load_n(&seq, __ATOMIC_RELAXED));
	__int128 drift = (__int128)(real - p.anchor) * (p.rate_ppm - PPM) / PPM;
	return real + p.offset + (int64_t)drift;
}

int clock_gettime(clockid_t clk, struct timespec *tp) {
	if (clk != CLOCK_REALTIME && clk != CLOCK_REALTIME_COARSE)
		return (int)syscall(SYS_clock_gettime, clk, tp);
	struct timespec real;
	long r = syscall(SYS_clock_gettime, clk, &real);
	if (r != 0)
		return (int)r;
	int64_t t = shifted((int64_t)real.tv_sec * NS + real.tv_nsec);
	tp->tv_sec = t / NS;
	tp->tv_nsec = t % NS;
	if (tp->tv_nsec < 0) {
		tp->tv_sec--;
		tp->tv_nsec += NS;
	}
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	if (tz != 0) {
		struct timezone *z = tz;
		z->tz_minuteswest = 0;
		z->tz_dsttime = 0;
	}
	/* glibc declares tv nonnull. */
	int64_t t = shifted(raw_clock(CLOCK_REALTIME));
	int64_t us = t / 1000;
	tv->tv_sec = us / 1000000;
	tv->tv_usec = us % 1000000;
	if (tv->tv_usec < 0) {
		tv->tv_sec--;
		tv->tv_usec += 1000000;
	}
	return 0;
}

time_t time(time_t *out) {
	int64_t t = shifted(raw_clock(CLOCK_REALTIME));
	time_t s = (time_t)(t / NS);
	if (t < 0 && t % NS != 0)
		s--;
	if (out != 0)
		*out = s;
	return s;
}
