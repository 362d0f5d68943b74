'use strict';
// make bench's in-process half for the Node adapters: a library's lock
// timed in its own process, without lockchaos (docs/protocol.md, `bench`).
// loop(acquire, release) times acquire(key) on a fresh key (i % 1000) n
// times after warm untimed ones, releases each untimed, and prints one JSON
// line: {acquire_p50_us, acquire_p99_us, holds_per_s, n}; holds/s are the
// acquire-and-release pairs per second of the timed loop.
async function loop(acquire, release, n = 2000, warm = 200) {
  const samples = [];
  let start = 0n;
  for (let i = 0; i < warm + n; i++) {
    if (i === warm) start = process.hrtime.bigint();
    const t = process.hrtime.bigint();
    const held = await acquire(`bench:${i % 1000}`);
    const took = process.hrtime.bigint() - t;
    if (!held) throw new Error(`acquire ${i} of a fresh key refused`);
    await release(held);
    if (i >= warm) samples.push(Number(took) / 1000);
  }
  const total = Number(process.hrtime.bigint() - start) / 1e9;
  samples.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({
    acquire_p50_us: samples[Math.floor(samples.length / 2)],
    acquire_p99_us: samples[Math.floor(samples.length * 99 / 100)],
    holds_per_s: n / total, n,
  }) + '\n');
}

// bench connects to addrs with Redis (ioredis, from the caller's
// node_modules) as the adapters do — no retries, a command timeout of
// timeoutMs — runs loop, disconnects, and exits 1 on an error.
function bench(Redis, addrs, timeoutMs, makeAcquire, release) {
  const clients = addrs.map((addr) => {
    const [host, port] = addr.split(':');
    return new Redis({ host, port: Number(port), commandTimeout: timeoutMs, connectTimeout: timeoutMs,
      maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableReadyCheck: false });
  });
  const acquire = makeAcquire(clients);
  Promise.all(clients.map((c) => c.ping()))
    .then(() => loop(acquire, release))
    .then(() => clients.forEach((c) => c.disconnect()), (e) => {
      process.stderr.write(`${e.stack}\n`);
      process.exit(1);
    });
}

module.exports = { loop, bench };
