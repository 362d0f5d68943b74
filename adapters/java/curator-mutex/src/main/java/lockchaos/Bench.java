package lockchaos;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;

/**
 * make bench's other half for curator-mutex (docs/protocol.md, {@code
 * bench}): InterProcessMutex timed in its own process, with the adapter's
 * client settings. {@code java -cp curator-adapter.jar lockchaos.Bench
 * HOST:PORT...} times {@code acquire(0, ms)} of a fresh key's mutex 2000
 * times after 1000 untimed ones (the JIT's warm-up), releases each
 * untimed, and prints {@code {"acquire_p50_us", "acquire_p99_us",
 * "holds_per_s", "n"}}.
 */
public final class Bench {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = Adapter.client(String.join(",", args), 2000, 2000, 1);
        client.start();
        if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no ZooKeeper session within 10 s");
        }
        int warm = 1000, n = 2000;
        double[] samples = new double[n];
        long start = 0;
        for (int i = 0; i < warm + n; i++) {
            if (i == warm) {
                start = System.nanoTime();
            }
            InterProcessMutex mutex = new InterProcessMutex(client, "/lockchaos/bench:" + (i % 1000));
            long t = System.nanoTime();
            boolean ok = mutex.acquire(0, TimeUnit.MILLISECONDS);
            long took = System.nanoTime() - t;
            if (!ok) {
                throw new IllegalStateException("acquire " + i + " of a fresh key refused");
            }
            mutex.release();
            if (i >= warm) {
                samples[i - warm] = took / 1000.0;
            }
        }
        double total = (System.nanoTime() - start) / 1e9;
        Arrays.sort(samples);
        System.out.printf("{\"acquire_p50_us\": %.1f, \"acquire_p99_us\": %.1f, \"holds_per_s\": %.1f, \"n\": %d}%n",
                samples[n / 2], samples[n * 99 / 100], n / total, n);
        client.close();
    }
}
