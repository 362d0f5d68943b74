package lockchaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.HostPortNatMapper;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.BaseConfig;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;
import org.redisson.config.SentinelServersConfig;
import org.redisson.config.SubscriptionMode;

/**
 * lockchaos adapter (docs/protocol.md) for Redisson's locks: RLock, and with
 * the first argument {@code fenced}, {@code fair}, {@code spin} or
 * {@code redlock}, its RFencedLock, fair lock, spin lock or RedissonRedLock
 * over every node given (the lock.yaml files beside this one's folder).
 * Every request is handled on the main thread, one at a time: a Redisson
 * lock belongs to the thread that took it, so acquire, re-entry and release
 * all come from this one. Another thread reads the requests, so that a
 * cancel of the request in flight interrupts the main thread, as an
 * application cancels a call (Thread.interrupt, or a Future's
 * cancel(true)); a cancel of one not yet begun interrupts the thread as it
 * begins it.
 */
public final class Adapter {
    private static final ObjectMapper JSON = new ObjectMapper();
    // token -> the lock, and how many grants of it are held (re-entries).
    private static final Map<String, RLock> HELD = new HashMap<>();
    private static final Map<String, Integer> GRANTS = new HashMap<>();
    // One client per node: RedissonRedLock takes its locks from Redisson
    // instances of their own; every other kind uses the first.
    private static final List<RedissonClient> CLIENTS = new ArrayList<>();
    private static boolean leaseMode;
    private static long leaseMs;
    private static String kind = "rlock";
    // The requests read, the one the main thread is running (-1: none),
    // and the ones cancelled before it began them; guarded by CANCEL.
    private static final BlockingQueue<JsonNode> REQUESTS = new LinkedBlockingQueue<>();
    private static final Object CANCEL = new Object();
    private static long running = -1;
    private static final Set<Long> CANCELLED = new HashSet<>();

    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            kind = args[0];
        }
        if (!List.of("rlock", "fenced", "fair", "spin", "redlock").contains(kind)) {
            System.err.println("unknown lock " + kind + ": want rlock, fenced, fair, spin or redlock");
            System.exit(2);
        }
        Thread main = Thread.currentThread();
        Thread reader = new Thread(() -> read(main), "requests");
        reader.setDaemon(true);
        reader.start();
        for (JsonNode req; !(req = REQUESTS.take()).isMissingNode(); ) {
            long id = req.get("id").asLong();
            synchronized (CANCEL) {
                running = id;
                if (CANCELLED.remove(id)) {
                    main.interrupt();
                }
            }
            ObjectNode ans;
            try {
                ans = handle(req);
            } catch (IllegalMonitorStateException e) {
                ans = answer("not_held");
            } catch (Exception e) {
                ans = interrupted(e) ? cancelled(req) : unknown(e);
            }
            synchronized (CANCEL) {
                running = -1;
                Thread.interrupted(); // a cancel that came as the call ended
            }
            ans.put("in_reply_to", id);
            System.out.println(JSON.writeValueAsString(ans));
            System.out.flush();
        }
        Runtime.getRuntime().halt(0); // standard input ended: leave at once
    }

    /** Reads the requests: a cancel interrupts the request it names. */
    private static void read(Thread main) {
        try {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                JsonNode req = JSON.readTree(line);
                if (!req.path("type").asText().equals("cancel")) {
                    REQUESTS.add(req);
                    continue;
                }
                long of = req.path("of").asLong();
                synchronized (CANCEL) {
                    if (running == of) {
                        main.interrupt();
                    } else {
                        CANCELLED.add(of); // not begun yet (or answered: then never begun)
                    }
                }
            }
        } catch (Exception e) {
            System.err.println("reading requests: " + e);
        }
        REQUESTS.add(com.fasterxml.jackson.databind.node.MissingNode.getInstance());
    }

    /** Whether the call ended because its thread was interrupted. */
    private static boolean interrupted(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof InterruptedException) {
                return true;
            }
        }
        return false;
    }

    /**
     * An interrupted call's answer. An acquire names the lease it may have
     * taken (a Redisson lock's owner is this thread, whatever became of
     * the call), and keeps the lock, so that the release a careful caller
     * makes next calls unlock() on it.
     */
    private static ObjectNode cancelled(JsonNode req) {
        ObjectNode ans = answer("cancelled");
        if (req.path("type").asText().equals("acquire")) {
            String token = token();
            String key = req.get("key").asText();
            HELD.putIfAbsent(token + "\n" + key, lock(key));
            GRANTS.merge(token + "\n" + key, 1, Integer::sum);
            ans.put("token", token);
        }
        return ans;
    }

    private static ObjectNode unknown(Exception e) {
        // Redisson wraps what went wrong ("Unexpected exception while
        // processing command"): the innermost cause says what it was.
        Throwable cause = e;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        String error = e.getClass().getSimpleName() + ": " + e.getMessage();
        if (cause != e) {
            error += " (" + cause.getClass().getSimpleName() + ": " + cause.getMessage() + ")";
        }
        return answer("unknown").put("error", error);
    }

    /**
     * The token is how Redis keeps this thread's lease: the field of the
     * lock's hash, Redisson's id and this thread's
     * (RedissonBaseLock.getLockName), so that lockchaos can ask a node
     * whether it still has it. A RedLock's clients each have an id: one
     * field per node, in the nodes' order, comma-separated
     * (docs/protocol.md).
     */
    private static String token() {
        long thread = Thread.currentThread().getId();
        return String.join(",", CLIENTS.stream().map(c -> c.getId() + ":" + thread).toArray(String[]::new));
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

    private static ObjectNode init(JsonNode req) {
        JsonNode opts = req.path("options");
        String mode = opts.path("mode").asText("watchdog");
        if (!mode.equals("watchdog") && !mode.equals("lease")) {
            return answer("error").put("error", "option mode: want watchdog or lease, not " + mode);
        }
        leaseMode = mode.equals("lease");
        String servers = opts.path("servers").asText("single");
        if (!List.of("single", "master-slave", "sentinel").contains(servers)) {
            return answer("error").put("error", "option servers: want single, master-slave or sentinel, not " + servers);
        }
        if (servers.equals("sentinel") && req.path("sentinels").size() == 0) {
            return answer("error").put("error", "option servers=sentinel: the run has no sentinels (give it --replicas 1 --sentinels 3)");
        }
        String lease = opts.path("lease").asText("");
        leaseMs = lease.isEmpty() ? req.get("ttl_ms").asLong() : Long.parseLong(lease);
        int timeout = req.get("op_timeout_ms").asInt();
        JsonNode nodes = req.get("nodes");
        if (kind.equals("redlock")) {
            // RedissonRedLock waits out its nodes in turn, and a command
            // that timed out on one is followed by an unlock there, which
            // may time out too: with nodes unreachable it gives up after
            // n - (n/2+1) + 1 failed nodes, each two command timeouts. The
            // whole acquire must fit in the op timeout.
            timeout = Math.max(timeout / (2 * (nodes.size() - (nodes.size() / 2 + 1) + 1)), 1);
        }
        for (int i = 0; i < (kind.equals("redlock") ? nodes.size() : 1); i++) {
            Config config = config(nodes.get(i).asText(), timeout, servers, req, i);
            // The watchdog renews every lockWatchdogTimeout/3 a lease of lockWatchdogTimeout.
            config.setLockWatchdogTimeout(leaseMs);
            CLIENTS.add(Redisson.create(config));
        }
        // Warm up before the run's clock starts: the first lock calls load
        // classes and the lock's Lua scripts, which on a busy machine takes
        // longer than a short lease. A key of this client's own, with a
        // lease: a watchdog grant would leave renewal timers running into
        // the run (Redisson 3.52's RenewalTask.stop keeps its pending
        // timer, and the next grant starts another beside it).
        RLock warm = lock("lockchaos-warmup:" + req.path("owner").asText());
        for (int i = 0; i < 20; i++) {
            try {
                if (warm.tryLock(0, leaseMs, TimeUnit.MILLISECONDS)) {
                    warm.unlock();
                }
            } catch (Exception e) {
                System.err.println("warm-up: " + e);
            }
        }
        return answer("init_ok");
    }

    /**
     * The client's settings, the adapter's and make bench's (Bench): no
     * hidden retries, one attempt per command, bounded by the op timeout.
     * Connecting (TCP and Redisson's handshake) may take longer: a JVM
     * starting beside seven others on two cores needs seconds, and a
     * connection through lockchaos's proxies is accepted at once even while
     * a fault holds its traffic, so that bounds only the start.
     *
     * <p>servers=master-slave is Redisson's master/slave mode, the node as
     * its master and no replica addresses (reads and subscriptions stay on
     * the master): what a Redisson configured for a replicated Redis does to
     * its locks. Every lock script then goes out in a batch with WAIT for
     * the master's connected_slaves (slavesSyncTimeout, 1 s), and with
     * checkLockSyncedSlaves (on by default) an acquire fails only when no
     * replica acknowledged it (CommandAsyncService.syncedEval).
     *
     * <p>servers=sentinel is Redisson's Sentinel mode, as an application
     * of a Redis with Sentinel configures it: it asks the run's sentinels
     * for the primary of the lock node's master name and follows
     * their failover itself: 3.52.0 asks them again every scanInterval
     * (1 s; SentinelConnectionManager.scheduleChangeCheck) and subscribes
     * to no +switch-master. The sentinels name the servers by their own addresses;
     * the NAT mapper turns each into this client's own link to it, where
     * lockchaos's network faults act. Its lock scripts, too, are followed
     * by WAIT for the replicas, as in master/slave mode.
     */
    static Config config(String addr, int timeout, String mode, JsonNode init, int node) {
        Config config = new Config();
        config.setThreads(2);
        config.setNettyThreads(4);
        BaseConfig<?> servers;
        if (mode.equals("sentinel")) {
            Map<String, String> nat = new HashMap<>();
            init.path("nat").fields().forEachRemaining(e -> nat.put(e.getKey(), e.getValue().asText()));
            HostPortNatMapper mapper = new HostPortNatMapper();
            mapper.setHostsPortMap(nat);
            SentinelServersConfig sentinel = config.useSentinelServers()
                    .setMasterName(init.path("sentinel_masters").get(node).asText())
                    .setNatMapper(mapper)
                    .setReadMode(ReadMode.MASTER)
                    .setSubscriptionMode(SubscriptionMode.MASTER)
                    .setMasterConnectionPoolSize(4)
                    .setMasterConnectionMinimumIdleSize(1)
                    .setSlaveConnectionMinimumIdleSize(1)
                    .setSubscriptionConnectionPoolSize(2)
                    .setSubscriptionConnectionMinimumIdleSize(1);
            init.path("sentinels").forEach(a -> sentinel.addSentinelAddress("redis://" + a.asText()));
            servers = sentinel;
        } else if (mode.equals("master-slave")) {
            servers = config.useMasterSlaveServers()
                    .setMasterAddress("redis://" + addr)
                    .setReadMode(ReadMode.MASTER)
                    .setSubscriptionMode(SubscriptionMode.MASTER)
                    .setMasterConnectionPoolSize(4)
                    .setMasterConnectionMinimumIdleSize(1)
                    .setSubscriptionConnectionPoolSize(2)
                    .setSubscriptionConnectionMinimumIdleSize(1);
        } else {
            servers = config.useSingleServer()
                    .setAddress("redis://" + addr)
                    .setConnectionPoolSize(4)
                    .setConnectionMinimumIdleSize(1)
                    .setSubscriptionConnectionPoolSize(2)
                    .setSubscriptionConnectionMinimumIdleSize(1);
        }
        servers.setTimeout(timeout);
        servers.setConnectTimeout(Math.max(timeout, 10_000));
        servers.setRetryAttempts(0);
        servers.setPingConnectionInterval(0);
        return config;
    }

    /** The lock of this adapter's kind at key. */
    private static RLock lock(String key) {
        RedissonClient redisson = CLIENTS.get(0);
        switch (kind) {
            case "redlock":
                return new RedissonRedLock(CLIENTS.stream().map(c -> c.getLock(key)).toArray(RLock[]::new));
            case "fenced":
                return redisson.getFencedLock(key);
            case "fair":
                return redisson.getFairLock(key);
            case "spin":
                return redisson.getSpinLock(key);
            default:
                return redisson.getLock(key);
        }
    }

    private static ObjectNode acquire(String key, long waitMs) throws InterruptedException {
        RLock lock = lock(key);
        Long fence = null;
        boolean ok;
        if (lock instanceof RFencedLock) {
            // The fencing token comes with the grant, from the same script.
            RFencedLock fenced = (RFencedLock) lock;
            fence = leaseMode
                    ? fenced.tryLockAndGetToken(waitMs, leaseMs, TimeUnit.MILLISECONDS)
                    : fenced.tryLockAndGetToken(waitMs, TimeUnit.MILLISECONDS);
            ok = fence != null;
        } else {
            ok = leaseMode
                    ? lock.tryLock(waitMs, leaseMs, TimeUnit.MILLISECONDS)
                    : lock.tryLock(waitMs, TimeUnit.MILLISECONDS); // no lease: the watchdog renews it
        }
        if (!ok) {
            return answer("refused");
        }
        String token = token();
        HELD.put(token + "\n" + key, lock);
        GRANTS.merge(token + "\n" + key, 1, Integer::sum);
        ObjectNode ans = answer("granted").put("token", token);
        if (fence != null) {
            ans.put("fence", fence);
        }
        return ans;
    }

    private static ObjectNode release(String grant) {
        RLock lock = HELD.get(grant);
        if (lock == null) {
            return answer("not_held");
        }
        try {
            lock.unlock(); // IllegalMonitorStateException: not held by this thread any more
        } catch (RuntimeException e) {
            if (!interrupted(e)) {
                drop(grant);
            } // interrupted: the lease stays this thread's, for the release that follows
            throw e;
        }
        drop(grant);
        return answer("released");
    }

    private static void drop(String grant) {
        if (GRANTS.merge(grant, -1, Integer::sum) <= 0) {
            HELD.remove(grant);
            GRANTS.remove(grant);
        }
    }
}
