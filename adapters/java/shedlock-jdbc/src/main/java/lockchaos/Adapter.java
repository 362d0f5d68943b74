package lockchaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.logging.Logger;
import javax.sql.DataSource;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbc.JdbcLockProvider;

/**
 * lockchaos adapter (docs/protocol.md) for ShedLock's JdbcLockProvider on
 * PostgreSQL: a row per lock name in the table shedlock, taken by an INSERT,
 * or by an UPDATE of a row whose lock_until has passed — "passed" by this
 * process's own clock (ClockProvider, the wall clock), which also sets
 * lock_until to now + lockAtMostFor. unlock() sets lock_until to now (or
 * lockAtLeastFor's end) for the name, whoever holds it: ShedLock assumes a
 * task ends within lockAtMostFor, and that the clocks agree ("assumes
 * clocks on the nodes are synchronized", its README). Requests run one at a
 * time, in order, on the main thread.
 */
public final class Adapter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, SimpleLock> HELD = new HashMap<>();
    private static LockProvider provider;
    private static Duration atMost;
    private static Duration atLeast;
    private static String owner;
    private static long grants; // this client's, to tell two grants apart
    // The op timeout, and when the request in progress must be answered
    // by (System.nanoTime): every statement of it is bounded by that.
    private static long opTimeoutMs = 1000;
    private static long deadline;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        // Skip the pool's check of an idle connection as it is lent: a
        // statement bounded by the request's time finds a dead one.
        System.setProperty("com.zaxxer.hikari.aliveBypassWindowMs", String.valueOf(Long.MAX_VALUE / 2));
        for (String line; (line = in.readLine()) != null; ) {
            JsonNode req = JSON.readTree(line);
            deadline = System.nanoTime() + req.path("timeout_ms").asLong(opTimeoutMs) * 1_000_000L;
            ObjectNode ans;
            try {
                ans = handle(req);
            } catch (Exception e) {
                // ShedLock wraps what went wrong (LockException): the
                // innermost cause says what it was.
                Throwable cause = e;
                while (cause.getCause() != null && cause.getCause() != cause) {
                    cause = cause.getCause();
                }
                String error = e.getClass().getSimpleName() + ": " + e.getMessage();
                if (cause != e) {
                    error += " (" + cause.getClass().getSimpleName() + ": " + cause.getMessage() + ")";
                }
                ans = answer("unknown").put("error", error);
                if (req.path("type").asText().equals("init")) {
                    e.printStackTrace();
                }
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
        atLeast = Duration.ofMillis(Long.parseLong(opts.path("at-least").asText("0")));
        owner = req.path("owner").asText();
        int timeout = req.get("op_timeout_ms").asInt();
        opTimeoutMs = timeout;
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl("jdbc:postgresql://" + req.get("nodes").get(0).asText() + "/postgres?user=lockchaos&sslmode=disable");
        pool.setMaximumPoolSize(2);
        pool.setMinimumIdle(1);
        pool.setConnectionTimeout(Math.max(timeout, 250));
        pool.setValidationTimeout(250);
        pool.setInitializationFailTimeout(-1); // an unreachable server is no reason to refuse init
        // PostgreSQL's own default, said outright: HikariCP otherwise asks
        // the first connection, and when that one is closed under it (a
        // busy machine, 2026-11-29) it keeps "-1" as the level, and every
        // later connection fails to set up ("Transaction isolation level
        // -1 not supported"): a client that can never connect.
        pool.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
        DataSource db = new Bounded(new HikariDataSource(pool));
        createTable(db, timeout);
        provider = new JdbcLockProvider(db);
        // Warm up before the run's clock starts: classes, the pool, the
        // prepared statements.
        for (int i = 0; i < 20; i++) {
            deadline = System.nanoTime() + Math.max(timeout, 5_000) * 1_000_000L;
            try {
                provider.lock(new LockConfiguration(ClockProvider.now(), "lockchaos-warmup:" + owner, Duration.ofMillis(100), Duration.ZERO))
                        .ifPresent(SimpleLock::unlock);
            } catch (Exception e) {
                System.err.println("warm-up: " + e);
            }
        }
        return answer("init_ok");
    }

    /**
     * The table of ShedLock's README for PostgreSQL, made by whichever
     * client comes first: two at once may clash in the catalogue (a
     * duplicate pg_type row), and the loser tries again.
     */
    private static void createTable(DataSource db, int timeout) throws Exception {
        String sql = "CREATE TABLE IF NOT EXISTS shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL,"
                + " locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))";
        for (int attempt = 1; ; attempt++) {
            // A JVM starting beside others on a busy machine: each try
            // gets seconds, not the op timeout.
            deadline = System.nanoTime() + Math.max(timeout, 3_000) * 1_000_000L;
            try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
                st.execute(sql);
                return;
            } catch (SQLException e) {
                System.err.println("create table shedlock, try " + attempt + ": " + e);
                if (attempt == 10) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    /**
     * The pool's connections, bounded by what is left of the request's
     * time: taking one from the pool (connectionTimeout, at least 250 ms
     * in HikariCP), and each statement's reply (PgConnection's network
     * timeout, in milliseconds; the driver's socketTimeout counts whole
     * seconds). The pool resets the network timeout when a connection
     * comes back.
     */
    private static final class Bounded implements DataSource {
        private final HikariDataSource pool;
        private final ExecutorService timer = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "network-timeout");
            t.setDaemon(true);
            return t;
        });

        Bounded(HikariDataSource pool) {
            this.pool = pool;
        }

        @Override
        public Connection getConnection() throws SQLException {
            long left = (deadline - System.nanoTime()) / 1_000_000L;
            if (left <= 0) {
                throw new SQLException("no time left for the request (timeout_ms)");
            }
            pool.getHikariConfigMXBean().setConnectionTimeout(Math.max(left, 250));
            Connection c = pool.getConnection();
            c.setNetworkTimeout(timer, (int) Math.max(1, (deadline - System.nanoTime()) / 1_000_000L));
            return c;
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            return getConnection();
        }

        @Override
        public PrintWriter getLogWriter() throws SQLException {
            return pool.getLogWriter();
        }

        @Override
        public void setLogWriter(PrintWriter out) throws SQLException {
            pool.setLogWriter(out);
        }

        @Override
        public void setLoginTimeout(int seconds) throws SQLException {
            pool.setLoginTimeout(seconds);
        }

        @Override
        public int getLoginTimeout() throws SQLException {
            return pool.getLoginTimeout();
        }

        @Override
        public Logger getParentLogger() {
            return Logger.getLogger("lockchaos");
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            return pool.unwrap(iface);
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) throws SQLException {
            return pool.isWrapperFor(iface);
        }
    }

    private static ObjectNode acquire(String key) {
        // The lease's token is its lock_until as written (ShedLock's
        // clock is in whole milliseconds): lockchaos asks PostgreSQL
        // whether the name's row still carries it.
        LockConfiguration config = new LockConfiguration(ClockProvider.now(), key, atMost, atLeast);
        // lockAtMostFor is the lease: ShedLock's lock_until, now + it by this
        // process's clock. Try once, as a scheduled task does.
        Optional<SimpleLock> lock = provider.lock(config);
        if (lock.isEmpty()) {
            return answer("refused");
        }
        String token = "shedlock:" + config.getLockAtMostUntil().toEpochMilli() + ":" + owner + ":" + (++grants);
        HELD.put(token, lock.get());
        return answer("granted").put("token", token);
    }

    private static ObjectNode release(String token) {
        SimpleLock lock = HELD.remove(token);
        if (lock == null) {
            return answer("not_held");
        }
        // It sets the name's lock_until to now, whoever holds it, and
        // says nothing of whether it still held it.
        lock.unlock();
        return answer("released");
    }
}
