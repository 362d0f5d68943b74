'use strict';
// make bench's other half for redis-semaphore-mutex (and, with the first
// argument redlock, redis-semaphore-redlock): the Mutex timed in its own
// process, with the adapter's client settings (../benchloop.js).
//   node bench.js [redlock] HOST:PORT...
const Redis = require('ioredis');
const { Mutex, RedlockMutex } = require('redis-semaphore');
const { loop } = require('../benchloop');

const args = process.argv.slice(2);
const redlock = args[0] === 'redlock';
const addrs = redlock ? args.slice(1) : args.slice(0, 1);
const clients = addrs.map((addr) => {
  const [host, port] = addr.split(':');
  return new Redis({ host, port: Number(port), commandTimeout: 2000, connectTimeout: 2000,
    maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableReadyCheck: false });
});
// Try once, as the adapter does.
const options = { lockTimeout: 2000, acquireTimeout: 2000, acquireAttemptsLimit: 1, refreshInterval: 0 };

Promise.all(clients.map((c) => c.ping())).then(() => loop(async (key) => {
  const m = redlock ? new RedlockMutex(clients, key, options) : new Mutex(clients[0], key, options);
  return (await m.tryAcquire()) ? m : null;
}, (m) => m.release())).then(() => clients.forEach((c) => c.disconnect()), (e) => {
  process.stderr.write(`${e.stack}\n`);
  process.exit(1);
});
