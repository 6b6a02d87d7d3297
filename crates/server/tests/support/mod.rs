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
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `askbus` process.
pub(crate) struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub(crate) base: String,
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
        // Keep draining the log so the pipe never fills.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, base }
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
        let pid = self.child.id().expect("still running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/<pid>/status")
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
