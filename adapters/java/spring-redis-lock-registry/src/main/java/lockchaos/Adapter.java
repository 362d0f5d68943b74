package lockchaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

/**
 * lockchaos adapter (docs/protocol.md) for Spring Integration's
 * RedisLockRegistry: a lock per key, {@code lockchaos:KEY} in Redis set to
 * the registry's client id with an expiry of expireAfter (the lease), in
 * its spin mode (a retry every idleBetweenTries) or pub-sub mode (waiters
 * woken by the unlock's message); with renew=on a task scheduler renews a
 * held lock every third of expireAfter. unlock() of a lock whose key
 * expired throws ("The integrity of data protected by this lock may have
 * been compromised"): not_held. A lock belongs to the thread that took it:
 * every request runs on the main thread, one at a time.
 */
public final class Adapter {
    private static final ObjectMapper JSON = new ObjectMapper();
    // token\nkey -> the lock and its grants (re-entries).
    private static final Map<String, Lock> HELD = new HashMap<>();
    private static final Map<String, Integer> GRANTS = new HashMap<>();
    private static RedisLockRegistry registry;
    private static String clientId;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            JsonNode req = JSON.readTree(line);
            ObjectNode ans;
            try {
                ans = handle(req);
            } catch (ConcurrentModificationException | IllegalStateException e) {
                // unlock(): the key expired, or this thread holds no lock.
                ans = answer("not_held");
            } catch (Exception e) {
                // Spring wraps what went wrong (CannotAcquireLockException,
                // RedisCommandTimeoutException…): the innermost cause says what.
                Throwable cause = e;
                while (cause.getCause() != null && cause.getCause() != cause) {
                    cause = cause.getCause();
                }
                String error = e.getClass().getSimpleName() + ": " + e.getMessage();
                if (cause != e) {
                    error += " (" + cause.getClass().getSimpleName() + ": " + cause.getMessage() + ")";
                }
                ans = answer("unknown").put("error", error);
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
        switch (req.path("type").asText()) {
            case "init":
                return init(req);
            case "acquire":
                return acquire(req.get("key").asText(), req.path("wait_ms").asLong(0));
            case "release":
                return release(req.get("token").asText() + "\n" + req.get("key").asText());
            default:
                return answer("error").put("error", "unknown request type " + req.path("type").asText());
        }
    }

    private static ObjectNode init(JsonNode req) throws Exception {
        JsonNode opts = req.path("options");
        String mode = opts.path("mode").asText("spin");
        if (!mode.equals("spin") && !mode.equals("pubsub")) {
            return answer("error").put("error", "option mode: want spin or pubsub, not " + mode);
        }
        String lease = opts.path("lease").asText("");
        long expireAfter = lease.isEmpty() ? req.get("ttl_ms").asLong() : Long.parseLong(lease);
        String[] hostPort = req.get("nodes").get(0).asText().split(":");
        // No hidden retries: a command waits the op timeout at most.
        LettuceClientConfiguration client = LettuceClientConfiguration.builder()
                .commandTimeout(Duration.ofMillis(req.get("op_timeout_ms").asLong()))
                .build();
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration(hostPort[0], Integer.parseInt(hostPort[1])), client);
        factory.afterPropertiesSet();
        factory.start();
        registry = new RedisLockRegistry(factory, "lockchaos", expireAfter);
        registry.setRedisLockType(mode.equals("pubsub")
                ? RedisLockRegistry.RedisLockType.PUB_SUB_LOCK
                : RedisLockRegistry.RedisLockType.SPIN_LOCK);
        String idle = opts.path("idle").asText("");
        if (!idle.isEmpty()) {
            registry.setIdleBetweenTries(Duration.ofMillis(Long.parseLong(idle)));
        }
        if (opts.path("renew").asText("off").equals("on")) {
            ThreadPoolTaskScheduler scheduler = new ThreadPoolTaskScheduler();
            scheduler.setThreadNamePrefix("lock-renewal-");
            scheduler.initialize();
            registry.setRenewalTaskScheduler(scheduler);
        }
        // The registry's client id is the value of every key it holds: the
        // lease's token, by which lockchaos asks Redis whether it lives.
        Field id = RedisLockRegistry.class.getDeclaredField("clientId");
        id.setAccessible(true);
        clientId = (String) id.get(registry);
        // Warm up before the run's clock starts: classes, the connection,
        // the scripts.
        for (int i = 0; i < 20; i++) {
            Lock warm = registry.obtain("warmup:" + req.path("owner").asText());
            try {
                if (warm.tryLock()) {
                    warm.unlock();
                }
            } catch (Exception e) {
                System.err.println("warm-up: " + e);
            }
        }
        return answer("init_ok");
    }

    private static ObjectNode acquire(String key, long waitMs) throws InterruptedException {
        Lock lock = registry.obtain(key);
        if (!lock.tryLock(waitMs, TimeUnit.MILLISECONDS)) {
            return answer("refused");
        }
        HELD.put(clientId + "\n" + key, lock);
        GRANTS.merge(clientId + "\n" + key, 1, Integer::sum);
        return answer("granted").put("token", clientId);
    }

    private static ObjectNode release(String grant) {
        Lock lock = HELD.get(grant);
        if (lock == null) {
            return answer("not_held");
        }
        if (GRANTS.merge(grant, -1, Integer::sum) <= 0) {
            HELD.remove(grant);
            GRANTS.remove(grant);
        }
        lock.unlock(); // ConcurrentModificationException: the key expired under it
        return answer("released");
    }
}
