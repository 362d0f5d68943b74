package lockchaos;

import java.util.Arrays;
import java.util.List;
import org.redisson.RedissonRedLock;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * make bench's other half for the Redisson adapters (docs/protocol.md,
 * {@code bench}): the lock timed in its own process, with the adapter's
 * client settings. {@code java -cp redisson-adapter.jar lockchaos.Bench
 * [fenced|fair|spin|redlock] HOST:PORT...} times {@code tryLock(0, lease)} on a fresh
 * key 2000 times after 1000 untimed ones (the JIT's warm-up), unlocks each
 * untimed, and prints {@code {"acquire_p50_us", "acquire_p99_us",
 * "holds_per_s", "n"}}.
 */
public final class Bench {
    public static void main(String[] args) throws Exception {
        String kind = args[0].contains(":") ? "rlock" : args[0];
        List<String> addrs = Arrays.asList(args).subList(kind.equals("rlock") ? 0 : 1, args.length);
        // RedissonRedLock: a client per node, as the adapter's.
        RedissonClient[] clients = addrs.subList(0, kind.equals("redlock") ? addrs.size() : 1).stream()
                .map(a -> Redisson.create(Adapter.config(a, 2000, "single", null, 0))).toArray(RedissonClient[]::new);
        RedissonClient redisson = clients[0];
        int warm = 1000, n = 2000;
        double[] samples = new double[n];
        long start = 0;
        for (int i = 0; i < warm + n; i++) {
            if (i == warm) {
                start = System.nanoTime();
            }
            String key = "bench:" + (i % 1000);
            RLock lock = kind.equals("redlock") ? new RedissonRedLock(Arrays.stream(clients).map(c -> c.getLock(key)).toArray(RLock[]::new))
                    : kind.equals("fenced") ? redisson.getFencedLock(key)
                    : kind.equals("fair") ? redisson.getFairLock(key)
                    : kind.equals("spin") ? redisson.getSpinLock(key)
                    : redisson.getLock(key);
            long t = System.nanoTime();
            boolean ok = lock.tryLock(0, 2000, TimeUnit.MILLISECONDS);
            long took = System.nanoTime() - t;
            if (!ok) {
                throw new IllegalStateException("acquire " + i + " of a fresh key refused");
            }
            lock.unlock();
            if (i >= warm) {
                samples[i - warm] = took / 1000.0;
            }
        }
        double total = (System.nanoTime() - start) / 1e9;
        Arrays.sort(samples);
        System.out.printf("{\"acquire_p50_us\": %.1f, \"acquire_p99_us\": %.1f, \"holds_per_s\": %.1f, \"n\": %d}%n",
                samples[n / 2], samples[n * 99 / 100], n / total, n);
        for (RedissonClient c : clients) {
            c.shutdown();
        }
    }
}
