package lockchaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.hazelcast.client.HazelcastClient;
import com.hazelcast.client.config.ClientConfig;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.cp.internal.datastructures.lock.proxy.AbstractFencedLockProxy;
import com.hazelcast.cp.lock.FencedLock;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * lockchaos adapter (docs/protocol.md) for Hazelcast's FencedLock, the lock
 * of its CP Subsystem: a lock kept by a Raft group of CP members, held by a
 * CP session of this client (kept alive by its heartbeats; the members free
 * its locks once it has been silent for the session TTL), and a fencing
 * token, a number that grows with every new holder. A FencedLock belongs to
 * the thread that took it, so every lock call runs on one thread of its
 * own, in the order the requests came; the main thread waits for each at
 * most the request's timeout_ms, and answers unknown when it did not end.
 */
public final class Adapter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ExecutorService LOCKS = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "locks");
        t.setDaemon(true);
        return t;
    });
    private static HazelcastInstance client;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            JsonNode req = JSON.readTree(line);
            ObjectNode ans;
            try {
                ans = handle(req);
            } catch (TimeoutException e) {
                ans = answer("unknown").put("error", "no answer within " + req.path("timeout_ms").asLong() + " ms");
            } catch (Exception e) {
                Throwable c = e.getCause() != null && e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                ans = answer("unknown").put("error", c.getClass().getSimpleName() + ": " + c.getMessage());
            }
            ans.put("in_reply_to", req.get("id").asLong());
            System.out.println(JSON.writeValueAsString(ans));
            System.out.flush();
        }
        Runtime.getRuntime().halt(0); // standard input ended: leave at once
    }

    private static ObjectNode answer(String type) {
        return JSON.createObjectNode().put("type", type);
    }

    private static ObjectNode handle(JsonNode req) throws Exception {
        String type = req.path("type").asText();
        if (type.equals("init")) {
            return init(req);
        }
        long timeout = req.path("timeout_ms").asLong(1000);
        Future<ObjectNode> f;
        switch (type) {
            case "acquire":
                f = LOCKS.submit(() -> acquire(req.get("key").asText(), req.path("wait_ms").asLong(0)));
                break;
            case "release":
                f = LOCKS.submit(() -> release(req.get("key").asText()));
                break;
            default:
                return answer("error").put("error", "unknown request type " + type);
        }
        return f.get(timeout, TimeUnit.MILLISECONDS);
    }

    private static ObjectNode init(JsonNode req) {
        client = HazelcastClient.newHazelcastClient(config(req.get("cluster").asText(), nodes(req), req.get("op_timeout_ms").asInt()));
        // Warm up on a key of this client's own, before the run's clock.
        FencedLock warm = client.getCPSubsystem().getLock("warmup-" + req.path("owner").asText());
        for (int i = 0; i < 10; i++) {
            if (warm.tryLock()) {
                warm.unlock();
            }
        }
        return answer("init_ok");
    }

    private static String[] nodes(JsonNode req) {
        String[] nodes = new String[req.get("nodes").size()];
        for (int i = 0; i < nodes.length; i++) {
            nodes[i] = req.get("nodes").get(i).asText();
        }
        return nodes;
    }

    /**
     * The client, the adapter's and make bench's: it talks to the members
     * only through the addresses it was given (lockchaos's proxies), never
     * to the addresses the members announce, which would go around every
     * network fault: one connection at a time (unisocket), and on a
     * reconnect the given addresses only. It keeps trying to reconnect for
     * ever, and an invocation gives up after the op timeout (whole seconds,
     * at least 1).
     */
    static ClientConfig config(String cluster, String[] nodes, int opTimeoutMs) {
        ClientConfig c = new ClientConfig();
        c.setClusterName(cluster);
        c.getNetworkConfig().addAddress(nodes).setSmartRouting(false);
        c.setProperty("hazelcast.client.internal.skip.member.list.during.reconnection", "true");
        c.setProperty("hazelcast.client.invocation.timeout.seconds", String.valueOf(Math.max(1, (opTimeoutMs + 999) / 1000)));
        c.setProperty("hazelcast.logging.type", "jdk");
        c.getConnectionStrategyConfig().getConnectionRetryConfig()
                .setInitialBackoffMillis(50).setMaxBackoffMillis(500).setClusterConnectTimeoutMillis(-1);
        return c;
    }

    /**
     * tryLockAndGetFence: a fence of 0 (INVALID_FENCE) is a refusal. The
     * token is the fence and the CP session that holds the lock,
     * FENCE/SESSION: the store's members list their live sessions, which is
     * how lockchaos sees whether the lease survived a fault. A re-entry
     * gives the same fence, so the same token.
     */
    private static ObjectNode acquire(String key, long waitMs) throws Exception {
        FencedLock lock = client.getCPSubsystem().getLock(key);
        long fence = waitMs > 0 ? lock.tryLockAndGetFence(waitMs, TimeUnit.MILLISECONDS) : lock.tryLockAndGetFence();
        if (fence == FencedLock.INVALID_FENCE) {
            return answer("refused");
        }
        return answer("granted").put("token", fence + "/" + session(lock)).put("fence", fence);
    }

    /**
     * unlock: one grant of this thread's; a lock this thread no longer
     * holds (released, or its session expired: LockOwnershipLostException
     * is one) throws IllegalMonitorStateException.
     */
    private static ObjectNode release(String key) {
        try {
            client.getCPSubsystem().getLock(key).unlock();
            return answer("released");
        } catch (IllegalMonitorStateException e) {
            return answer("not_held").put("error", e.getMessage());
        }
    }

    /**
     * The CP session the lock was taken in. FencedLock does not say, but the
     * client's proxy keeps it, by thread id, in the lock object it wraps
     * (AbstractFencedLockProxy.getLockedSessionId): the session every call
     * of this thread's checks.
     */
    private static long session(FencedLock lock) throws ReflectiveOperationException {
        Field f = lock.getClass().getDeclaredField("lock");
        f.setAccessible(true);
        Long id = ((AbstractFencedLockProxy) f.get(lock)).getLockedSessionId(Thread.currentThread().getId());
        if (id == null) {
            throw new IllegalStateException("the lock's proxy keeps no session for this thread");
        }
        return id;
    }
}
