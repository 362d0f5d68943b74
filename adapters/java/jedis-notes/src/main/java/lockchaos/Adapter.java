package lockchaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.UUID;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.SetParams;

/**
 * lockchaos adapter (docs/protocol.md) for the Jedis lock of the project's
 * source notes (../shared/seeds/002_… and 003_…), written fresh to their
 * description:
 *
 * <ul>
 *   <li>tryLock: {@code SET key value NX PX ttl}, "OK" means acquired;
 *   <li>the blocking lock(key, request, blockTime): tryLock, then
 *       {@code Thread.sleep(DEFAULT_SLEEP_TIME)} while blockTime lasts;
 *   <li>release=del: value "1" and a plain {@code DEL} (note 002's first
 *       lock), which deletes whoever holds the key;
 *   <li>release=lua: a request id as value and the Lua compare-and-delete
 *       (note 002's improvement, note 003's unlock).
 * </ul>
 *
 * The notes' tryLock swallows an exception and returns false; a command
 * whose answer never came may still have set the key, so this adapter says
 * unknown there, with Jedis's error text.
 */
public final class Adapter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String UNLOCK =
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    private static JedisPooled jedis;
    private static boolean plainDel;
    private static long ttlMs, sleepMs;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            JsonNode req = JSON.readTree(line);
            ObjectNode ans;
            try {
                ans = handle(req);
            } catch (Exception e) {
                ans = answer("unknown").put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            ans.put("in_reply_to", req.get("id").asLong());
            System.out.println(JSON.writeValueAsString(ans));
            System.out.flush();
        }
        Runtime.getRuntime().halt(0);
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
                return release(req.get("key").asText(), req.get("token").asText());
            default:
                return answer("error").put("error", "unknown request type " + req.path("type").asText());
        }
    }

    private static ObjectNode init(JsonNode req) {
        JsonNode opts = req.path("options");
        String release = opts.path("release").asText("lua");
        if (!release.equals("lua") && !release.equals("del")) {
            return answer("error").put("error", "option release: want lua or del, not " + release);
        }
        plainDel = release.equals("del");
        sleepMs = Long.parseLong(opts.path("sleep").asText("100"));
        ttlMs = req.get("ttl_ms").asLong();
        int timeout = req.get("op_timeout_ms").asInt();
        String[] node = req.get("nodes").get(0).asText().split(":");
        jedis = new JedisPooled(new HostAndPort(node[0], Integer.parseInt(node[1])),
                DefaultJedisClientConfig.builder()
                        .socketTimeoutMillis(timeout)
                        .connectionTimeoutMillis(Math.max(timeout, 10_000))
                        .build());
        jedis.ping(); // connect and load the classes before the run's clock starts
        return answer("init_ok");
    }

    /** tryLock, or note 003's lock(key, request, blockTime) when waitMs > 0. */
    private static ObjectNode acquire(String key, long waitMs) throws InterruptedException {
        String value = plainDel ? "1" : UUID.randomUUID().toString();
        for (long blockTime = waitMs; ; ) {
            if ("OK".equals(jedis.set(key, value, SetParams.setParams().nx().px(ttlMs)))) {
                return answer("granted").put("token", value); // how Redis keeps the lease
            }
            if (waitMs <= 0) {
                return answer("refused"); // tryLock
            }
            blockTime -= sleepMs; // note 003: decrement, sleep, then loop while blockTime >= 0
            Thread.sleep(sleepMs);
            if (blockTime < 0) {
                return answer("refused");
            }
        }
    }

    private static ObjectNode release(String key, String token) {
        Object n = plainDel
                ? jedis.del(key)
                : jedis.eval(UNLOCK, Collections.singletonList(key), Collections.singletonList(token));
        return answer(Long.valueOf(1).equals(n) ? "released" : "not_held");
    }
}
