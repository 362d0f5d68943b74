'use strict';
// make bench's other half for node-redlock-5.0.0-beta.2: its Redlock over
// the given nodes timed in its own process, with the adapter's client
// settings (../benchloop.js).
//   node bench.js HOST:PORT...
const Redis = require('ioredis');
const Redlock = require('redlock').default;
const { loop } = require('../benchloop');

const clients = process.argv.slice(2).map((addr) => {
  const [host, port] = addr.split(':');
  return new Redis({ host, port: Number(port), commandTimeout: 1000, connectTimeout: 1000,
    maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableReadyCheck: false });
});
const redlock = new Redlock(clients, { driftFactor: 0.01, retryCount: 0 });

Promise.all(clients.map((c) => c.ping())).then(() => loop((key) => redlock.acquire([key], 2000), (lock) => lock.release()))
  .then(() => clients.forEach((c) => c.disconnect()), (e) => {
    process.stderr.write(`${e.stack}\n`);
    process.exit(1);
  });
