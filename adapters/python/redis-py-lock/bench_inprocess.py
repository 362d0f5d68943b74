"""make bench's other half for redis-py-lock: redis-py's Lock timed in its
own process, with the adapter's client settings (../benchloop.py).

    python3 bench_inprocess.py HOST:PORT
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "lib"), os.path.dirname(here)]

import redis  # noqa: E402
from benchloop import loop  # noqa: E402

host, port = sys.argv[1].rsplit(":", 1)
client = redis.Redis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=2, retry=None)
client.ping()


def acquire(key):
    lock = client.lock(key, timeout=2, blocking=False, thread_local=False)
    return lock if lock.acquire() else None


loop(acquire, lambda lock: lock.release())
