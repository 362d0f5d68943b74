"""lockchaos adapter (docs/protocol.md) for redis-py's Lock.

One request at a time: read a JSON line, call the library, write a JSON line.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import redis  # noqa: E402
from redis.exceptions import LockError, LockNotOwnedError, RedisError  # noqa: E402

client = None
ttl = 1.0
sleep = 0.1
expiry = True  # Lock(timeout=ttl); False: Lock(timeout=0), held until released
reacquire = False  # renew by reacquire() instead of extend()
held = {}  # token -> Lock


def init(req):
    global client, ttl, sleep, expiry, reacquire
    host, port = req["nodes"][0].rsplit(":", 1)
    timeout = req["op_timeout_ms"] / 1000
    opts = req.get("options", {})
    ttl = req["ttl_ms"] / 1000
    if opts.get("sleep"):
        sleep = int(opts["sleep"]) / 1000
    expiry = opts.get("expiry", "ttl") == "ttl"
    reacquire = opts.get("renew-by", "extend") == "reacquire"
    # No retries: a retried command can take effect twice or hide its outcome.
    client = redis.Redis(host=host, port=int(port), socket_timeout=timeout,
                         socket_connect_timeout=timeout, retry=None, retry_on_timeout=False)
    return {"type": "init_ok"}


def acquire(req):
    wait = req.get("wait_ms", 0) / 1000
    lock = client.lock(req["key"], timeout=ttl if expiry else 0, sleep=sleep, blocking=wait > 0,
                       blocking_timeout=wait if wait > 0 else None, thread_local=False)
    if not lock.acquire():
        return {"type": "refused"}
    token = lock.local.token.decode()
    held[token] = lock
    return {"type": "granted", "token": token}


def release(req):
    lock = held.pop(req["token"], None)
    if lock is None:
        return {"type": "not_held"}
    try:
        lock.release()
    except LockNotOwnedError:
        return {"type": "not_held"}
    return {"type": "released"}


def renew(req):
    lock = held.get(req["token"])
    if lock is None:
        return {"type": "not_held"}
    try:
        if reacquire:
            lock.reacquire()  # back to the Lock's timeout (redis-py#4279: PEXPIRE 0 when it is 0)
        else:
            lock.extend(ttl, replace_ttl=True)
    except LockNotOwnedError:
        return {"type": "not_held"}
    return {"type": "renewed"}


HANDLERS = {"init": init, "acquire": acquire, "release": release, "renew": renew}

for line in sys.stdin:
    req = json.loads(line)
    handler = HANDLERS.get(req.get("type"))
    try:
        ans = handler(req) if handler else {"type": "error", "error": "unknown request type %r" % req.get("type")}
    except (RedisError, LockError, OSError) as e:
        ans = {"type": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    ans["in_reply_to"] = req["id"]
    sys.stdout.write(json.dumps(ans) + "\n")
    sys.stdout.flush()
