"""lockchaos adapter (docs/protocol.md) for python-redis-lock's Lock.

One request at a time: read a JSON line, call the library, write a JSON line.
The library keeps a lock of name N at the key "lock:N" (key_prefix in
lock.yaml), its id as the value (the token), and takes its expire in whole
seconds (int(expire)).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import redis  # noqa: E402
import redis_lock  # noqa: E402
from redis.exceptions import RedisError  # noqa: E402

client = None
expire = 1
held = {}  # token -> Lock


def init(req):
    global client, expire
    if req["ttl_ms"] % 1000 or req["ttl_ms"] < 1000:
        return {"type": "error", "error": "python-redis-lock takes its expire in whole seconds (int(expire)): "
                "a %d ms TTL would be cut to %d s; give --ttl in whole seconds" % (req["ttl_ms"], req["ttl_ms"] // 1000)}
    expire = req["ttl_ms"] // 1000
    host, port = req["nodes"][0].rsplit(":", 1)
    timeout = req["op_timeout_ms"] / 1000
    # No retries: a retried command can take effect twice or hide its outcome.
    client = redis.StrictRedis(host=host, port=int(port), socket_timeout=timeout,
                               socket_connect_timeout=timeout, retry=None, retry_on_timeout=False)
    return {"type": "init_ok"}


def acquire(req):
    lock = redis_lock.Lock(client, req["key"], expire=expire)
    if not lock.acquire(blocking=False):
        return {"type": "refused"}
    held[lock.id] = lock
    return {"type": "granted", "token": lock.id}


def release(req):
    lock = held.pop(req["token"], None)
    if lock is None:
        return {"type": "not_held"}
    try:
        lock.release()
    except redis_lock.NotAcquired:
        return {"type": "not_held"}
    return {"type": "released"}


def renew(req):
    lock = held.get(req["token"])
    if lock is None:
        return {"type": "not_held"}
    try:
        lock.extend(expire)
    except redis_lock.NotAcquired:
        return {"type": "not_held"}
    return {"type": "renewed"}


HANDLERS = {"init": init, "acquire": acquire, "release": release, "renew": renew}

for line in sys.stdin:
    req = json.loads(line)
    handler = HANDLERS.get(req.get("type"))
    try:
        ans = handler(req) if handler else {"type": "error", "error": "unknown request type %r" % req.get("type")}
    except (RedisError, OSError) as e:
        ans = {"type": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    ans["in_reply_to"] = req["id"]
    sys.stdout.write(json.dumps(ans) + "\n")
    sys.stdout.flush()
