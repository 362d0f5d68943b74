// lockchaos adapter (docs/protocol.md) for the npm redlock package (v4):
// Redlock over every node lockchaos names, with ioredis clients.
'use strict';
const readline = require('readline');
const Redis = require('ioredis');
const Redlock = require('redlock');

let redlock = null;  // try-once (retryCount 0)
let opts = {};
let ttl = 0;
const held = new Map();  // token -> Lock
let errors = 0;          // node errors seen so far (redlock's clientError events)

function send(msg) { process.stdout.write(JSON.stringify(msg) + '\n'); }

function init(req) {
  // A failed acquire is two rounds (the attempt, then the unlock of the
  // nodes that voted for it): each gets half the op timeout.
  const timeout = Math.max(1, Math.floor(req.op_timeout_ms / 2));
  ttl = req.ttl_ms;
  const o = req.options || {};
  opts = {
    driftFactor: Number(o.driftFactor || 0.01),
    retryDelay: Number(o.retryDelay || 200),
    retryJitter: Number(o.retryJitter || 200),
  };
  const clients = req.nodes.map((addr) => {
    const [host, port] = addr.split(':');
    // No hidden retries: a command is sent once, and fails when its node
    // does not answer within the op timeout; the client reconnects behind.
    const c = new Redis({ host, port: Number(port), commandTimeout: timeout, connectTimeout: timeout,
      maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableReadyCheck: false,
      retryStrategy: () => 50 });
    c.on('error', (e) => process.stderr.write(`redis ${addr}: ${e.message}\n`));
    return c;
  });
  redlock = new Redlock(clients, { ...opts, retryCount: 0 });
  redlock.on('clientError', (e) => { errors++; process.stderr.write(`clientError: ${e.message}\n`); });
  return { type: 'init_ok' };
}

// outcome tells "the library said no" from "a node did not answer": redlock
// reports both as a LockError, and only its clientError events tell them apart.
async function withErrors(f) {
  const before = errors;
  try {
    return { value: await f() };
  } catch (e) {
    return { err: e, nodeErrors: errors - before };
  }
}

async function acquire(req) {
  const wait = req.wait_ms || 0;
  const r = await withErrors(() => (wait > 0
    ? redlock.lock(req.key, ttl, { retryCount: Math.max(1, Math.ceil(wait / opts.retryDelay)), retryDelay: opts.retryDelay })
    : redlock.lock(req.key, ttl)));
  if (r.err) {
    return r.nodeErrors > 0 ? { type: 'unknown', error: `${r.err.message} (${r.nodeErrors} node errors)` } : { type: 'refused' };
  }
  const lock = r.value;
  held.set(lock.value, lock);
  return { type: 'granted', token: lock.value, valid_ms: lock.expiration - Date.now() };
}

async function release(req) {
  const lock = held.get(req.token);
  if (!lock) return { type: 'not_held' };
  held.delete(req.token);
  const r = await withErrors(() => lock.unlock());
  if (!r.err) return { type: 'released' };
  return r.nodeErrors > 0 ? { type: 'unknown', error: r.err.message } : { type: 'not_held' };
}

async function renew(req) {
  const lock = held.get(req.token);
  if (!lock) return { type: 'not_held' };
  const r = await withErrors(() => lock.extend(ttl));
  if (r.err) return r.nodeErrors > 0 ? { type: 'unknown', error: r.err.message } : { type: 'not_held' };
  held.set(req.token, r.value);
  return { type: 'renewed', valid_ms: r.value.expiration - Date.now() };
}

const handlers = { init, acquire, release, renew };

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const req = JSON.parse(line);
  const h = handlers[req.type];
  let ans;
  try {
    ans = h ? await h(req) : { type: 'error', error: `unknown request type ${req.type}` };
  } catch (e) {
    ans = { type: 'unknown', error: e.message };
  }
  send({ ...ans, in_reply_to: req.id });
}).on('close', () => process.exit(0));
