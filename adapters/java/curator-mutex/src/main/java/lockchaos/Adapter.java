package lockchaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.client.ZKClientConfig;

/**
 * lockchaos adapter (docs/protocol.md) for Apache Curator's InterProcessMutex:
 * the ZooKeeper lock recipe (an EPHEMERAL_SEQUENTIAL node under the lock's
 * path; the lowest holds it), reentrant for the thread that holds it. Every
 * request is handled on the main thread, one at a time, since the mutex
 * belongs to the thread that took it.
 */
public final class Adapter {
    private static final ObjectMapper JSON = new ObjectMapper();
    // One mutex per key, as an application keeps one per resource: its
    // re-entries count on it. token -> how many grants of it are held.
    private static final Map<String, Mutex> MUTEXES = new HashMap<>();
    private static final Map<String, Integer> GRANTS = new ConcurrentHashMap<>();
    private static CuratorFramework client;

    /** InterProcessMutex, with its lock node's path: how ZooKeeper marks the grant. */
    private static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String lockPath() {
            return getLockPath();
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            JsonNode req = JSON.readTree(line);
            ObjectNode ans;
            try {
                ans = handle(req);
            } catch (IllegalMonitorStateException e) {
                ans = answer("not_held");
            } catch (Exception e) {
                ans = answer("unknown").put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            ans.put("in_reply_to", req.get("id").asLong());
            send(ans);
            if ("granted".equals(ans.path("type").asText())) {
                granted(ans.get("token").asText());
            }
        }
        Runtime.getRuntime().halt(0); // standard input ended: leave at once
    }

    /** One line on standard output; the connection listener's thread writes too. */
    private static synchronized void send(ObjectNode msg) throws Exception {
        System.out.println(JSON.writeValueAsString(msg));
        System.out.flush();
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
                return release(req.get("token").asText());
            default:
                return answer("error").put("error", "unknown request type " + req.path("type").asText());
        }
    }

    private static ObjectNode init(JsonNode req) throws InterruptedException {
        int timeout = req.get("op_timeout_ms").asInt();
        // The session timeout is the lease: the servers delete the lock
        // node once the session has been silent that long. An operation
        // first waits for a connection (Curator's connection timeout), then
        // for its answer (ZooKeeper's request timeout; without it the client
        // waits until it notices the connection is gone, two thirds of the
        // session), each attempt's share of the op timeout (see client).
        client = client(req.get("connect").asText(), req.get("ttl_ms").asInt(), timeout,
                Integer.parseInt(req.path("options").path("retries").asText("1")));
        // Curator's advice for its locks: once the connection is SUSPENDED
        // (or the session LOST), a holder cannot be sure it still holds the
        // lock, and should stop as if it had lost it.
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state != ConnectionState.LOST && state != ConnectionState.SUSPENDED) {
                return;
            }
            System.err.println("connection " + state);
            for (String token : GRANTS.keySet()) {
                lost(token, "connection " + state);
            }
        });
        client.start();
        // Connecting (a JVM beside others on two cores) is not the run's.
        if (!client.blockUntilConnected(Math.max(timeout, 10_000), TimeUnit.MILLISECONDS)) {
            return answer("error").put("error", "no ZooKeeper session within 10 s at " + req.get("connect").asText());
        }
        // Warm up on a key of this client's own, before the run's clock.
        Mutex warm = new Mutex(client, "/lockchaos-warmup/" + req.path("owner").asText());
        for (int i = 0; i < 10; i++) {
            try {
                if (warm.acquire(0, TimeUnit.MILLISECONDS)) {
                    warm.release();
                }
            } catch (Exception e) {
                System.err.println("warm-up: " + e);
            }
        }
        return answer("init_ok");
    }

    /**
     * The client, the adapter's and make bench's (Bench): each request
     * retried 100 ms apart (option retries, 1 by default), all attempts
     * within the op timeout. Curator's documentation always gives a retry policy. With
     * none (retries=0, this adapter's until 2026-11), a failed acquire's
     * FindAndDeleteProtectedNodeInBackground runs again at once each time
     * it gives up, since its reset keeps the operation's start time, until
     * StackOverflowError (as in CURATOR-106, open), each give-up marking the
     * connection SUSPENDED: beside CPU hogs the clients stayed SUSPENDED or
     * LOST seconds after a reset-peer fault ended, every grant given back,
     * and CI's matrix found curator-mutex+reset-peer stuck (2 of 4 runs here
     * beside eight hogs; none with one retry). A policy bounded by elapsed
     * time (RetryUntilElapsed) recurses the same way; one counted retry
     * queues the operation with a sleep, and the recursion ends.
     */
    static final int RETRY_SLEEP_MS = 100;

    static CuratorFramework client(String connect, int sessionMs, int timeout, int retries) {
        // Each attempt waits for a connection, then for the answer; the
        // attempts and the sleeps between them fit in the op timeout.
        int wait = Math.max(1, (timeout - retries * RETRY_SLEEP_MS) / (2 * (retries + 1)));
        ZKClientConfig zk = new ZKClientConfig();
        zk.setProperty(ZKClientConfig.ZOOKEEPER_REQUEST_TIMEOUT, String.valueOf(wait));
        return CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(wait)
                .retryPolicy(new RetryNTimes(retries, RETRY_SLEEP_MS))
                .zkClientConfig(zk)
                .build();
    }

    /**
     * Curator's lock documentation: after SUSPENDED a holder cannot be sure
     * it holds the lock until RECONNECTED. Curator marks even a working
     * connection SUSPENDED when a background operation gives up on a
     * connection loss (after a failed acquire,
     * FindAndDeleteProtectedNodeInBackground gives up once its retries
     * are spent), lets acquire succeed meanwhile, and once SUSPENDED has
     * lasted the session timeout closes the session itself, deleting the
     * node of a lock granted in between (seen in curator-mutex+pause-node).
     * So a grant that comes while the connection is SUSPENDED or LOST is
     * not trusted: the adapter gives it back and answers unknown, as an
     * application that follows the documentation would.
     */
    private static ObjectNode acquire(String key, long waitMs) throws Exception {
        Mutex mutex = MUTEXES.computeIfAbsent(key, k -> new Mutex(client, "/lockchaos/" + k));
        if (!mutex.acquire(waitMs, TimeUnit.MILLISECONDS)) {
            return answer("refused");
        }
        String token = mutex.lockPath();
        if (!connected()) {
            System.err.println("granted while SUSPENDED or LOST, given back: " + token);
            try {
                mutex.release();
            } catch (Exception e) {
                System.err.println("giving back " + token + ": " + e);
            }
            return answer("unknown").put("error", "Curator granted " + token
                    + " while the connection was SUSPENDED or LOST: not trusted, given back");
        }
        return answer("granted").put("token", token);
    }

    /** Whether Curator's connection state is CONNECTED or RECONNECTED now, without waiting. */
    private static boolean connected() throws InterruptedException {
        return client.blockUntilConnected(0, TimeUnit.MILLISECONDS);
    }

    /**
     * Counts a grant once its answer is out, so that a lost never comes
     * before the granted it ends. A state that changed since acquire's look
     * is caught here or by the listener, which sees the grant counted.
     */
    private static void granted(String token) throws InterruptedException {
        GRANTS.merge(token, 1, Integer::sum);
        if (!connected()) {
            System.err.println("SUSPENDED or LOST just after the grant: " + token);
            lost(token, "the connection was SUSPENDED or LOST just after the grant");
        }
    }

    private static void lost(String token, String why) {
        try {
            send(answer("lost").put("key", token.substring("/lockchaos/".length(), token.lastIndexOf('/')))
                    .put("token", token).put("error", why));
        } catch (Exception e) {
            System.err.println("lost: " + e);
        }
    }

    private static ObjectNode release(String token) throws Exception {
        Integer grants = GRANTS.get(token);
        if (grants == null) {
            return answer("not_held");
        }
        if (grants == 1) {
            GRANTS.remove(token);
        } else {
            GRANTS.put(token, grants - 1);
        }
        String key = token.substring("/lockchaos/".length(), token.lastIndexOf('/'));
        MUTEXES.get(key).release(); // IllegalMonitorStateException: not held any more
        return answer("released");
    }
}
