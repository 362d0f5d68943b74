"""lockchaos adapter (docs/protocol.md) for kazoo's Lock (ZooKeeper).

One request at a time: read a JSON line, call the library, write a JSON line.
kazoo's calls wait until the connection is known lost (two thirds of the
session), so each runs in a thread that the adapter waits for at most the
request's timeout; an acquire it gave up on is cancelled, and released if
it is granted after all, as an application that bounds its acquire must.
"""
import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from kazoo.client import KazooClient, KazooState  # noqa: E402
from kazoo.exceptions import KazooException  # noqa: E402
from kazoo.handlers.threading import KazooTimeoutError  # noqa: E402

client = None
owner = ""
held = {}  # token (the lock node's path) -> Lock
out = threading.Lock()  # kazoo's listener thread writes lines too


def send(msg):
    with out:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def on_state(state):
    """kazoo's advice for its locks: once the connection is SUSPENDED (or
    the session LOST), a holder cannot be sure it still holds the lock, and
    should stop as if it had lost it."""
    if state in (KazooState.SUSPENDED, KazooState.LOST):
        for token in list(held):
            send({"type": "lost", "key": token[len("/lockchaos/"):token.rindex("/")], "token": token,
                  "error": "connection " + state})


def bounded(f, timeout_s):
    """Runs f in a thread; returns (done, value, error)."""
    out = {}

    def run():
        try:
            out["value"] = f()
        except Exception as e:  # noqa: BLE001 - reported as the answer's error
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout_s)
    return (not t.is_alive()), out.get("value"), out.get("error"), t


def init(req):
    global client, owner
    owner = req.get("owner", "")
    # The session timeout is the lease: the servers delete the lock node
    # once the session has been silent that long.
    client = KazooClient(hosts=req["connect"], timeout=req["ttl_ms"] / 1000)
    client.add_listener(on_state)
    try:
        client.start(timeout=max(req["op_timeout_ms"] / 1000, 10))
    except KazooTimeoutError:
        return {"type": "error", "error": "no ZooKeeper session within 10 s at " + req["connect"]}
    return {"type": "init_ok"}


def acquire(req):
    wait = req.get("wait_ms", 0) / 1000
    lock = client.Lock("/lockchaos/" + req["key"], identifier=owner)
    done, gotten, err, t = bounded(lambda: lock.acquire(blocking=wait > 0, timeout=wait if wait > 0 else None),
                                   req["timeout_ms"] / 1000)
    if not done:
        lock.cancel()

        def clean_up():  # granted after all: let it go
            t.join()
            if lock.is_acquired:
                try:
                    lock.release()
                except KazooException:
                    pass

        threading.Thread(target=clean_up, daemon=True).start()
        return {"type": "unknown", "error": "no answer from kazoo within %d ms" % req["timeout_ms"]}
    if err is not None:
        return {"type": "unknown", "error": "%s: %s" % (type(err).__name__, err)}
    if not gotten:
        return {"type": "refused"}
    token = lock.path + "/" + lock.node
    held[token] = lock
    return {"type": "granted", "token": token}


def release(req):
    lock = held.pop(req["token"], None)
    if lock is None:
        return {"type": "not_held"}
    done, released, err, _ = bounded(lock.release, req["timeout_ms"] / 1000)
    if not done:
        return {"type": "unknown", "error": "no answer from kazoo within %d ms" % req["timeout_ms"]}
    if err is not None:
        return {"type": "unknown", "error": "%s: %s" % (type(err).__name__, err)}
    return {"type": "released"} if released else {"type": "not_held"}


HANDLERS = {"init": init, "acquire": acquire, "release": release}

for line in sys.stdin:
    req = json.loads(line)
    handler = HANDLERS.get(req.get("type"))
    ans = handler(req) if handler else {"type": "error", "error": "unknown request type %r" % req.get("type")}
    ans["in_reply_to"] = req["id"]
    send(ans)
