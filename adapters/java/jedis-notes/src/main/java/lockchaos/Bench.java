package lockchaos;

import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.SetParams;

/**
 * make bench's other half for jedis-notes (docs/protocol.md, {@code bench}):
 * the notes' lock timed in its own process, with the adapter's client
 * settings. {@code java -cp jedis-adapter.jar lockchaos.Bench HOST:PORT}
 * times {@code SET key id NX PX 2000} on a fresh key 2000 times after 1000
 * untimed ones (the JIT's warm-up), releases each untimed by the Lua
 * compare-and-delete, and prints {@code {"acquire_p50_us",
 * "acquire_p99_us", "holds_per_s", "n"}}.
 */
public final class Bench {
    private static final String UNLOCK =
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

    public static void main(String[] args) {
        String[] node = args[0].split(":");
        JedisPooled jedis = new JedisPooled(new HostAndPort(node[0], Integer.parseInt(node[1])),
                DefaultJedisClientConfig.builder().socketTimeoutMillis(2000).connectionTimeoutMillis(10_000).build());
        int warm = 1000, n = 2000;
        double[] samples = new double[n];
        long start = 0;
        for (int i = 0; i < warm + n; i++) {
            if (i == warm) {
                start = System.nanoTime();
            }
            String key = "bench:" + (i % 1000), id = UUID.randomUUID().toString();
            long t = System.nanoTime();
            String ok = jedis.set(key, id, SetParams.setParams().nx().px(2000));
            long took = System.nanoTime() - t;
            if (!"OK".equals(ok)) {
                throw new IllegalStateException("acquire " + i + " of a fresh key refused");
            }
            jedis.eval(UNLOCK, List.of(key), List.of(id));
            if (i >= warm) {
                samples[i - warm] = took / 1000.0;
            }
        }
        double total = (System.nanoTime() - start) / 1e9;
        Arrays.sort(samples);
        System.out.printf("{\"acquire_p50_us\": %.1f, \"acquire_p99_us\": %.1f, \"holds_per_s\": %.1f, \"n\": %d}%n",
                samples[n / 2], samples[n * 99 / 100], n / total, n);
        jedis.close();
    }
}
