//! OpenCode's own TUI (`opencode attach URL --session ID`, npm `opencode-ai`) against a
//! running askbus server: it starts, shows a question and an approval asked over HTTP, and
//! answers both with Enter.
//!
//! The binary is npm's `opencode-linux-x64` (what `opencode-ai` installs on Linux x64;
//! `opencode-ai` itself is not pinned, as its lock file would need every platform's
//! package).
//!
//! The TUI needs a terminal, so `tests/opencode-tui/drive.py` runs it on a 120x40
//! pseudo-terminal and keeps its screen with pyte (`requirements.txt`, installed by
//! [`python::venv`]); this test sends it one JSON command a line (wait for text, type keys)
//! and reads one answer a line. The binary comes from the pinned `package-lock.json`
//! ([`node::npm_ci`]; Linux x64 only). Every wait is bounded; the driver is killed when
//! the test ends or fails, and the TUI dies with it.
//!
//! Needs Node.js with npm, Python 3, and the npm and PyPI registries the first time.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use askbus::Bus;
use askbus::question::RequestHub;
use askbus_http::HttpConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::TcpListener;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio_util::sync::CancellationToken;

use crate::{node, python};

/// Limit of the TUI's start (it awaits its startup routes, then draws).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Limit of each wait for something to show on the screen.
const SCREEN_TIMEOUT: Duration = Duration::from_secs(30);
/// Limit of each wait for the driver's answer beyond its own timeout.
const ANSWER_MARGIN: Duration = Duration::from_secs(10);
/// Limit of each wait for the server to see the TUI's reply to one Enter.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// How many times Enter is pressed before a request still pending fails the test: a TUI
/// slowed by a loaded machine can draw a prompt a moment before it takes keys.
const ENTER_ATTEMPTS: usize = 3;
/// The session the TUI attaches to.
const SESSION: &str = "ses_x";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_tui_answers_a_question_and_an_approval() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("opencode-tui");
    node::check_node();
    node::npm_ci(&package, "opencode-linux-x64").await;
    let python = python::venv(&package).await;
    drive(&package, &python).await;
}

/// The TUI on its pseudo-terminal, through `drive.py`.
struct Tui {
    /// The driver; killed on drop, and the TUI with it.
    driver: Child,
    commands: ChildStdin,
    answers: Lines<BufReader<ChildStdout>>,
}

impl Tui {
    fn spawn(package: &Path, python: &Path, url: &str, home: &Path) -> Self {
        let binary = package.join("node_modules/opencode-linux-x64/bin/opencode");
        assert!(
            binary.is_file(),
            "{} is missing: this test runs OpenCode's Linux x64 binary",
            binary.display()
        );
        let mut driver = Command::new(python)
            .arg(package.join("drive.py"))
            .arg(binary)
            .args(["attach", url, "--session", SESSION])
            .current_dir(home)
            .env("HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn drive.py");
        let commands = driver.stdin.take().expect("piped stdin");
        let answers = BufReader::new(driver.stdout.take().expect("piped stdout")).lines();
        Self {
            driver,
            commands,
            answers,
        }
    }

    /// Sends `command`, returns the driver's answer.
    async fn send(&mut self, command: Value, limit: Duration) -> Value {
        let line = format!("{command}\n");
        self.commands
            .write_all(line.as_bytes())
            .await
            .expect("write to drive.py");
        let answer = tokio::time::timeout(limit + ANSWER_MARGIN, self.answers.next_line())
            .await
            .unwrap_or_else(|_| panic!("drive.py did not answer {command}"))
            .expect("read drive.py")
            .unwrap_or_else(|| panic!("drive.py ended before answering {command}"));
        serde_json::from_str(&answer).expect("drive.py answers JSON")
    }

    /// Waits until every text of `present` is on the screen and none of `absent`.
    async fn expect(&mut self, present: &[&str], absent: &[&str], limit: Duration) {
        let command = json!({"expect": present, "absent": absent, "timeout": limit.as_secs_f64()});
        let answer = self.send(command, limit).await;
        assert_eq!(
            answer["ok"],
            true,
            "waiting for {present:?} without {absent:?}; alive: {}; screen:\n{}",
            answer["alive"],
            answer["screen"].as_str().unwrap_or_default()
        );
    }

    async fn keys(&mut self, keys: &str) {
        let answer = self.send(json!({ "keys": keys }), Duration::ZERO).await;
        assert_eq!(answer["ok"], true, "{answer}");
    }

    /// What the screen shows now.
    async fn screen(&mut self) -> String {
        let answer = self.send(json!({ "screen": true }), Duration::ZERO).await;
        answer["screen"].as_str().unwrap_or_default().to_owned()
    }

    /// Presses Enter until the request at `url` is no longer pending, returns it replied.
    async fn answer_with_enter(&mut self, http: &reqwest::Client, url: &str) -> Value {
        for _ in 0..ENTER_ATTEMPTS {
            self.keys("\r").await;
            if let Some(body) = settled(http, url).await {
                assert_eq!(body["status"], "replied", "{body}");
                return body;
            }
        }
        panic!(
            "{url} still pending after {ENTER_ATTEMPTS} Enters; screen:\n{}",
            self.screen().await
        );
    }

    /// Ends the driver by closing its stdin (it kills the TUI), or kills it.
    async fn close(mut self) {
        drop(self.commands);
        if tokio::time::timeout(ANSWER_MARGIN, self.driver.wait())
            .await
            .is_err()
        {
            let _ = self.driver.kill().await;
        }
    }
}

/// Serves askbus, attaches the TUI and answers a question and an approval through it.
async fn drive(package: &Path, python: &Path) {
    let home = tempfile::tempdir().expect("a temporary HOME");
    let shutdown = CancellationToken::new();
    let config = HttpConfig {
        directory: home.path().display().to_string(),
        ..HttpConfig::default()
    };
    let app = askbus_http::router(RequestHub::new(Bus::new()), config, shutdown.clone());
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let url = format!(
        "http://{}",
        listener.local_addr().expect("the bound address")
    );
    let server = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.clone().cancelled_owned())
            .into_future(),
    );
    let http = reqwest::Client::new();

    let mut tui = Tui::spawn(package, python, &url, home.path());
    // Started: alive, drawn, and no startup route missing.
    tui.expect(&["ctrl+p commands"], &["no such route"], START_TIMEOUT)
        .await;
    // With no provider it offers to connect one: Esc closes that dialog.
    tui.expect(&["Custom provider"], &[], SCREEN_TIMEOUT).await;
    tui.keys("\u{1b}").await;
    tui.expect(&[], &["Custom provider"], SCREEN_TIMEOUT).await;

    let question = post(
        &http,
        &format!("{url}/question"),
        json!({"sessionID": SESSION, "questions": [
            {"question": "Pick?", "header": "Pick", "options": [{"label": "A"}]}
        ]}),
    )
    .await;
    tui.expect(&["Pick?", "1. A"], &[], SCREEN_TIMEOUT).await;
    let replied = tui
        .answer_with_enter(
            &http,
            &format!("{url}/question/{}", question["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(replied["answers"], json!([["A"]]), "{replied}");

    let approval = post(
        &http,
        &format!("{url}/approval"),
        json!({"session_id": SESSION, "action_requests": [
            {"name": "bash", "args": {"command": "rm -rf /tmp/askbus-opencode-tui"}}
        ]}),
    )
    .await;
    tui.expect(&["Permission required", "Allow once"], &[], SCREEN_TIMEOUT)
        .await;
    let approved = tui
        .answer_with_enter(
            &http,
            &format!("{url}/approval/{}", approval["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(
        approved["decisions"],
        json!([{"type": "approve"}]),
        "{approved}"
    );

    tui.close().await;
    shutdown.cancel();
    server.await.expect("the server task").expect("serve");
}

/// POSTs `body` as JSON, returns the created request.
async fn post(http: &reqwest::Client, url: &str, body: Value) -> Value {
    let response = http.post(url).json(&body).send().await.expect("POST");
    assert!(
        response.status().is_success(),
        "POST {url}: {}",
        response.status()
    );
    response.json().await.expect("a JSON body")
}

/// The request at `url` once it is no longer pending, or `None` after [`REPLY_TIMEOUT`]
/// (polled: the TUI answers on its own).
async fn settled(http: &reqwest::Client, url: &str) -> Option<Value> {
    let poll = async {
        loop {
            let body: Value = http
                .get(url)
                .send()
                .await
                .expect("GET")
                .json()
                .await
                .expect("a JSON body");
            if body["status"] != "pending" {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(REPLY_TIMEOUT, poll).await.ok()
}
