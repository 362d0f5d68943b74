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
import java.util.ConcurrentModificationException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.integration.util.UUIDConverter;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * lockchaos adapter (docs/protocol.md) for Spring Integration's
 * JdbcLockRegistry on PostgreSQL: a row of INT_LOCK per lock key (its
 * LOCK_KEY a UUID of the key), taken by an UPDATE of a row that is this
 * client's or whose EXPIRED_AFTER has passed, else an INSERT; EXPIRED_AFTER
 * is now + expireAfter (the lease), and "passed" is judged, by this
 * process's own clock (DefaultLockRepository's LocalDateTime.now). unlock()
 * deletes the row if it is still this client's, and throws when it is not
 * ("Lock was released in the store due to expiration"): not_held. A lock
 * belongs to the thread that took it: every request runs on the main
 * thread, one at a time.
 */
public final class Adapter {
    private static final ObjectMapper JSON = new ObjectMapper();
    // token -> the lock and its grants (re-entries).
    private static final Map<String, Lock> HELD = new HashMap<>();
    private static final Map<String, Integer> GRANTS = new HashMap<>();
    private static JdbcLockRegistry registry;
    private static String clientId;
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
            } catch (ConcurrentModificationException | IllegalMonitorStateException e) {
                // unlock(): the row is another client's, or this thread holds no lock.
                ans = answer("not_held");
            } catch (Exception e) {
                // Spring wraps what went wrong: the innermost cause says what.
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
                return acquire(req.get("key").asText(), req.path("wait_ms").asLong(0));
            case "release":
                return release(req.get("token").asText() + "\n" + req.get("key").asText());
            default:
                return answer("error").put("error", "unknown request type " + req.path("type").asText());
        }
    }

    private static ObjectNode init(JsonNode req) throws Exception {
        JsonNode opts = req.path("options");
        String lease = opts.path("lease").asText("");
        long expireAfter = lease.isEmpty() ? req.get("ttl_ms").asLong() : Long.parseLong(lease);
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
        // The repository as a Spring context would make it: its own
        // transaction manager on the pool, a random client id.
        DefaultLockRepository repository = new DefaultLockRepository(db);
        repository.setTransactionManager(new DataSourceTransactionManager(db));
        repository.afterPropertiesSet();
        repository.afterSingletonsInstantiated();
        java.lang.reflect.Field id = DefaultLockRepository.class.getDeclaredField("id");
        id.setAccessible(true);
        clientId = (String) id.get(repository);
        registry = new JdbcLockRegistry(repository, Duration.ofMillis(expireAfter));
        String idle = opts.path("idle").asText("");
        if (!idle.isEmpty()) {
            registry.setIdleBetweenTries(Duration.ofMillis(Long.parseLong(idle)));
        }
        // Warm up before the run's clock starts: classes, the pool, the
        // statements.
        for (int i = 0; i < 20; i++) {
            deadline = System.nanoTime() + Math.max(timeout, 5_000) * 1_000_000L;
            Lock warm = registry.obtain("lockchaos-warmup:" + req.path("owner").asText());
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

    /**
     * INT_LOCK as Spring Integration's schema-postgresql.sql makes it, by
     * whichever client comes first: two at once may clash in the catalogue
     * (a duplicate pg_type row), and the loser tries again.
     */
    private static void createTable(DataSource db, int timeout) throws Exception {
        String sql = "CREATE TABLE IF NOT EXISTS INT_LOCK (LOCK_KEY CHAR(36) NOT NULL, REGION VARCHAR(100) NOT NULL,"
                + " CLIENT_ID CHAR(36), CREATED_DATE TIMESTAMP NOT NULL, EXPIRED_AFTER TIMESTAMP NOT NULL,"
                + " constraint INT_LOCK_PK primary key (LOCK_KEY, REGION))";
        for (int attempt = 1; ; attempt++) {
            // A JVM starting beside others on a busy machine: each try
            // gets seconds, not the op timeout.
            deadline = System.nanoTime() + Math.max(timeout, 3_000) * 1_000_000L;
            try (Connection c = db.getConnection(); Statement st = c.createStatement()) {
                st.execute(sql);
                return;
            } catch (SQLException e) {
                System.err.println("create table INT_LOCK, try " + attempt + ": " + e);
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

    private static ObjectNode acquire(String key, long waitMs) throws InterruptedException {
        Lock lock = registry.obtain(key);
        if (!lock.tryLock(waitMs, TimeUnit.MILLISECONDS)) {
            return answer("refused");
        }
        // The row's LOCK_KEY (a UUID of the key) and CLIENT_ID: lockchaos
        // asks PostgreSQL whether that row is still this client's and not
        // expired.
        String token = "int_lock:" + UUIDConverter.getUUID(key) + ":" + clientId;
        HELD.put(token + "\n" + key, lock);
        GRANTS.merge(token + "\n" + key, 1, Integer::sum);
        return answer("granted").put("token", token);
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
        lock.unlock(); // ConcurrentModificationException: the row is no longer ours
        return answer("released");
    }
}
