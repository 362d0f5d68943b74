"""The other half of make bench's protocol cost: redis-py's Lock.acquire
timed in its own process, with the adapter's client settings.

    python3 bench_inprocess.py HOST:PORT [N]

prints {"acquire_p50_us": …, "acquire_p90_us": …, "n": N}: each sample is
one non-blocking acquire of a fresh key (released untimed after it).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import redis  # noqa: E402

host, port = sys.argv[1].rsplit(":", 1)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
client = redis.Redis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=2, retry=None)
client.ping()
samples = []
for i in range(n + 100):
    lock = client.lock("bench:%d" % (i % 1000), timeout=2, blocking=False, thread_local=False)
    t = time.perf_counter_ns()
    ok = lock.acquire()
    took = time.perf_counter_ns() - t
    if ok:
        lock.release()
    if i >= 100:  # the first ones warm the connection and the script cache
        samples.append(took / 1000)
samples.sort()
print(json.dumps({"acquire_p50_us": samples[len(samples) // 2], "acquire_p90_us": samples[len(samples) * 9 // 10], "n": n}))
