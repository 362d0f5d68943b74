// lockchaos adapter (docs/protocol.md) for the npm redis-semaphore package:
// its Mutex on one node, or with the argument `redlock` its RedlockMutex over
// every node lockchaos names, with ioredis clients. Both keep a grant alive
// in the background (refreshInterval) and report a refresh that finds the
// key gone through onLockLost, sent on as a lost event. Each request has an
// AbortController, which a cancel request aborts: the library's acquire
// takes its signal (it stops between attempts; an attempt in flight
// finishes first), its release takes none.
'use strict';
const readline = require('readline');
// ioredis 6.0.0, or with the option ioredis=5.11.1 the last 5.x, whose
// client can stop reconnecting for good when a connection closes during
// its CLIENT SETINFO handshake (ioredis#2099, fixed in 6.0.0).
const clientLibraries = { '6.0.0': () => require('ioredis'), '5.11.1': () => require('ioredis-5') };
const { Mutex, RedlockMutex } = require('redis-semaphore');

const redlock = process.argv[2] === 'redlock';
let clients = [];
let settings = {};
const held = new Map(); // token (the mutex's identifier) -> { mutex, key }
const calls = new Map(); // request id -> its AbortController, while it runs

function send(msg) { process.stdout.write(JSON.stringify(msg) + '\n'); }

// A refresh whose command fails (a timeout, a dropped connection) rejects a
// promise that nobody awaits (Lock._processRefresh runs from setInterval):
// Node ends the process on it by default (redis-semaphore#199, closed as
// out of the library's scope). An application that lives through it logs
// it, as here, and keeps its mutex: the next refresh tries again, and only
// a refresh that finds the key gone calls onLockLost.
process.on('unhandledRejection', (e) => {
  send({ type: 'log', text: `unhandled rejection (a refresh that failed): ${e && e.message}` });
});

function init(req) {
  // RedlockMutex's failed attempt is two rounds (SET on every node, then
  // the compare-and-delete on every node): each gets half the op timeout.
  const timeout = Math.max(1, Math.floor(redlock ? req.op_timeout_ms / 2 : req.op_timeout_ms));
  const o = req.options || {};
  settings = {
    lockTimeout: req.ttl_ms,
    retryInterval: Number(o.retryInterval || 10),
  };
  // Unset: the library's own default, 0.8 of the lock timeout.
  if (o.refreshInterval) settings.refreshInterval = Number(o.refreshInterval);
  const library = clientLibraries[o.ioredis || '6.0.0'];
  if (!library) return { type: 'error', error: `option ioredis: want ${Object.keys(clientLibraries).join(' or ')}, not ${o.ioredis}` };
  const Redis = library();
  const addrs = redlock ? req.nodes : req.nodes.slice(0, 1);
  clients = addrs.map((addr) => {
    const [host, port] = addr.split(':');
    // No hidden retries: a command is sent once, and fails when its node
    // does not answer within the op timeout; the client reconnects behind.
    // socketTimeout (unset by default, as in ioredis) drops a connection
    // that stays silent after a command, which a fault can leave half-open.
    const c = new Redis({ host, port: Number(port), commandTimeout: timeout, connectTimeout: timeout,
      maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableReadyCheck: false,
      retryStrategy: () => 50, socketTimeout: o.socketTimeout ? Number(o.socketTimeout) : undefined });
    c.on('error', (e) => process.stderr.write(`redis ${addr}: ${e.message}\n`));
    return c;
  });
  return { type: 'init_ok' };
}

async function acquire(req, signal) {
  const wait = req.wait_ms || 0;
  let mutex;
  const options = {
    ...settings,
    // Try once, or retry every retryInterval for the wait. A try-once's
    // acquireTimeout is the lock timeout, not 1 ms: the library checks
    // Date.now() < start + acquireTimeout before its first attempt too,
    // and a millisecond that ticks over in between refused without asking
    // any node (about 1 acquire in 500 on a busy machine, found by make
    // bench, 2026-11-26).
    acquireTimeout: wait > 0 ? wait : settings.lockTimeout,
    acquireAttemptsLimit: wait > 0 ? Number.POSITIVE_INFINITY : 1,
    onLockLost: (e) => {
      const h = held.get(mutex.identifier);
      if (h) {
        held.delete(mutex.identifier);
        send({ type: 'lost', key: req.key, token: mutex.identifier, error: e.message });
      }
    },
  };
  mutex = redlock ? new RedlockMutex(clients, req.key, options) : new Mutex(clients[0], req.key, options);
  // A node's error rejects Mutex's acquire (unknown); RedlockMutex counts it
  // as a node that said no, and answers false (refused) without a quorum.
  if (!(await mutex.tryAcquire(signal))) return { type: 'refused' };
  held.set(mutex.identifier, { mutex, key: req.key });
  return { type: 'granted', token: mutex.identifier };
}

async function release(req) {
  const h = held.get(req.token);
  if (!h) return { type: 'not_held' };
  held.delete(req.token);
  if (!h.mutex.isAcquired) return { type: 'not_held' }; // a refresh found it gone
  // release() compares the identifier and deletes; it says nothing of
  // whether the key was still this mutex's.
  await h.mutex.release();
  return { type: 'released' };
}

const handlers = { init, acquire, release };

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const req = JSON.parse(line);
  if (req.type === 'cancel') {
    calls.get(req.of)?.abort();
    return;
  }
  const h = handlers[req.type];
  const ctl = new AbortController();
  calls.set(req.id, ctl);
  let ans;
  try {
    ans = h ? await h(req, ctl.signal) : { type: 'error', error: `unknown request type ${req.type}` };
  } catch (e) {
    // Aborted (the signal's reason, an AbortError): it took nothing.
    ans = ctl.signal.aborted && (e === ctl.signal.reason || e?.name === 'AbortError') ? { type: 'cancelled' } : { type: 'unknown', error: e.message };
  }
  calls.delete(req.id);
  send({ ...ans, in_reply_to: req.id });
}).on('close', () => process.exit(0));
