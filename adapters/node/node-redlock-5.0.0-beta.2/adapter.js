// lockchaos adapter (docs/protocol.md) for the npm redlock package at
// 5.0.0-beta.2, its last release: Redlock over every node lockchaos names,
// with ioredis clients. v5 rewrote the API (acquire / release / extend on
// arrays of resources) and its acquire() resolves with the quorum alone:
// the lock's expiration (start + duration − drift) is computed but never
// compared with the time the quorum answered (Redlock's step 4; PR #369,
// open, adds it back; #296 and #299 report expired locks from its retries).
// An application that trusts acquire() holds on; with checkValidity=true
// the adapter sends the expiration as valid_ms, as an application that
// checks lock.expiration itself does.
'use strict';
const readline = require('readline');
const Redis = require('ioredis');
const { default: Redlock, ResourceLockedError } = require('redlock');

let redlock = null;
let opts = {};
let ttl = 0;
let checkValidity = false;
const held = new Map();  // token -> Lock

function send(msg) { process.stdout.write(JSON.stringify(msg) + '\n'); }

function init(req) {
  // A failed acquire is two rounds (the attempt, then the release of the
  // nodes that voted for it): each gets half the op timeout.
  const timeout = Math.max(1, Math.floor(req.op_timeout_ms / 2));
  ttl = req.ttl_ms;
  const o = req.options || {};
  opts = {
    driftFactor: Number(o.driftFactor || 0.01),
    retryDelay: Number(o.retryDelay || 200),
    retryJitter: Number(o.retryJitter || 200),
  };
  checkValidity = o.checkValidity === 'true';
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
  return { type: 'init_ok' };
}

// failure tells "the library said no" (every vote against was a node on
// which the key was held: ResourceLockedError) from "a node did not answer".
async function failure(err) {
  const attempts = (err && err.attempts) || [];
  if (attempts.length === 0) return { type: 'unknown', error: String(err && err.message) };
  const stats = await attempts[attempts.length - 1];
  const other = [...stats.votesAgainst.values()].filter((e) => !(e instanceof ResourceLockedError));
  return other.length === 0 ? { type: 'refused' }
    : { type: 'unknown', error: `${err.message} (${other.length} node errors: ${other[0].message})` };
}

async function acquire(req) {
  const wait = req.wait_ms || 0;
  const settings = wait > 0 ? { retryCount: Math.max(1, Math.ceil(wait / opts.retryDelay)), retryDelay: opts.retryDelay } : undefined;
  let lock;
  try {
    lock = await redlock.acquire([req.key], ttl, settings);
  } catch (e) {
    return failure(e);
  }
  held.set(lock.value, lock);
  const ans = { type: 'granted', token: lock.value };
  if (checkValidity) ans.valid_ms = lock.expiration - Date.now();
  return ans;
}

async function release(req) {
  const lock = held.get(req.token);
  if (!lock) return { type: 'not_held' };
  held.delete(req.token);
  try {
    await lock.release();
    return { type: 'released' };
  } catch (e) {
    const f = await failure(e);
    return f.type === 'refused' ? { type: 'not_held' } : f;
  }
}

async function renew(req) {
  const lock = held.get(req.token);
  if (!lock) return { type: 'not_held' };
  let next;
  try {
    next = await lock.extend(ttl);
  } catch (e) {
    const f = await failure(e);
    return f.type === 'refused' ? { type: 'not_held' } : f;
  }
  held.set(req.token, next);
  const ans = { type: 'renewed' };
  if (checkValidity) ans.valid_ms = next.expiration - Date.now();
  return ans;
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
