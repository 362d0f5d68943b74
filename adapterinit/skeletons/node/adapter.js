// A lockchaos adapter (docs/protocol.md) around ioredis: a plain token
// lease, SET key token NX PX ttl, released and renewed by a Lua
// compare-and-delete / compare-and-pexpire. Put your lock library's calls
// in acquire, release and renew; answers may come in any order.
'use strict';
const readline = require('readline');
const Redis = require('ioredis');

const RELEASE = 'if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) end return 0';
const RENEW = 'if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) end return 0';
let client = null;
let owner = '';
let ttl = 0;
let n = 0;

async function init(req) {
  const [host, port] = req.nodes[0].split(':');
  owner = req.owner;
  ttl = req.ttl_ms;
  // Every command answers within the op timeout, sent once: a cut link
  // gives unknown, never a hang; the client reconnects behind. Your
  // library's whole worst-case acquire, its own retries included, must
  // fit the op timeout too.
  const timeout = req.op_timeout_ms;
  client = new Redis({ host, port: Number(port), commandTimeout: timeout, connectTimeout: timeout,
    maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableReadyCheck: false,
    retryStrategy: () => 50 });
  client.on('error', (e) => process.stderr.write(`redis: ${e.message}\n`));
  // Warm the client up here, not in the first acquire (Lettuce's first
  // call took over 1 s); an unreachable store is no error: go on.
  await client.ping().catch(() => {});
  return { type: 'init_ok' };
}

// Your library's try-once acquire goes here (no try-once: its acquire with
// the shortest wait). granted's token is what the library stores at the
// key; random bytes go as token_b64 (base64) instead.
async function acquire(req) {
  const token = `${owner}:${++n}`;
  const ok = await client.set(req.key, token, 'PX', ttl, 'NX');
  return ok ? { type: 'granted', token } : { type: 'refused' };
}

// Your library's release: not_held when the lease was no longer this
// client's (a library whose unlock reports nothing: answer released).
async function release(req) {
  return { type: (await client.eval(RELEASE, 1, req.key, req.token)) ? 'released' : 'not_held' };
}

// Your library's extend, by the TTL (lock.yaml: renew: true).
async function renew(req) {
  return { type: (await client.eval(RENEW, 1, req.key, req.token, ttl)) ? 'renewed' : 'not_held' };
}

const handlers = { init, acquire, release, renew };

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const req = JSON.parse(line);
  const handler = handlers[req.type];
  let ans;
  try {
    ans = handler ? await handler(req) : { type: 'error', error: `unknown request type ${req.type}` };
  } catch (e) {
    ans = { type: 'unknown', error: e.message };
  }
  process.stdout.write(JSON.stringify({ ...ans, in_reply_to: req.id }) + '\n');
}).on('close', () => { if (client) client.disconnect(); });
