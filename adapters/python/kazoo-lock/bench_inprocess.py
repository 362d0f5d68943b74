"""make bench's other half for kazoo-lock: kazoo's Lock timed in its own
process, with the adapter's session settings (../benchloop.py).

    python3 bench_inprocess.py HOST:PORT...
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "lib"), os.path.dirname(here)]

from kazoo.client import KazooClient  # noqa: E402
from benchloop import loop  # noqa: E402

client = KazooClient(hosts=",".join(sys.argv[1:]), timeout=2)
client.start(timeout=10)


def acquire(key):
    lock = client.Lock("/lockchaos/" + key, identifier="bench")
    return lock if lock.acquire(blocking=False) else None


loop(acquire, lambda lock: lock.release())
client.stop()
