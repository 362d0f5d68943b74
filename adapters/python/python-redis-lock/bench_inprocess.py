"""make bench's other half for python-redis-lock: its Lock timed in its own
process, with the adapter's client settings (../benchloop.py).

    python3 bench_inprocess.py HOST:PORT
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "lib"), os.path.dirname(here)]

import redis  # noqa: E402
import redis_lock  # noqa: E402
from benchloop import loop  # noqa: E402

host, port = sys.argv[1].rsplit(":", 1)
client = redis.StrictRedis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=2,
                           retry=None, retry_on_timeout=False)
client.ping()


def acquire(key):
    lock = redis_lock.Lock(client, key, expire=2)
    return lock if lock.acquire(blocking=False) else None


loop(acquire, lambda lock: lock.release())
