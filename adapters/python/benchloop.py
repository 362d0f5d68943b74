"""make bench's in-process half for the Python adapters: a library's lock
timed in its own process, without lockchaos (docs/protocol.md, `bench`).

    loop(acquire, release)

times acquire(key) on a fresh key (i % 1000) n times after warm untimed
ones, releases each untimed, and prints one JSON line:
{"acquire_p50_us", "acquire_p99_us", "holds_per_s", "n"}; holds/s are the
acquire-and-release pairs per second of the timed loop.
"""
import json
import time


def loop(acquire, release, n=2000, warm=200):
    samples = []
    start = None
    for i in range(warm + n):
        if i == warm:
            start = time.perf_counter_ns()
        t = time.perf_counter_ns()
        held = acquire("bench:%d" % (i % 1000))
        took = time.perf_counter_ns() - t
        if not held:
            raise SystemExit("acquire of a fresh key refused")
        release(held)
        if i >= warm:
            samples.append(took / 1000)
    total = (time.perf_counter_ns() - start) / 1e9
    samples.sort()
    print(json.dumps({"acquire_p50_us": samples[len(samples) // 2],
                      "acquire_p99_us": samples[len(samples) * 99 // 100],
                      "holds_per_s": n / total, "n": n}))
