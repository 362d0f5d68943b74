'use strict';
// make bench's other half for node-redlock-5.0.0-beta.2: its Redlock over
// the given nodes timed in its own process, with the adapter's client
// settings (../benchloop.js).
//   node bench.js HOST:PORT...
const Redis = require('ioredis');
const Redlock = require('redlock').default;
const { bench } = require('../benchloop');

bench(Redis, process.argv.slice(2), 1000, (clients) => {
  const redlock = new Redlock(clients, { driftFactor: 0.01, retryCount: 0 });
  return (key) => redlock.acquire([key], 2000);
}, (lock) => lock.release());
