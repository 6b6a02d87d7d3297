//! `askbus mcp`, the real binary, as MCP clients run it: spawned, one process per client,
//! several in one directory.
//!
//! The client is the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, the scripts
//! and pinned lock file of `tests/mcp/`): its `StdioClientTransport` spawns
//! `askbus mcp --listen 127.0.0.1:0` as a client configured that way would. The script
//! reports the URL the spawned process logged; this test is the human, answering on that
//! process's HTTP API and watching its `/event`.
//!
//! Needs Node.js 20+ with npm, and the npm registry the first time (or after the lock file
//! changes).

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

// Node.js, `npm ci` and the script driver of the workspace's tests, which use all of it.
#[allow(dead_code)]
#[path = "../../../tests/node.rs"]
mod node;
mod support;

use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use node::{STEP_TIMEOUT, Script, Steps};
use serde_json::{Value, json};
use sse_stream::SseStream;
use support::Server;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// The session the spawned server's MCP tool calls ask in (`--mcp-session`).
const SESSION: &str = "ses_spawned";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_askbus_mcp_processes_start_in_one_directory() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let first = Server::start_with(dir.path(), &["mcp", "--listen", "127.0.0.1:0"], &[]).await;
    let second = Server::start_with(dir.path(), &["mcp", "--listen", "127.0.0.1:0"], &[]).await;

    // Each keeps its own requests, in memory.
    let created = first
        .post(&http, "/question", &support::question("call-1"))
        .await;
    assert_eq!(created.status(), 200);
    assert_eq!(
        first
            .get(&http, "/question")
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(second.get(&http, "/question").await, json!([]));
    let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(
        written.is_empty(),
        "nothing is written to the directory: {written:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_spawns_askbus_mcp_calls_question_and_gets_the_http_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut spawned = Spawned::start("answer", dir.path()).await;
    let tools = spawned.node.stage("tools").await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["question", "request_approval", "wait_for_answer"],
        "{tools}"
    );

    let asked = spawned.next_event().await;
    assert_eq!(asked["type"], "question.asked", "{asked}");
    assert_eq!(asked["properties"]["sessionID"], SESSION);
    let id = asked["properties"]["id"].as_str().unwrap().to_owned();
    spawned.node.stage("progress").await;
    let reply = json!({"answers": [["Postgres"], ["Logs", "Traces"]]});
    let replied = spawned
        .http
        .post(format!("{}/question/{id}/reply", spawned.base))
        .json(&reply)
        .send()
        .await
        .unwrap();
    assert_eq!(replied.status(), 200);

    let result = spawned.node.stage("result").await["result"].clone();
    assert_ne!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("User has answered your questions: ")
            && text.contains(r#""Which database should the service use?"="Postgres""#)
            && text.contains(r#""Which signals should be exported?"="Logs, Traces""#),
        "{text}"
    );
    let outcome = spawned.next_event().await;
    assert_eq!(outcome["type"], "question.replied", "{outcome}");
    spawned.exits_with_stdin().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_over_stdio_cancels_the_question_of_the_spawned_askbus() {
    let dir = tempfile::tempdir().unwrap();
    let mut spawned = Spawned::start("cancel", dir.path()).await;
    let asked = spawned.next_event().await;
    assert_eq!(asked["type"], "question.asked", "{asked}");
    spawned.node.stage("progress").await;
    // The script aborts the call at its first progress notification.
    spawned.node.stage("aborted").await;
    // The client is still connected (it waits for its stdin to end): only
    // `notifications/cancelled` over the spawned process's stdin can have done this.
    let cancelled = spawned.next_event().await;
    assert_eq!(cancelled["type"], "question.cancelled", "{cancelled}");
    assert_eq!(
        cancelled["properties"]["requestID"],
        asked["properties"]["id"]
    );
    spawned.node.close_stdin();
    spawned.exits_with_stdin().await;
}

/// A `tests/mcp/legacy.mjs` scenario whose SDK client spawned `askbus mcp`.
struct Spawned {
    node: Script,
    /// The spawned server's `http://127.0.0.1:<port>`.
    base: String,
    /// Its `GET /event` (heartbeats left out), opened before the client made any request.
    events: BoxStream<'static, Value>,
    http: reqwest::Client,
}

impl Spawned {
    /// Runs `node legacy.mjs <scenario> spawn askbus mcp --listen 127.0.0.1:0 …` in `dir`
    /// (the spawned server's working directory), subscribes to the server's events at the
    /// URL the script reports, then lets the script go on.
    async fn start(scenario: &str, dir: &Path) -> Self {
        let package = package();
        let mut command = Command::new("node");
        command
            .arg(package.join("legacy.mjs"))
            .args([scenario, "spawn", env!("CARGO_BIN_EXE_askbus")])
            .args(["mcp", "--listen", "127.0.0.1:0", "--mcp-session", SESSION])
            .args(["--mcp-progress-secs", "0.1"])
            .current_dir(dir)
            .env("ASKBUS_DRIVE_TIMEOUT_MS", "15000");
        let mut node = Script::spawn(
            command,
            &package,
            "@modelcontextprotocol/sdk",
            Steps::OnStdout,
        )
        .await;
        let listening = node.stage("listening").await;
        let line = listening["line"].as_str().unwrap_or_default();
        assert!(line.contains("store: memory"), "{listening}");
        let base = listening["url"].as_str().unwrap().to_owned();

        let http = reqwest::Client::new();
        let response = http.get(format!("{base}/event")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let mut events = SseStream::from_bytes_stream(response.bytes_stream())
            .filter_map(
                |frame| async move { serde_json::from_str(frame.ok()?.data.as_deref()?).ok() },
            )
            .filter(|event: &Value| std::future::ready(event["type"] != "server.heartbeat"))
            .boxed();
        let connected = events.next().await.unwrap();
        assert_eq!(connected["type"], "server.connected", "{connected}");
        let stdin = node.child.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").await.unwrap();
        Self {
            node,
            base,
            events,
            http,
        }
    }

    /// The next event of the spawned server.
    async fn next_event(&mut self) -> Value {
        tokio::time::timeout(STEP_TIMEOUT, self.events.next())
            .await
            .expect("an event in time")
            .expect("the event stream is open")
    }

    /// The client closes the spawned server's stdin (at the end of its scenario); the
    /// server stops because of that (not because the SDK sends SIGTERM two seconds later)
    /// and exits 0.
    async fn exits_with_stdin(mut self) {
        let exited = self.node.stage("exited").await;
        assert_eq!(exited["code"], 0, "{exited}");
        assert_eq!(exited["signal"], Value::Null, "{exited}");
        let log: Vec<&str> = exited["log"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let logged = |phrase: &str| log.iter().any(|line| line.contains(phrase));
        assert!(logged("the MCP client on stdio is gone"), "{log:#?}");
        assert!(!logged("shutting down"), "stopped by a signal: {log:#?}");
        self.node.finish().await;
    }
}

/// `tests/mcp`, the npm package of the MCP client scripts.
fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp")
}
