//! What the server's process tests share: a real `askbus` process, and JSON over HTTP.
//!
//! These tests live in the server crate, not in the workspace's `tests/`, because they
//! need the binary itself (`CARGO_BIN_EXE_askbus`), which cargo builds only for this
//! package's integration tests.
//!
//! Each test binary compiles this module and uses a part of it.

#![allow(dead_code, reason = "each test binary uses a part of this module")]

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `askbus` process.
pub(crate) struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub(crate) base: String,
    /// Every line it logged after the one with its URL.
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts `askbus` on an ephemeral loopback port with `--store store`, and waits for the
    /// line that logs its URL (logged once the store is open).
    pub(crate) async fn start(store: &str) -> Self {
        Self::start_with(
            Path::new("."),
            &["--listen", "127.0.0.1:0", "--store", store],
            &[],
        )
        .await
    }

    /// Starts `askbus {args}` in the directory `dir` with the environment `env` added, and
    /// waits for the line that logs its URL (`args` and `env` must make it listen on
    /// loopback). Its stdin is a pipe that stays open until it is dropped (`askbus mcp`
    /// stops when stdin closes).
    pub(crate) async fn start_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_askbus"));
        command.args(args).envs(env.iter().copied());
        Self::spawn(command, dir).await
    }

    /// As [`start_with`](Self::start_with), in a process whose open-files limits are
    /// `soft` and `hard` (set by the shell that execs it), as on a machine configured so.
    pub(crate) async fn start_with_open_files(
        dir: &Path,
        args: &[&str],
        soft: u64,
        hard: u64,
    ) -> Self {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "ulimit -S -n {soft} && ulimit -H -n {hard} && exec \"$0\" \"$@\""
            ))
            .arg(env!("CARGO_BIN_EXE_askbus"))
            .args(args);
        Self::spawn(command, dir).await
    }

    /// Spawns `command` (an `askbus` process) in `dir` and waits for the line that logs its
    /// URL.
    async fn spawn(mut command: Command, dir: &Path) -> Self {
        let mut child = command
            .current_dir(dir)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the askbus binary starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let base = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(at) = line.find("listening on http://") {
                    let url = &line[at + "listening on ".len()..];
                    return url.split_whitespace().next().unwrap().to_owned();
                }
            }
            panic!("askbus exited before it listened");
        })
        .await
        .expect("askbus logs its URL within 30 s");
        // Keep draining the log so the pipe never fills, and keep it for `logged`.
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                kept.lock().unwrap().push(line);
            }
        });
        Self { child, base, log }
    }

    /// The lines it has logged since it logged its URL.
    pub(crate) fn logged(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id().expect("still running")
    }

    /// `host:port` of the server.
    pub(crate) fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// `GET path`, as JSON.
    pub(crate) async fn get(&self, http: &reqwest::Client, path: &str) -> Value {
        let response = http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        response.json().await.unwrap()
    }

    /// `POST path` with a JSON body.
    pub(crate) async fn post(
        &self,
        http: &reqwest::Client,
        path: &str,
        body: &Value,
    ) -> reqwest::Response {
        http.post(format!("{}{path}", self.base))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// `POST path` with a JSON body; the response's status.
    pub(crate) async fn post_status(
        &self,
        http: &reqwest::Client,
        path: &str,
        body: &Value,
    ) -> u16 {
        self.post(http, path, body).await.status().as_u16()
    }

    /// `POST /question` with `body`, which must succeed; the id of the request created (or
    /// joined).
    pub(crate) async fn ask(&self, http: &reqwest::Client, body: &Value) -> String {
        let created = self.post(http, "/question", body).await;
        assert_eq!(created.status(), 200);
        let created: Value = created.json().await.unwrap();
        created["id"].as_str().unwrap().to_owned()
    }

    /// `POST /session/{session}/step` with `step`, which must be recorded.
    pub(crate) async fn step(&self, http: &reqwest::Client, session: &str, step: &Value) {
        let path = format!("/session/{session}/step");
        assert_eq!(self.post_status(http, &path, step).await, 200, "{step}");
    }

    /// Posts `count` steps of `session`, `parallel` at a time, each `{"type": "thinking"}`
    /// with `text` and its number; each must be recorded.
    pub(crate) async fn post_steps(
        &self,
        http: &reqwest::Client,
        session: &str,
        count: usize,
        parallel: usize,
        text: &str,
    ) {
        let path = format!("/session/{session}/step");
        let mut started = 0;
        while started < count {
            let batch = (started..count.min(started + parallel)).map(|n| {
                let step = json!({"type": "thinking", "thinking": format!("{text} {n}")});
                let path = &path;
                async move { self.post_status(http, path, &step).await }
            });
            for status in futures_util::future::join_all(batch).await {
                assert_eq!(status, 200);
            }
            started = count.min(started + parallel);
        }
    }

    /// Floods `session` with big steps: 1,130 of 64 KB, as a runaway agent (or a client
    /// with a token for that session alone) can post them.
    pub(crate) async fn flood(&self, http: &reqwest::Client, session: &str) {
        let big = "x".repeat(64_000);
        self.post_steps(http, session, 1_130, 8, &big).await;
    }

    /// Sends `GET path` on a socket of its own; answers the socket, its answer unread.
    pub(crate) fn request_on_socket(&self, path: &str) -> std::net::TcpStream {
        use std::io::Write;
        let address = self.address();
        let mut socket = std::net::TcpStream::connect(address).unwrap();
        write!(socket, "GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n").unwrap();
        socket
    }

    /// Sends `signal` (`TERM`, `INT`, ...) with kill(1) and waits for the exit.
    pub(crate) async fn stop_with(mut self, signal: &str) -> std::process::ExitStatus {
        let pid = self.child.id().expect("still running").to_string();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .await
            .expect("kill(1) runs");
        assert!(sent.success(), "kill -{signal} {pid}");
        self.child.wait().await.unwrap()
    }

    /// The process's resident memory now, in KiB (`VmRSS` of `/proc/<pid>/status`).
    pub(crate) fn resident_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// The process's peak resident memory, in KiB (`VmHWM` of `/proc/<pid>/status`), since
    /// it started or since [`reset_peak_resident`](Self::reset_peak_resident).
    pub(crate) fn peak_resident_kib(&self) -> u64 {
        self.status_kib("VmHWM:")
    }

    /// Makes the peak resident memory the resident memory now (`5` to
    /// `/proc/<pid>/clear_refs`).
    pub(crate) fn reset_peak_resident(&self) {
        let pid = self.child.id().expect("still running");
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    }

    /// A line of `/proc/<pid>/status` in KiB.
    fn status_kib(&self, field: &str) -> u64 {
        let pid = self.child.id().expect("still running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{field} in /proc/<pid>/status"))
    }

    /// How many write calls the process made so far (`syscw` of `/proc/<pid>/io`).
    pub(crate) fn write_calls(&self) -> u64 {
        let pid = self.child.id().expect("still running");
        let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
        io.lines()
            .find_map(|line| line.strip_prefix("syscw:"))
            .and_then(|value| value.trim().parse().ok())
            .expect("syscw in /proc/<pid>/io")
    }

    /// SIGKILL: no shutdown, no flush, nothing but what is already stored.
    pub(crate) async fn kill_9(mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }
}

/// The Redis the tests that need one use.
const REDIS: &str = "redis://127.0.0.1:6379";

/// A key prefix of this test's own on the local Redis, deleted when the test ends.
pub(crate) struct TestPrefix {
    prefix: String,
}

impl TestPrefix {
    /// Fails the test, saying how to get Redis, when none is listening on 127.0.0.1:6379.
    pub(crate) fn new() -> Self {
        let client = redis::Client::open(REDIS).unwrap();
        if let Err(error) = client.get_connection() {
            panic!(
                "this test needs a Redis server on 127.0.0.1:6379 ({error}). Install and start \
                 it: `apt-get install -y redis-server && redis-server --daemonize yes`; \
                 `cargo xtask ci` does this itself"
            );
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        Self {
            prefix: format!("askbus-test:{}-{nanos}", std::process::id()),
        }
    }

    /// The `--store` of a server on this prefix.
    pub(crate) fn store(&self) -> String {
        format!("{REDIS}/0?prefix={}", self.prefix)
    }
}

impl Drop for TestPrefix {
    fn drop(&mut self) {
        let Ok(mut connection) = redis::Client::open(REDIS).and_then(|c| c.get_connection()) else {
            return;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", self.prefix))
            .query(&mut connection)
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(keys).query(&mut connection);
        }
    }
}

/// A question in session `agent` from the agent's tool call `call`, waiting until answered:
/// "Which region?", `eu` or `us` (or any text).
pub(crate) fn question(call: &str) -> Value {
    json!({
        "sessionID": "agent",
        "questions": [{
            "question": "Which region?",
            "header": "Region",
            "options": [{"label": "eu", "description": "Europe"}, {"label": "us", "description": "America"}],
        }],
        "tool": {"messageID": "msg-1", "callID": call},
        "timeout": null,
    })
}
