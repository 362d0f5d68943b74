package lockchaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.redis.spring.RedisLockProvider;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * lockchaos adapter (docs/protocol.md) for ShedLock's RedisLockProvider on
 * Spring Data Redis (Lettuce): a key job-lock:default:NAME, taken by SET NX
 * PX with lockAtMostFor as its expiry and a value of the lock's own
 * ("ADDED:time@host:uuid"). unlock() deletes the key with a plain DEL,
 * whoever holds it by then (safeUpdate: only while it holds this lock's
 * value), and says nothing of which. No renewal, no fencing: ShedLock
 * assumes a task ends within lockAtMostFor. Requests run one at a time,
 * in order, on the main thread.
 */
public final class Adapter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, SimpleLock> HELD = new HashMap<>();
    private static LockProvider provider;
    private static Duration atMost;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            JsonNode req = JSON.readTree(line);
            ObjectNode ans;
            try {
                ans = handle(req);
            } catch (Exception e) {
                // ShedLock and Spring wrap what went wrong (LockException,
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
                return acquire(req.get("key").asText());
            case "release":
                return release(req.get("token").asText());
            default:
                return answer("error").put("error", "unknown request type " + req.path("type").asText());
        }
    }

    private static ObjectNode init(JsonNode req) throws Exception {
        JsonNode opts = req.path("options");
        String lease = opts.path("lease").asText("");
        atMost = Duration.ofMillis(lease.isEmpty() ? req.get("ttl_ms").asLong() : Long.parseLong(lease));
        String[] hostPort = req.get("nodes").get(0).asText().split(":");
        // No hidden retries: a command waits the op timeout at most.
        LettuceClientConfiguration client = LettuceClientConfiguration.builder()
                .commandTimeout(Duration.ofMillis(req.get("op_timeout_ms").asLong()))
                .build();
        LettuceConnectionFactory factory = new LettuceConnectionFactory(
                new RedisStandaloneConfiguration(hostPort[0], Integer.parseInt(hostPort[1])), client);
        factory.afterPropertiesSet();
        factory.start();
        provider = new RedisLockProvider.Builder(factory)
                .safeUpdate(opts.path("safe-update").asText("off").equals("on"))
                .build();
        // Warm up before the run's clock starts: classes, the connection,
        // the host name in every value.
        for (int i = 0; i < 20; i++) {
            try {
                provider.lock(new LockConfiguration(ClockProvider.now(), "lockchaos-warmup:" + req.path("owner").asText(), Duration.ofMillis(100), Duration.ZERO))
                        .ifPresent(SimpleLock::unlock);
            } catch (Exception e) {
                System.err.println("warm-up: " + e);
            }
        }
        return answer("init_ok");
    }

    private static ObjectNode acquire(String key) throws ReflectiveOperationException {
        // lockAtMostFor is the lease: the key's PX. Try once, as a
        // scheduled task does.
        Optional<SimpleLock> lock = provider.lock(new LockConfiguration(ClockProvider.now(), key, atMost, Duration.ZERO));
        if (lock.isEmpty()) {
            return answer("refused");
        }
        // The lease's token is the value ShedLock stored at the key, which
        // its lock keeps to itself: lockchaos asks Redis whether the key
        // still holds it.
        Field value = lock.get().getClass().getDeclaredField("value");
        value.setAccessible(true);
        String token = (String) value.get(lock.get());
        HELD.put(token, lock.get());
        return answer("granted").put("token", token);
    }

    private static ObjectNode release(String token) {
        SimpleLock lock = HELD.remove(token);
        if (lock == null) {
            return answer("not_held");
        }
        // A plain DEL of the key, whoever holds it now (or, with
        // safeUpdate, a script whose answer ShedLock drops): nothing says
        // whether it was still this lock's.
        lock.unlock();
        return answer("released");
    }
}
