//! A lockchaos adapter (docs/protocol.md) around the `redis` crate: a plain
//! token lease, SET key token NX PX ttl, released and renewed by a Lua
//! compare-and-delete / compare-and-pexpire. Put your lock library's calls
//! in acquire, release and renew; one request at a time is allowed.
use redis::{Client, Connection, RedisResult};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::time::Duration;

const RELEASE: &str = r#"if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) end return 0"#;
const RENEW: &str = r#"if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) end return 0"#;

#[derive(Default)]
struct Adapter {
    client: Option<Client>,
    con: Option<Connection>,
    owner: String,
    ttl_ms: u64,
    timeout: Duration,
    n: u64,
}

impl Adapter {
    fn init(&mut self, req: &Value) -> RedisResult<Value> {
        self.owner = req["owner"].as_str().unwrap_or("").to_string();
        self.ttl_ms = req["ttl_ms"].as_u64().unwrap_or(1000);
        // Every command answers within the op timeout: a cut link gives
        // unknown, never a hang. Your library's whole worst-case acquire,
        // its own retries included, must fit it too.
        self.timeout = Duration::from_millis(req["op_timeout_ms"].as_u64().unwrap_or(500));
        self.client = Some(Client::open(format!("redis://{}/", req["nodes"][0].as_str().unwrap_or("")))?);
        // Warm the client up here, not in the first acquire (Lettuce's first
        // call took over 1 s); an unreachable store is no error: go on.
        let _ = self.con().map(|c| redis::cmd("PING").query::<String>(c));
        Ok(json!({"type": "init_ok"}))
    }

    /// The connection, made again after an error.
    fn con(&mut self) -> RedisResult<&mut Connection> {
        if self.con.is_none() {
            let c = self.client.as_ref().expect("init first").get_connection_with_timeout(self.timeout)?;
            c.set_read_timeout(Some(self.timeout))?;
            c.set_write_timeout(Some(self.timeout))?;
            self.con = Some(c);
        }
        Ok(self.con.as_mut().unwrap())
    }

    // Your library's try-once acquire goes here (no try-once: its acquire
    // with the shortest wait). granted's token is what the library stores
    // at the key; random bytes go as token_b64 (base64) instead.
    fn acquire(&mut self, key: &str) -> RedisResult<Value> {
        self.n += 1;
        let (token, ttl) = (format!("{}:{}", self.owner, self.n), self.ttl_ms);
        let set: Option<String> = redis::cmd("SET").arg(key).arg(&token).arg("NX").arg("PX").arg(ttl).query(self.con()?)?;
        Ok(match set {
            Some(_) => json!({"type": "granted", "token": token}),
            None => json!({"type": "refused"}),
        })
    }

    // Your library's release: not_held when the lease was no longer this
    // client's (a library whose unlock reports nothing: answer released).
    fn release(&mut self, key: &str, token: &str) -> RedisResult<Value> {
        let n: i64 = redis::cmd("EVAL").arg(RELEASE).arg(1).arg(key).arg(token).query(self.con()?)?;
        Ok(json!({"type": if n == 1 { "released" } else { "not_held" }}))
    }

    // Your library's extend, by the TTL (lock.yaml: renew: true).
    fn renew(&mut self, key: &str, token: &str) -> RedisResult<Value> {
        let ttl = self.ttl_ms;
        let n: i64 = redis::cmd("EVAL").arg(RENEW).arg(1).arg(key).arg(token).arg(ttl).query(self.con()?)?;
        Ok(json!({"type": if n == 1 { "renewed" } else { "not_held" }}))
    }

    fn handle(&mut self, req: &Value) -> Value {
        let (key, token) = (req["key"].as_str().unwrap_or(""), req["token"].as_str().unwrap_or(""));
        let res = match req["type"].as_str().unwrap_or("") {
            "init" => self.init(req),
            "acquire" => self.acquire(key),
            "release" => self.release(key, token),
            "renew" => self.renew(key, token),
            t => return json!({"type": "error", "error": format!("unknown request type {t:?}")}),
        };
        res.unwrap_or_else(|e| {
            self.con = None;
            json!({"type": "unknown", "error": e.to_string()})
        })
    }
}

fn main() {
    let mut adapter = Adapter::default();
    let mut out = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let Ok(req) = serde_json::from_str::<Value>(&line.expect("stdin")) else { continue };
        let mut ans = adapter.handle(&req);
        ans["in_reply_to"] = req["id"].clone();
        writeln!(out, "{ans}").and_then(|_| out.flush()).expect("stdout");
    }
}
