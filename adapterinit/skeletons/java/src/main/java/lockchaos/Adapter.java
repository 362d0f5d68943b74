package lockchaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.SetParams;

/**
 * A lockchaos adapter (docs/protocol.md) around Jedis: a plain token lease,
 * {@code SET key token NX PX ttl}, released and renewed by a Lua
 * compare-and-delete / compare-and-pexpire. Put your lock library's calls
 * in acquire, release and renew; one request at a time is allowed. A lock
 * bound to the thread that took it (a ReentrantLock-like registry) needs
 * its release on that thread: keep one thread per key and hand it the
 * request.
 */
public final class Adapter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String RELEASE =
            "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0";
    private static final String RENEW =
            "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('pexpire',KEYS[1],ARGV[2]) end return 0";
    private static JedisPooled jedis;
    private static String owner;
    private static long ttlMs, n;

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

    private static ObjectNode handle(JsonNode req) {
        String key = req.path("key").asText(), token = req.path("token").asText();
        switch (req.path("type").asText()) {
            case "init":
                return init(req);
            case "acquire":
                return acquire(key);
            case "release":
                return release(key, token);
            case "renew":
                return renew(key, token);
            default:
                return answer("error").put("error", "unknown request type " + req.path("type").asText());
        }
    }

    private static ObjectNode init(JsonNode req) {
        owner = req.get("owner").asText();
        ttlMs = req.get("ttl_ms").asLong();
        // Every command answers within the op timeout: a cut link gives
        // unknown, never a hang. Your library's whole worst-case acquire,
        // its own retries included, must fit it too.
        int timeout = req.get("op_timeout_ms").asInt();
        String[] node = req.get("nodes").get(0).asText().split(":");
        jedis = new JedisPooled(new HostAndPort(node[0], Integer.parseInt(node[1])),
                DefaultJedisClientConfig.builder().socketTimeoutMillis(timeout).connectionTimeoutMillis(timeout).build());
        // Warm the client up here, not in the first acquire (Lettuce's first
        // call took over 1 s): a JVM loads its classes on first use. An
        // unreachable store is no error: go on.
        try {
            jedis.ping();
        } catch (RuntimeException e) {
            System.err.println("warm-up: " + e);
        }
        return answer("init_ok");
    }

    /**
     * Your library's try-once acquire goes here (no try-once: its acquire
     * with the shortest wait). granted's token is what the library stores
     * at the key; random bytes go as token_b64 (base64) instead.
     */
    private static ObjectNode acquire(String key) {
        String token = owner + ":" + ++n;
        if ("OK".equals(jedis.set(key, token, SetParams.setParams().nx().px(ttlMs)))) {
            return answer("granted").put("token", token);
        }
        return answer("refused");
    }

    /**
     * Your library's release: not_held when the lease was no longer this
     * client's (a library whose unlock reports nothing: answer released).
     */
    private static ObjectNode release(String key, String token) {
        Object done = jedis.eval(RELEASE, List.of(key), List.of(token));
        return answer(Long.valueOf(1).equals(done) ? "released" : "not_held");
    }

    /** Your library's extend, by the TTL (lock.yaml: renew: true). */
    private static ObjectNode renew(String key, String token) {
        Object done = jedis.eval(RENEW, List.of(key), List.of(token, Long.toString(ttlMs)));
        return answer(Long.valueOf(1).equals(done) ? "renewed" : "not_held");
    }
}
