"""lockchaos adapter (docs/protocol.md) for redis-py's asyncio Lock (redis.asyncio).

Each request runs as an asyncio task begun as it is read: the library's call
is made at once and the task awaits it, as `asyncio.create_task(lock.release())`
does in an application. A cancel request cancels the task of the request it
names, the asyncio way, and that request is answered "cancelled". The lock's
folder gives the library (its lib/, from its requirements.txt): this file
also runs redis-py-asyncio-lock-7.1.1.
"""
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.join(os.getcwd(), "lib"))

import redis.asyncio as redis  # noqa: E402
from redis.exceptions import LockError, LockNotOwnedError, RedisError  # noqa: E402

client = None
ttl = 1.0
sleep = 0.1
expiry = True  # Lock(timeout=ttl); False: Lock(timeout=None), held until released
held = {}  # token -> Lock
tasks = {}  # request id -> its task


def answer(ans):
    sys.stdout.write(json.dumps(ans) + "\n")
    sys.stdout.flush()


async def done(ans):
    return ans


def init(req):
    global client, ttl, sleep, expiry
    host, port = req["nodes"][0].rsplit(":", 1)
    timeout = req["op_timeout_ms"] / 1000
    opts = req.get("options", {})
    ttl = req["ttl_ms"] / 1000
    if opts.get("sleep"):
        sleep = int(opts["sleep"]) / 1000
    expiry = opts.get("expiry", "ttl") == "ttl"
    # No retries: a retried command can take effect twice or hide its outcome.
    client = redis.Redis(host=host, port=int(port), socket_timeout=timeout,
                         socket_connect_timeout=timeout, retry=None, retry_on_timeout=False)
    return done({"type": "init_ok"})


def acquire(req):
    wait = req.get("wait_ms", 0) / 1000
    lock = client.lock(req["key"], timeout=ttl if expiry else None, sleep=sleep, blocking=wait > 0,
                       blocking_timeout=wait if wait > 0 else None, thread_local=False)
    call = lock.acquire()

    async def granted():
        if not await call:
            return {"type": "refused"}
        token = lock.local.token.decode()
        held[token] = lock
        return {"type": "granted", "token": token}
    return granted()


def release(req):
    lock = held.get(req["token"])
    if lock is None:
        return done({"type": "not_held"})
    try:
        call = lock.release()  # the library's call, made now
    except LockError:  # it holds no token: it owns nothing, by its own account
        return done({"type": "not_held"})

    async def released():
        try:
            await call
        except LockNotOwnedError:
            held.pop(req["token"], None)
            return {"type": "not_held"}
        held.pop(req["token"], None)
        return {"type": "released"}
    return released()


CALLS = {"init": init, "acquire": acquire, "release": release}


def finished(req_id, task):
    tasks.pop(req_id, None)
    if task.cancelled():
        ans = {"type": "cancelled"}
    elif isinstance(task.exception(), (RedisError, LockError, OSError)):
        e = task.exception()
        ans = {"type": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    elif task.exception() is not None:
        ans = {"type": "error", "error": repr(task.exception())}
    else:
        ans = task.result()
    ans["in_reply_to"] = req_id
    answer(ans)


async def main():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        req = json.loads(line)
        kind = req.get("type")
        if kind == "cancel":
            task = tasks.get(req.get("of"))
            if task is not None:
                task.cancel()
            continue
        if kind not in CALLS:
            answer({"type": "error", "error": "unknown request type %r" % kind, "in_reply_to": req["id"]})
            continue
        try:
            call = CALLS[kind](req)
        except (RedisError, LockError, OSError) as e:
            call = done({"type": "unknown", "error": "%s: %s" % (type(e).__name__, e)})
        task = asyncio.ensure_future(call)
        tasks[req["id"]] = task
        task.add_done_callback(lambda t, i=req["id"]: finished(i, t))


asyncio.run(main())
