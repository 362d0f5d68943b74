"""lockchaos adapter (docs/protocol.md) for pottery's Redlock.

One request at a time: read a JSON line, call the library, write a JSON line.
pottery keeps a Redlock of key K at "redlock:K" on every master (key_prefix
in lock.yaml), a uuid as the value (the token).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import redis  # noqa: E402
from pottery import Redlock  # noqa: E402
from pottery.exceptions import ExtendUnlockedLock, PrimitiveError, ReleaseUnlockedLock, TooManyExtensions  # noqa: E402
from redis.exceptions import RedisError  # noqa: E402

masters = []
release_time = 1.0
extensions = 3
held = {}  # token -> Redlock


def init(req):
    global masters, release_time, extensions
    opts = req.get("options", {})
    release_time = req["ttl_ms"] / 1000
    extensions = int(opts.get("num_extensions") or 3)
    # Redlock asks each master with a timeout far below the lease; half the
    # op timeout leaves room for the release of a failed attempt after it.
    timeout = req["op_timeout_ms"] / 2000
    for addr in req["nodes"]:
        host, port = addr.rsplit(":", 1)
        masters.append(redis.Redis(host=host, port=int(port), socket_timeout=timeout,
                                   socket_connect_timeout=timeout, retry=None, retry_on_timeout=False))
    return {"type": "init_ok"}


def acquire(req):
    lock = Redlock(key=req["key"], masters=masters, auto_release_time=release_time,
                   num_extensions=extensions, raise_on_redis_errors=True)
    start = time.monotonic()
    if not lock.acquire(blocking=False):
        return {"type": "refused"}
    elapsed = time.monotonic() - start
    token = lock._uuid  # the value on each master: how the lease is marked
    held[token] = lock
    # The validity pottery checked: the lease less its drift and the time taken.
    valid = release_time - (release_time * Redlock._CLOCK_DRIFT_FACTOR + .002) - elapsed
    return {"type": "granted", "token": token, "valid_ms": max(int(valid * 1000), 0)}


def release(req):
    lock = held.pop(req["token"], None)
    if lock is None:
        return {"type": "not_held"}
    try:
        lock.release()
    except ReleaseUnlockedLock:  # no majority held it
        return {"type": "not_held"}
    return {"type": "released"}


def renew(req):
    lock = held.get(req["token"])
    if lock is None:
        return {"type": "not_held"}
    try:
        lock.extend()
    except TooManyExtensions as e:
        return {"type": "unknown", "error": "TooManyExtensions: %s (num_extensions=%d)" % (e, extensions)}
    except ExtendUnlockedLock:
        return {"type": "not_held"}
    return {"type": "renewed", "valid_ms": int((release_time - release_time * Redlock._CLOCK_DRIFT_FACTOR - .002) * 1000)}


HANDLERS = {"init": init, "acquire": acquire, "release": release, "renew": renew}

for line in sys.stdin:
    req = json.loads(line)
    handler = HANDLERS.get(req.get("type"))
    try:
        ans = handler(req) if handler else {"type": "error", "error": "unknown request type %r" % req.get("type")}
    except (RedisError, PrimitiveError, OSError) as e:
        ans = {"type": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    ans["in_reply_to"] = req["id"]
    sys.stdout.write(json.dumps(ans) + "\n")
    sys.stdout.flush()
