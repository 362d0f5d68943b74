"""make bench's other half for pottery-redlock: pottery's Redlock over the
given masters timed in its own process, with the adapter's client settings
(../benchloop.py).

    python3 bench_inprocess.py HOST:PORT...
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "lib"), os.path.dirname(here)]

import redis  # noqa: E402
from pottery import Redlock  # noqa: E402
from benchloop import loop  # noqa: E402

masters = []
for addr in sys.argv[1:]:
    host, port = addr.rsplit(":", 1)
    masters.append(redis.Redis(host=host, port=int(port), socket_timeout=1, socket_connect_timeout=1,
                               retry=None, retry_on_timeout=False))


def acquire(key):
    lock = Redlock(key=key, masters=masters, auto_release_time=2.0, raise_on_redis_errors=True)
    return lock if lock.acquire(blocking=False) else None


loop(acquire, lambda lock: lock.release())
