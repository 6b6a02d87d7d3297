//! The MCP face of askbus (`askbus-mcp`) driven by the official MCP TypeScript SDK.
//!
//! SPEC section 1 promises agents in other languages can ask over MCP. These tests prove it
//! with clients nobody here wrote: `@modelcontextprotocol/sdk` 1.x (protocol 2025-11-25,
//! `tests/mcp/legacy.mjs`) and `@modelcontextprotocol/client` 2.x pinned to protocol
//! 2026-07-28 (`tests/mcp/modern.mjs`), installed from the pinned lock file (`npm ci` when
//! `node_modules` is missing or stale).
//!
//! Streamable HTTP runs against the real server (`askbus_server::serve`, flags parsed by
//! its `Cli`, `/mcp` behind a bearer token) on 127.0.0.1. Stdio runs the SDK's stdio
//! framing over node's own stdin/stdout, connected to `askbus_mcp::serve_io` in this
//! process: the bytes `askbus mcp` exchanges, without the built binary (cargo builds the
//! binaries of other packages only for their own tests, so a test here cannot rely on it).
//!
//! The human is this test: it watches `GET /event` and answers over the HTTP API, as any
//! askbus client does. Each step waits for a line node prints (one JSON object per step)
//! or an event, never for a timer. Progress runs every 100 ms so the first notification
//! comes quickly. The time from the HTTP reply to the MCP client printing the answer is
//! printed (`--nocapture` shows it).
//!
//! Needs Node.js 20+ with npm, and the npm registry the first time (or after the lock file
//! changes).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use askbus::{Bus, QuestionService};
use askbus_http::HttpConfig;
use askbus_mcp::{AskbusMcp, McpConfig};
use clap::Parser;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::{Value, json};
use sse_stream::SseStream;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader, Lines};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use crate::node;

/// Limit of every wait for node or the server; the scripts give up on their own earlier.
const STEP_TIMEOUT: Duration = Duration::from_secs(20);
/// What the scripts are told their own limit is, in milliseconds.
const NODE_SELF_TIMEOUT_MS: &str = "15000";
/// The bearer token the server requires and node sends.
const TOKEN: &str = "mcp-sdk-test-token-0123456789";
/// The session MCP tool calls ask in (`--mcp-session`).
const SESSION: &str = "ses_mcp_test";
/// Seconds between progress notifications (`--mcp-progress-secs`).
const PROGRESS_SECS: &str = "0.1";
/// The answers the test gives over HTTP, one per question of `tests/mcp/questions.mjs`.
const HTTP_ANSWERS: &str = r#"[["Postgres"], ["Logs", "Traces"]]"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_streamable_http_the_sdk_lists_calls_and_gets_the_http_answer() {
    let askbus = Askbus::serve(&[]).await;
    let mut events = askbus.events().await;
    let mut node = Node::legacy("answer", Transport::Http(askbus.mcp_url())).await;
    answer_over_http(&askbus, &mut events, &mut node, "streamable http").await;
    node.finish().await;
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_the_sdk_lists_calls_and_gets_the_http_answer() {
    let askbus = Askbus::serve_http_only().await;
    let mut events = askbus.events().await;
    let mut node = Node::legacy("answer", Transport::Stdio).await;
    let (reader, writer) = node.take_stdio();
    let config = McpConfig {
        session_id: SESSION.into(),
        progress_interval: Duration::from_millis(100),
        ..McpConfig::default()
    };
    let mcp = AskbusMcp::new(askbus.questions(), config);
    let served = tokio::spawn(askbus_mcp::serve_io(
        mcp,
        reader,
        writer,
        askbus.shutdown.child_token(),
    ));
    answer_over_http(&askbus, &mut events, &mut node, "stdio").await;
    node.finish().await;
    let quit = tokio::time::timeout(STEP_TIMEOUT, served)
        .await
        .expect("the stdio server stops when node closes its end")
        .expect("the server task")
        .expect("a clean stop");
    assert!(
        matches!(quit, askbus_mcp::QuitReason::Closed),
        "stopped because the client closed stdin: {quit:?}"
    );
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_call_cancels_the_question() {
    let askbus = Askbus::serve(&[]).await;
    let mut events = askbus.events().await;
    let mut node = Node::legacy("cancel", Transport::Http(askbus.mcp_url())).await;
    let asked = events.next_of("question.asked").await;
    let id = asked["id"].as_str().expect("the request id").to_owned();
    node.stage("progress").await;
    let aborted = node.stage("aborted").await;
    assert!(
        aborted["error"]
            .as_str()
            .is_some_and(|error| error.contains("the test cancels the call")),
        "the SDK rejected the call with our abort reason: {aborted}"
    );
    // The MCP session is still open: only `notifications/cancelled` can have done this.
    let cancelled = events.next_terminal().await;
    assert_eq!(cancelled["type"], "question.cancelled", "{cancelled}");
    assert_eq!(cancelled["properties"]["requestID"], id);
    assert_eq!(cancelled["properties"]["sessionID"], SESSION);
    node.close_stdin();
    node.finish().await;
    let status = askbus.get(&format!("/question/{id}")).await;
    assert_eq!(status["status"], "cancelled", "{status}");
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_elicitation_bridge_turns_form_answers_into_outcomes() {
    let askbus = Askbus::serve(&["--mcp-elicitation"]).await;
    // One client per form action, one after the other (the event stream is shared, so
    // side by side they would read each other's events): accept replies, decline rejects,
    // cancel cancels, and each call reports that outcome to the model.
    let check = |action: &'static str| {
        let askbus = &askbus;
        async move {
            let mut events = askbus.events().await;
            let mut node = Node::legacy("elicit", Transport::Http(askbus.mcp_url()))
                .with_env("ASKBUS_ELICIT_ACTION", action)
                .await;
            let elicited = node.stage("elicited").await;
            check_form(&elicited["params"]);
            let result = node.stage("result").await["result"].clone();
            node.finish().await;
            let asked = events.next_of("question.asked").await;
            let terminal = events.next_terminal().await;
            assert_eq!(terminal["properties"]["requestID"], asked["id"]);
            (terminal, result)
        }
    };
    let accepted = check("accept").await;
    let declined = check("decline").await;
    let cancelled = check("cancel").await;

    let (event, result) = accepted;
    assert_eq!(event["type"], "question.replied", "{event}");
    assert_eq!(
        event["properties"]["answers"],
        json!([["SQLite"], ["Logs", "Traces"]])
    );
    assert_eq!(result["structuredContent"]["status"], "answered");
    assert_eq!(
        result_text(&result),
        "User has answered your questions: \"Which database should the service use?\"=\"SQLite\", \
         \"Which signals should be exported?\"=\"Logs, Traces\". You can now continue with the \
         user's answers in mind."
    );

    let (event, result) = declined;
    assert_eq!(event["type"], "question.rejected", "{event}");
    assert_eq!(result["structuredContent"]["status"], "rejected");
    assert!(result_text(&result).contains("dismissed"), "{result}");

    let (event, result) = cancelled;
    assert_eq!(event["type"], "question.cancelled", "{event}");
    assert_eq!(result["structuredContent"]["status"], "cancelled");
    assert!(
        result_text(&result).contains("do not assume or invent"),
        "{result}"
    );
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_client_answers_an_input_required_form_and_retries() {
    let askbus = Askbus::serve(&["--mcp-elicitation"]).await;
    let mut events = askbus.events().await;
    let mut node = Node::modern("elicit", askbus.mcp_url()).await;
    let connected = node.stage("connected").await;
    let elicited = node.stage("elicited").await;
    check_form(&elicited["params"]);
    let done = node.stage("result").await;
    node.finish().await;
    // The SDK fulfilled one `input_required` round and retried with the answer.
    assert_eq!(done["rounds"], 1, "{done}");
    let result = &done["result"];
    assert_eq!(result["structuredContent"]["status"], "answered", "{done}");
    assert!(
        result_text(result).contains("\"Which database should the service use?\"=\"Postgres\""),
        "{result}"
    );
    let asked = events.next_of("question.asked").await;
    let replied = events.next_terminal().await;
    assert_eq!(replied["type"], "question.replied", "{replied}");
    assert_eq!(replied["properties"]["requestID"], asked["id"]);
    assert_eq!(
        replied["properties"]["answers"],
        json!([["Postgres"], ["Traces"]])
    );
    if let Some(version) = connected["protocolVersion"].as_str() {
        assert_eq!(version, "2026-07-28");
    }
    askbus.shutdown.cancel();
}

/// The shared exchange of the `answer` scenario: node lists the tools and calls
/// `question`; the test waits for the question on `/event` and for the first progress
/// notification, answers over HTTP, and checks the tool result node receives.
async fn answer_over_http(askbus: &Askbus, events: &mut Events, node: &mut Node, name: &str) {
    let tools = node.stage("tools").await;
    let tool = &tools["tools"][0];
    assert_eq!(tools["tools"].as_array().map(Vec::len), Some(1), "{tools}");
    assert_eq!(tool["name"], "question");
    assert_eq!(tool["inputSchema"]["type"], "object");
    assert!(tool["inputSchema"]["properties"]["questions"].is_object());

    let asked = events.next_of("question.asked").await;
    assert_eq!(asked["sessionID"], SESSION);
    assert_eq!(
        asked["questions"][0]["question"],
        "Which database should the service use?"
    );
    let id = asked["id"].as_str().expect("the request id").to_owned();

    let progress = node.stage("progress").await["progress"].clone();
    assert_eq!(progress["progress"], 1, "{progress}");
    assert!(
        progress["message"]
            .as_str()
            .is_some_and(|message| message.contains(&id)),
        "the progress message names the question: {progress}"
    );

    let replied_at = Instant::now();
    askbus.reply(&id, HTTP_ANSWERS).await;
    let done = node.stage("result").await;
    let latency = replied_at.elapsed();
    eprintln!("mcp ({name}): HTTP reply -> MCP client has the result in {latency:.1?}");

    let result = &done["result"];
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(
        result_text(result),
        "User has answered your questions: \"Which database should the service use?\"=\"Postgres\", \
         \"Which signals should be exported?\"=\"Logs, Traces\". You can now continue with the \
         user's answers in mind."
    );
    assert_eq!(
        result["structuredContent"],
        json!({"status": "answered", "answers": [
            {"question": "Which database should the service use?", "answer": ["Postgres"]},
            {"question": "Which signals should be exported?", "answer": ["Logs", "Traces"]},
        ]})
    );
    let replied = events.next_terminal().await;
    assert_eq!(replied["type"], "question.replied", "{replied}");
    assert_eq!(replied["properties"]["requestID"], id);
}

/// The form askbus elicits for `tests/mcp/questions.mjs`: a single select, a multi-select
/// and a free-text "other" string per question.
fn check_form(params: &Value) {
    let schema = &params["requestedSchema"];
    let properties = &schema["properties"];
    assert_eq!(schema["type"], "object", "{params}");
    assert_eq!(properties["q1"]["type"], "string", "{params}");
    assert_eq!(
        properties["q1"]["oneOf"],
        json!([
            {"const": "Postgres", "title": "Postgres — the production default"},
            {"const": "SQLite", "title": "SQLite — one file, no server"},
        ])
    );
    assert_eq!(properties["q1_other"]["type"], "string");
    assert_eq!(properties["q2"]["type"], "array");
    assert_eq!(
        properties["q2"]["items"]["anyOf"],
        json!([{"const": "Logs", "title": "Logs"}, {"const": "Traces", "title": "Traces"}])
    );
    assert_eq!(properties["q2_other"]["type"], "string");
    assert!(
        params["message"]
            .as_str()
            .is_some_and(|message| message.contains("Which database should the service use?")),
        "{params}"
    );
}

/// The text block of a tool result.
fn result_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// An askbus server on an ephemeral loopback port.
struct Askbus {
    base: String,
    /// The question service, when the test built the server itself (stdio).
    questions: Option<QuestionService>,
    shutdown: CancellationToken,
    http: reqwest::Client,
}

impl Askbus {
    /// The real server (`askbus_server::serve`) with a token, the test's MCP settings and
    /// `flags`.
    async fn serve(flags: &[&str]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let args = [
            "askbus",
            "--store",
            "memory",
            "--token",
            TOKEN,
            "--mcp-session",
            SESSION,
            "--mcp-progress-secs",
            PROGRESS_SECS,
        ];
        let cli =
            askbus_server::Cli::try_parse_from(args.iter().chain(flags)).expect("the flags parse");
        let settings = cli.settings().expect("valid settings");
        let shutdown = CancellationToken::new();
        tokio::spawn(askbus_server::serve(listener, settings, shutdown.clone()));
        Self {
            base,
            questions: None,
            shutdown,
            http: reqwest::Client::new(),
        }
    }

    /// The HTTP API alone, over a question service the test also serves MCP from.
    async fn serve_http_only() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let questions = QuestionService::new(Bus::new());
        let shutdown = CancellationToken::new();
        let config = HttpConfig {
            tokens: vec![askbus_http::AccessToken::all_sessions(TOKEN)],
            ..HttpConfig::default()
        };
        let app = askbus_http::router(questions.clone(), config, shutdown.clone());
        tokio::spawn(
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.clone().cancelled_owned())
                .into_future(),
        );
        Self {
            base,
            questions: Some(questions),
            shutdown,
            http: reqwest::Client::new(),
        }
    }

    fn questions(&self) -> QuestionService {
        self.questions.clone().expect("a server built by the test")
    }

    fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// `GET /event`, open once its first frame (`server.connected`) arrived.
    async fn events(&self) -> Events {
        let response = self
            .http
            .get(format!("{}/event", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("open /event");
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        let mut events = Events {
            stream: SseStream::from_bytes_stream(response.bytes_stream()).boxed(),
        };
        let connected = events.next().await;
        assert_eq!(connected["type"], "server.connected", "{connected}");
        events
    }

    async fn reply(&self, id: &str, answers: &str) {
        let body = format!(r#"{{"answers": {answers}}}"#);
        let response = self
            .http
            .post(format!("{}/question/{id}/reply", self.base))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("POST reply");
        assert_eq!(response.status(), reqwest::StatusCode::OK, "reply to {id}");
    }

    async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("GET")
            .json()
            .await
            .expect("JSON")
    }
}

/// The `GET /event` stream of a test.
struct Events {
    stream: BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
}

impl Events {
    /// The next event envelope (`{id, type, properties}`), heartbeats skipped.
    async fn next(&mut self) -> Value {
        loop {
            let frame = tokio::time::timeout(STEP_TIMEOUT, self.stream.next())
                .await
                .expect("an event in time")
                .expect("the event stream is open")
                .expect("well-formed SSE");
            let Some(data) = frame.data else { continue };
            let envelope: Value = serde_json::from_str(&data).expect("JSON event");
            if envelope["type"] != "server.heartbeat" {
                return envelope;
            }
        }
    }

    /// The properties of the next event, which must be of type `kind`.
    async fn next_of(&mut self, kind: &str) -> Value {
        let event = self.next().await;
        assert_eq!(event["type"], kind, "{event}");
        event["properties"].clone()
    }

    /// The next event, which must end a question.
    async fn next_terminal(&mut self) -> Value {
        let event = self.next().await;
        let kind = event["type"].as_str().unwrap_or_default();
        assert!(
            [
                "question.replied",
                "question.rejected",
                "question.timed_out",
                "question.cancelled"
            ]
            .contains(&kind),
            "{event}"
        );
        event
    }
}

/// How a node script reaches askbus's MCP server.
enum Transport {
    /// Streamable HTTP at this URL; steps on stdout.
    Http(String),
    /// Its own stdin/stdout, which the test serves; steps on stderr.
    Stdio,
}

/// A running node script and the JSON lines it prints, one per step.
struct Node {
    child: Child,
    /// The stream carrying the steps.
    steps: Lines<BufReader<Box<dyn AsyncRead + Send + Unpin>>>,
    /// What node printed besides the steps, for failure messages.
    noise: Vec<String>,
    /// The other output stream, read to the end in the background (HTTP only).
    other: Option<tokio::task::JoinHandle<String>>,
}

/// A node script before it is spawned.
struct NodeBuilder {
    command: Command,
    stdio: bool,
}

impl Node {
    /// `tests/mcp/legacy.mjs <scenario>` (the 1.x SDK).
    fn legacy(scenario: &str, transport: Transport) -> NodeBuilder {
        let mut command = node_command("legacy.mjs");
        command.arg(scenario);
        let stdio = match transport {
            Transport::Http(url) => {
                command.args(["http", &url]);
                false
            }
            Transport::Stdio => {
                command.arg("stdio");
                true
            }
        };
        NodeBuilder { command, stdio }
    }

    /// `tests/mcp/modern.mjs <scenario> <url>` (the 2.x client, protocol 2026-07-28).
    fn modern(scenario: &str, url: String) -> NodeBuilder {
        let mut command = node_command("modern.mjs");
        command.args([scenario, &url]);
        NodeBuilder {
            command,
            stdio: false,
        }
    }

    /// Node's stdout and stdin, for the test to serve MCP on (stdio only).
    fn take_stdio(&mut self) -> (tokio::process::ChildStdout, tokio::process::ChildStdin) {
        let stdout = self.child.stdout.take().expect("piped stdout");
        let stdin = self.child.stdin.take().expect("piped stdin");
        (stdout, stdin)
    }

    /// Ends node's stdin (the `cancel` scenario then closes its session).
    fn close_stdin(&mut self) {
        drop(self.child.stdin.take());
    }

    /// The next step, which must be `stage`.
    async fn stage(&mut self, stage: &str) -> Value {
        loop {
            let line = match tokio::time::timeout(STEP_TIMEOUT, self.steps.next_line()).await {
                Ok(Ok(Some(line))) => line,
                Ok(Ok(None)) => self.fail(&format!("node ended before `{stage}`")).await,
                Ok(Err(error)) => self.fail(&format!("read node's output: {error}")).await,
                Err(_) => {
                    self.fail(&format!("no `{stage}` within {STEP_TIMEOUT:?}"))
                        .await
                }
            };
            match serde_json::from_str::<Value>(&line) {
                Ok(step) if step.get("stage").is_some() => {
                    if step["stage"] != stage {
                        self.fail(&format!("expected `{stage}`, got {step}")).await;
                    }
                    return step;
                }
                _ => self.noise.push(line),
            }
        }
    }

    /// Waits for node to exit successfully.
    async fn finish(mut self) {
        match tokio::time::timeout(STEP_TIMEOUT, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(status) => self.fail(&format!("node exited with {status:?}")).await,
            Err(_) => self.fail("node did not exit").await,
        }
    }

    /// Kills node and fails the test with everything it printed.
    async fn fail(&mut self, problem: &str) -> ! {
        let _ = self.child.kill().await;
        let mut output = std::mem::take(&mut self.noise).join("\n");
        while let Ok(Ok(Some(line))) =
            tokio::time::timeout(Duration::from_secs(1), self.steps.next_line()).await
        {
            output.push('\n');
            output.push_str(&line);
        }
        if let Some(other) = self.other.take() {
            output.push('\n');
            output.push_str(&other.await.unwrap_or_default());
        }
        panic!("{problem}; node printed:\n{output}");
    }
}

impl NodeBuilder {
    fn with_env(mut self, key: &str, value: &str) -> Self {
        self.command.env(key, value);
        self
    }
}

impl std::future::IntoFuture for NodeBuilder {
    type Output = Node;
    type IntoFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Node> + Send>>;

    /// Installs the pinned packages if needed and spawns node.
    fn into_future(mut self) -> Self::IntoFuture {
        Box::pin(async move {
            node::check_node();
            node::npm_ci(&package(), "@modelcontextprotocol/sdk").await;
            let mut child = self
                .command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("spawn node");
            let stderr = child.stderr.take().expect("piped stderr");
            let (steps, other): (Box<dyn AsyncRead + Send + Unpin>, _) = if self.stdio {
                (Box::new(stderr), None)
            } else {
                let stdout = child.stdout.take().expect("piped stdout");
                (Box::new(stdout), Some(tokio::spawn(read_all(stderr))))
            };
            Node {
                child,
                steps: BufReader::new(steps).lines(),
                noise: Vec::new(),
                other,
            }
        })
    }
}

/// `tests/mcp`, the npm package holding the scripts.
fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp")
}

fn node_command(script: &str) -> Command {
    let mut command = Command::new("node");
    command
        .arg(script)
        .current_dir(package())
        .env("ASKBUS_TOKEN", TOKEN)
        .env("ASKBUS_DRIVE_TIMEOUT_MS", NODE_SELF_TIMEOUT_MS);
    command
}

/// Everything `reader` yields, lossily decoded.
async fn read_all(mut reader: impl AsyncRead + Unpin) -> String {
    let mut bytes = Vec::new();
    let _ = reader.read_to_end(&mut bytes).await;
    String::from_utf8_lossy(&bytes).into_owned()
}
