'use strict';
// make bench's other half for redis-semaphore-mutex (and, with the first
// argument redlock, redis-semaphore-redlock): the Mutex timed in its own
// process, with the adapter's client settings (../benchloop.js).
//   node bench.js [redlock] HOST:PORT...
const Redis = require('ioredis');
const { Mutex, RedlockMutex } = require('redis-semaphore');
const { bench } = require('../benchloop');

const args = process.argv.slice(2);
const redlock = args[0] === 'redlock';
// Try once, as the adapter does.
const options = { lockTimeout: 2000, acquireTimeout: 2000, acquireAttemptsLimit: 1, refreshInterval: 0 };

bench(Redis, redlock ? args.slice(1) : args.slice(0, 1), 2000, (clients) => async (key) => {
  const m = redlock ? new RedlockMutex(clients, key, options) : new Mutex(clients[0], key, options);
  return (await m.tryAcquire()) ? m : null;
}, (m) => m.release());
