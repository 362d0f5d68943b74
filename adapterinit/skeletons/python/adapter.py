"""A lockchaos adapter (docs/protocol.md) around redis-py: a plain token
lease, SET key token NX PX ttl, released and renewed by a Lua
compare-and-delete / compare-and-pexpire. Put your lock library's calls in
acquire, release and renew; one request at a time is allowed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import redis  # noqa: E402

RELEASE = 'if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) end return 0'
RENEW = 'if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) end return 0'
state = {"n": 0}


def init(req):
    host, port = req["nodes"][0].rsplit(":", 1)
    timeout = req["op_timeout_ms"] / 1000
    state.update(owner=req["owner"], ttl=req["ttl_ms"])
    # Every command answers within the op timeout, sent once: redis-py
    # retries a timed-out command 3 times unless told not to, and the
    # library's whole worst-case acquire, retries included, must fit it.
    state["client"] = redis.Redis(host=host, port=int(port), socket_timeout=timeout,
                                  socket_connect_timeout=timeout, retry=None, retry_on_timeout=False)
    # Warm the client up here, not in the first acquire (Lettuce's first
    # call took over 1 s); an unreachable store is no error: go on.
    try:
        state["client"].ping()
    except redis.RedisError:
        pass
    return {"type": "init_ok"}


def acquire(req):
    # Your library's try-once acquire goes here (no try-once: its acquire
    # with the shortest wait). granted's token is what the library stores
    # at the key; random bytes go as token_b64 (base64) instead.
    state["n"] += 1
    token = "%s:%d" % (state["owner"], state["n"])
    if not state["client"].set(req["key"], token, nx=True, px=state["ttl"]):
        return {"type": "refused"}
    return {"type": "granted", "token": token}


def release(req):
    # Your library's release: not_held when the lease was no longer this
    # client's (a library whose unlock reports nothing: answer released).
    done = state["client"].eval(RELEASE, 1, req["key"], req["token"])
    return {"type": "released" if done else "not_held"}


def renew(req):
    # Your library's extend, by the TTL (lock.yaml: renew: true).
    done = state["client"].eval(RENEW, 1, req["key"], req["token"], state["ttl"])
    return {"type": "renewed" if done else "not_held"}


HANDLERS = {"init": init, "acquire": acquire, "release": release, "renew": renew}

for line in sys.stdin:
    req = json.loads(line)
    handler = HANDLERS.get(req.get("type"))
    try:
        ans = handler(req) if handler else {"type": "error", "error": "unknown request type %r" % req.get("type")}
    except (redis.RedisError, OSError) as e:
        ans = {"type": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    ans["in_reply_to"] = req["id"]
    sys.stdout.write(json.dumps(ans) + "\n")
    sys.stdout.flush()
