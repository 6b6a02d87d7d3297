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
//! The real `askbus mcp`, spawned by the SDK's `StdioClientTransport`, is driven by the
//! same scripts from `crates/askbus/tests/mcp_stdio.rs`.
//!
//! Both tools are driven: `question` (answered with `POST /question/{id}/reply`) and
//! `request_approval` (decided with `POST /approval/{id}/reply`: approve, edit, reject).
//! With the elicitation bridge on, a client declaring URL-mode elicitation
//! (`tests/mcp/links.mjs`) is offered the request's answer link, which the test opens and
//! answers through, as the human would in a browser.
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
use std::time::{Duration, Instant};

use askbus::Bus;
use askbus::question::RequestHub;
use askbus_http::HttpConfig;
use askbus_mcp::{AskbusMcp, McpConfig};
use clap::Parser;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::{Value, json};
use sse_stream::SseStream;
use tokio::net::TcpListener;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::node::{STEP_TIMEOUT, Script as Node, Steps};

/// What the scripts are told their own limit is, in milliseconds.
const NODE_SELF_TIMEOUT_MS: &str = "15000";
/// The bearer token the server requires and node sends.
const TOKEN: &str = "mcp-sdk-test-token-0123456789";
/// The session MCP tool calls ask in (`--mcp-session`).
const SESSION: &str = "ses_mcp_test";
/// A second token, confined to [`SCOPED_SESSION`].
const SCOPED_TOKEN: &str = "mcp-sdk-scoped-token-9876543210";
/// The session [`SCOPED_TOKEN`] may use; its MCP requests are made there.
const SCOPED_SESSION: &str = "ses_mcp_scoped";
/// An agent's token, named `bot` (`--agent-token`).
const AGENT_TOKEN: &str = "mcp-sdk-agent-token-0123456789";
/// A reviewer's token, named `alice` (`--reviewer-token`).
const REVIEWER_TOKEN: &str = "mcp-sdk-reviewer-token-0123456789";
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

/// Tasks are the 2026-07-28 protocol's: a 2025-11-25 client declaring the extension anyway
/// (the MCP Inspector does, then never polls) gets the answer, not a task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_declaring_tasks_on_an_older_protocol_gets_the_answer_not_a_task() {
    let askbus = Askbus::serve(&[]).await;
    let mut events = askbus.events().await;
    let mut node = Node::legacy("answer", Transport::Http(askbus.mcp_url()))
        .with_env("ASKBUS_DECLARE_TASKS", "1")
        .await;
    answer_over_http(&askbus, &mut events, &mut node, "tasks declared").await;
    node.finish().await;
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_the_sdk_lists_calls_and_gets_the_http_answer() {
    let askbus = Askbus::serve_http_only().await;
    let mut events = askbus.events().await;
    let mut node = Node::legacy("answer", Transport::Stdio).await;
    let served = askbus.serve_stdio(&mut node);
    answer_over_http(&askbus, &mut events, &mut node, "stdio").await;
    node.finish().await;
    stopped_with_stdin(served).await;
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_streamable_http_approvals_are_decided_over_http_in_the_tokens_session() {
    let askbus = Askbus::serve(&["--token", &format!("{SCOPED_TOKEN}@{SCOPED_SESSION}")]).await;
    let mut events = askbus.events().await;
    // A session-scoped token: its approvals are made in its session, not `--mcp-session`.
    let mut node = Node::legacy("approve", Transport::Http(askbus.mcp_url()))
        .with_env("ASKBUS_TOKEN", SCOPED_TOKEN)
        .with_env("ASKBUS_APPROVAL_CALLS", &DECISIONS.len().to_string())
        .await;
    decide_over_http(&askbus, &mut events, &mut node, SCOPED_SESSION).await;
    node.finish().await;
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_approvals_are_decided_over_http() {
    let askbus = Askbus::serve_http_only().await;
    let mut events = askbus.events().await;
    let mut node = Node::legacy("approve", Transport::Stdio)
        .with_env("ASKBUS_APPROVAL_CALLS", &DECISIONS.len().to_string())
        .await;
    let served = askbus.serve_stdio(&mut node);
    decide_over_http(&askbus, &mut events, &mut node, SESSION).await;
    node.finish().await;
    stopped_with_stdin(served).await;
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_approval_arguments_are_tool_errors_the_model_can_read() {
    let askbus = Askbus::serve(&[]).await;
    let mut node = Node::legacy("invalid", Transport::Http(askbus.mcp_url())).await;
    // One per `INVALID_ARGUMENTS` of tests/mcp/approvals.mjs, in order.
    let expected = [
        "an approval request needs at least one action",
        "invalid type: sequence, expected a map",
        "unknown variant `maybe`",
    ];
    for phrase in expected {
        let step = node.stage("result").await;
        let result = &step["result"];
        assert_eq!(result["isError"], true, "{step}");
        let text = result_text(result);
        assert!(
            text.starts_with("invalid arguments for the `request_approval` tool: ")
                && text.contains(phrase),
            "{text:?} lacks {phrase:?}"
        );
    }
    node.finish().await;
    assert_eq!(
        askbus.get("/approval").await,
        json!([]),
        "no approval was requested"
    );
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_call_cancels_the_question() {
    cancel_call(&QUESTION).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_call_cancels_the_approval() {
    cancel_call(&APPROVAL).await;
}

/// How long the slow human of [`hosts_on_their_sdks_defaults_get_an_answer_slower_than_their_timeout`]
/// takes: longer than the TypeScript SDK's 60 s request timeout.
const SLOW_HUMAN: Duration = Duration::from_secs(70);

/// A TypeScript SDK host and a Python SDK host, each on its SDK's defaults, ask at once; the
/// human answers after [`SLOW_HUMAN`]. Each `question` call returns `waiting` at the
/// server's default bound (45 s), the question stays pending past the TS SDK's 60 s, and
/// `wait_for_answer` brings each host its answer. Both SDKs check every result against the
/// tool's output schema, and the Python one validates every listed output schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_on_their_sdks_defaults_get_an_answer_slower_than_their_timeout() {
    let askbus = Askbus::serve(&[]).await;
    let mut events = askbus.events().await;
    let python = crate::python::venv(&package_dir("mcp-python")).await;
    let mut typescript = Node::defaults(askbus.mcp_url()).await;
    let mut command = Command::new(python);
    command
        .arg("defaults.py")
        .arg(askbus.mcp_url())
        .current_dir(package_dir("mcp-python"))
        .env("ASKBUS_TOKEN", TOKEN);
    let mut python = Node::start(command, Steps::OnStdout);

    check_tools(&typescript.stage("tools").await);
    let python_tools = python.stage("tools").await;
    check_tools(&python_tools);
    // The Python SDK negotiates the newest protocol: its calls are served statelessly, and
    // the TypeScript SDK's (2025-11-25) in a session; both wait the same way.
    assert_eq!(python_tools["protocol"], "2026-07-28", "{python_tools}");
    let mut asked = std::collections::HashMap::new();
    for _ in 0..2 {
        let question = events.next_of("question.asked").await;
        let text = question["questions"][0]["question"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        asked.insert(text, question["id"].as_str().expect("the id").to_owned());
    }
    let started = Instant::now();
    let ids = [
        asked["Which database should the service use?"].clone(),
        asked["Which region should the service run in?"].clone(),
    ];
    for (host, id) in [&mut typescript, &mut python].into_iter().zip(&ids) {
        let result = host.stage_within("asked", Duration::from_secs(55)).await["result"].clone();
        assert_eq!(
            result["structuredContent"],
            json!({"status": "waiting", "id": id, "kind": "question"}),
            "{result}"
        );
        assert!(
            result_text(&result)
                .contains(&format!("`wait_for_answer` tool with {{\"id\": \"{id}\"}}")),
            "{result}"
        );
    }
    // Past the TypeScript SDK's request timeout: nothing was cancelled.
    tokio::time::sleep_until((started + Duration::from_secs(61)).into()).await;
    for id in &ids {
        let question = askbus.get(&format!("/question/{id}")).await;
        assert_eq!(question["status"], "pending", "{question}");
    }
    tokio::time::sleep_until((started + SLOW_HUMAN).into()).await;
    let answers = [r#"[["Postgres"], ["Traces"]]"#, r#"[["eu-west"]]"#];
    for (id, answers) in ids.iter().zip(answers) {
        let answers: Value = serde_json::from_str(answers).expect("answers");
        askbus
            .post(
                &format!("/question/{id}/reply"),
                &json!({ "answers": answers }),
            )
            .await;
    }
    let typescript_result = typescript.stage("result").await["result"].clone();
    assert_eq!(
        typescript_result["structuredContent"],
        json!({"status": "answered", "answers": [
            {"question": "Which database should the service use?", "answer": ["Postgres"]},
            {"question": "Which signals should be exported?", "answer": ["Traces"]},
        ]})
    );
    let python_result = python.stage("result").await["result"].clone();
    assert_eq!(
        python_result["structuredContent"],
        json!({"status": "answered", "answers": [
            {"question": "Which region should the service run in?", "answer": ["eu-west"]},
        ]})
    );
    eprintln!(
        "mcp (SDK defaults): both hosts had the answer {:.1?} after asking",
        started.elapsed()
    );
    typescript.finish().await;
    python.finish().await;
    askbus.shutdown.cancel();
}

/// The MCP Inspector's CLI in its default mode (`--cli <url> --method …`, one process per
/// call): its strict schema check of `tools/list` finds nothing to report, and a
/// `tools/call` of `question` prints the human's answer, not a task it would never poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_in_its_default_mode_gets_the_answer() {
    let (askbus, mut events) = serve_for_the_inspector().await;

    check_tools(&inspector_call(&askbus, &["--method", "tools/list", "--strict"]).await);

    let questions = json!([{"question": "Ship it?", "header": "Ship", "options": [{"label": "Yes"}, {"label": "No"}]}]);
    let (_, result) = inspector_question(&askbus, &mut events, &questions, &[], "Yes").await;
    assert_eq!(
        result["structuredContent"],
        json!({"status": "answered", "answers": [{"question": "Ship it?", "answer": ["Yes"]}]}),
        "{result}"
    );
    askbus.shutdown.cancel();
}

/// A `question` call with `"locale": "vi"` asks in Vietnamese: the request carries the
/// locale (the web UI shows its card so), and the result the model reads is Vietnamese.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_with_a_locale_is_asked_and_answered_in_its_language() {
    let (askbus, mut events) = serve_for_the_inspector().await;

    let questions = json!([{"question": "Triển khai ngay?", "header": "Triển khai",
                             "options": [{"label": "Có"}, {"label": "Không"}]}]);
    let locale = ["--tool-arg", "locale=vi"];
    let (asked, result) = inspector_question(&askbus, &mut events, &questions, &locale, "Có").await;
    assert_eq!(asked["locale"], "vi", "{asked}");
    assert_eq!(
        result_text(&result),
        "Người dùng đã trả lời các câu hỏi của bạn: \"Triển khai ngay?\"=\"Có\". Giờ bạn có thể \
         tiếp tục, dựa trên các câu trả lời của người dùng.",
        "{result}"
    );
    assert_eq!(
        result["structuredContent"],
        json!({"status": "answered", "answers": [{"question": "Triển khai ngay?", "answer": ["Có"]}]}),
        "{result}"
    );

    // A locale that is no language tag is a tool error the model can read.
    let questions = format!("questions={questions}");
    let mut bad = question_call(&questions);
    bad.extend(["--tool-arg", "locale=not a tag"]);
    let output = inspector(&askbus, &bad)
        .output()
        .await
        .expect("run the Inspector");
    let refused: Value = serde_json::from_slice(&output.stdout).expect("the tool result");
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(result_text(&refused).contains("locale"), "{refused}");
    askbus.shutdown.cancel();
}

/// A call that returns `waiting` cancels nothing, nor does a `wait_for_answer` that
/// returns `waiting` again; an unknown id is a tool error; the MCP session ending (the
/// client deletes it) cancels the request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_request_outlives_its_calls_until_the_session_ends() {
    let askbus = Askbus::serve(&["--mcp-wait-secs", "0.3"]).await;
    let mut events = askbus.events().await;
    let mut node = Node::legacy("wait", Transport::Http(askbus.mcp_url())).await;
    let id = events.next_of(QUESTION.asked).await["id"].clone();
    for stage in ["asked", "waited"] {
        let result = node.stage(stage).await["result"].clone();
        assert_eq!(
            result["structuredContent"],
            json!({"status": "waiting", "id": id, "kind": "question"}),
            "{result}"
        );
        let question = askbus
            .get(&format!("/question/{}", id.as_str().expect("an id")))
            .await;
        assert_eq!(question["status"], "pending", "{question}");
    }
    let unknown = node.stage("unknown").await["result"].clone();
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert!(
        result_text(&unknown)
            .starts_with("askbus has no request \"que_01JZ6Q3V8R5M2K7D4T9WXYZABC\" waiting"),
        "{unknown}"
    );
    node.close_stdin();
    node.finish().await;
    let cancelled = events.next_terminal().await;
    assert_eq!(cancelled["type"], "question.cancelled", "{cancelled}");
    assert_eq!(cancelled["properties"]["requestID"], id);
    askbus.shutdown.cancel();
}

/// A client that makes each call in an MCP session of its own (the Inspector's CLI) keeps a
/// request alive by waiting for it: the session that waited last owns the request, so the
/// asking session ending cancels nothing, and a later call collects the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_that_waited_last_owns_the_request() {
    let askbus = Askbus::serve(&["--mcp-wait-secs", "0.3"]).await;
    let mut events = askbus.events().await;
    let package = package_dir("mcp-inspector");
    crate::node::check_node();
    crate::node::npm_ci(&package, "@modelcontextprotocol/inspector").await;
    let mut asking = Node::legacy("wait", Transport::Http(askbus.mcp_url())).await;
    let id = events.next_of(QUESTION.asked).await["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    asking.stage("asked").await;
    asking.stage("waited").await;
    asking.stage("unknown").await;
    let wait = [
        "--method",
        "tools/call",
        "--tool-name",
        "wait_for_answer",
        "--tool-arg",
    ];
    let id_arg = format!("id={id}");
    let waited = inspector_call(&askbus, &[&wait[..], &[id_arg.as_str()]].concat()).await;
    assert_eq!(waited["structuredContent"]["status"], "waiting", "{waited}");
    // The asking session ends (its client deletes it); the Inspector's session owns the
    // request now.
    asking.close_stdin();
    asking.finish().await;
    let question = askbus.get(&format!("/question/{id}")).await;
    assert_eq!(question["status"], "pending", "{question}");
    askbus
        .post(
            &format!("/question/{id}/reply"),
            &json!({"answers": [["Postgres"], ["Logs"]]}),
        )
        .await;
    let answered = inspector_call(&askbus, &[&wait[..], &[id_arg.as_str()]].concat()).await;
    assert_eq!(
        answered["structuredContent"]["status"], "answered",
        "{answered}"
    );
    askbus.shutdown.cancel();
}

/// A retry of the same approval call (its `tool_use_id`) after a `waiting` result joins the
/// request instead of cancelling it, and waits for the same decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrying_a_waiting_approval_call_joins_its_request() {
    let askbus = Askbus::serve(&["--mcp-wait-secs", "0.3"]).await;
    let mut events = askbus.events().await;
    let mut node = Node::legacy("rejoin", Transport::Http(askbus.mcp_url())).await;
    let id = events.next_of(APPROVAL.asked).await["id"].clone();
    for stage in ["asked", "again"] {
        let result = node.stage(stage).await["result"].clone();
        assert_eq!(
            result["structuredContent"],
            json!({"status": "waiting", "id": id, "kind": "approval"}),
            "{result}"
        );
    }
    let pending = askbus
        .get(&format!("/approval/{}", id.as_str().expect("an id")))
        .await;
    assert_eq!(pending["status"], "pending", "{pending}");
    let approve = json!({"decisions": [{"type": "approve"}]});
    askbus
        .post(
            &format!("/approval/{}/reply", id.as_str().expect("an id")),
            &approve,
        )
        .await;
    let result = node.stage("result").await["result"].clone();
    assert_eq!(
        result["structuredContent"],
        json!({"status": "decided", "decisions": [{"type": "approve"}]}),
        "{result}"
    );
    assert_eq!(events.next_terminal().await["type"], "approval.replied");
    node.finish().await;
    askbus.shutdown.cancel();
}

/// With the elicitation bridge on, a client that elicits forms is shown each approval as a
/// form: approving, rejecting with a reason and editing the arguments each decide the
/// request through the approval service, as `POST /approval/{id}/reply` would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_decided_in_the_clients_form() {
    let askbus = Askbus::serve(&["--mcp-elicitation"]).await;
    // (the form's answer, the decision askbus records)
    let cases = [
        (
            json!({"action": "accept", "content": {"a1": "approve"}}),
            json!({"type": "approve"}),
        ),
        (
            json!({"action": "accept", "content": {"a1": "reject", "a1_reason": "Not on a Friday"}}),
            json!({"type": "reject", "message": "Not on a Friday"}),
        ),
        (
            json!({"action": "accept", "content": {"a1": "edit", "a1_args": "{\"table\": \"sessions\"}"}}),
            json!({"type": "edit", "edited_action": {"name": "delete_rows", "args": {"table": "sessions"}}}),
        ),
    ];
    for (answer, decision) in cases {
        let mut events = askbus.events().await;
        let mut node = Node::legacy("review", Transport::Http(askbus.mcp_url()))
            .with_env("ASKBUS_REVIEW_ANSWERS", &json!([answer]).to_string())
            .await;
        let id = events.next_of(APPROVAL.asked).await["id"].clone();
        let form = node.stage("elicited").await["params"].clone();
        let schema = &form["requestedSchema"];
        assert_eq!(schema["required"], json!(["a1"]), "{form}");
        assert_eq!(
            schema["properties"]["a1"]["oneOf"]
                .as_array()
                .map(|choices| choices
                    .iter()
                    .map(|choice| choice["const"].clone())
                    .collect::<Vec<_>>()),
            Some(vec![json!("approve"), json!("reject"), json!("edit")]),
            "{form}"
        );
        assert_eq!(
            schema["properties"]["a1_args"]["default"],
            r#"{"table":"users"}"#
        );
        assert!(
            form["message"]
                .as_str()
                .is_some_and(|message| message.contains("delete_rows")),
            "{form}"
        );
        let result = node.stage("result").await["result"].clone();
        assert_eq!(
            result["structuredContent"],
            json!({"status": "decided", "decisions": [decision]}),
            "{result}"
        );
        let replied = events.next_terminal().await;
        assert_eq!(replied["type"], "approval.replied", "{replied}");
        assert_eq!(replied["properties"]["request_id"], id);
        assert_eq!(
            replied["properties"]["decisions"],
            json!([decision]),
            "{replied}"
        );
        assert_eq!(
            replied["properties"]["answered_by"]["name"], "admin",
            "{replied}"
        );
        node.finish().await;
    }
    askbus.shutdown.cancel();
}

/// An agent's own client may not decide its approval: the form's answer is refused with
/// the refusal `POST /approval/{id}/reply` gives the same token, the form comes back saying
/// so, and the request waits for a reviewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_form_answer_is_refused_as_its_http_reply_is() {
    let askbus = Askbus::serve(&[
        "--mcp-elicitation",
        "--agent-token",
        &format!("bot={AGENT_TOKEN}"),
        "--reviewer-token",
        &format!("alice={REVIEWER_TOKEN}"),
    ])
    .await;
    let mut events = askbus.events().await;
    let approve = json!({"action": "accept", "content": {"a1": "approve"}});
    let mut node = Node::legacy("review", Transport::Http(askbus.mcp_url()))
        .with_env("ASKBUS_TOKEN", AGENT_TOKEN)
        .with_env("ASKBUS_REVIEW_ANSWERS", &json!([approve]).to_string())
        .await;
    let id = events.next_of(APPROVAL.asked).await["id"]
        .as_str()
        .expect("the id")
        .to_owned();
    node.stage("elicited").await;
    let again = node.stage("elicited").await;
    let decide = format!("{}/approval/{id}/reply", askbus.base);
    let http_approve = json!({"decisions": [{"type": "approve"}]});
    let (status, body) = askbus
        .send(&decide, Some(AGENT_TOKEN), Some(&http_approve))
        .await;
    assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "{body}");
    let refusal: Value = serde_json::from_str(&body).expect("an error body");
    let refusal = refusal["error"]["message"]
        .as_str()
        .or_else(|| refusal["message"].as_str())
        .expect("a refusal message")
        .to_owned();
    let message = again["params"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("That answer was not accepted (") && message.contains(&refusal),
        "{message:?} lacks the HTTP refusal {refusal:?}"
    );
    let pending = askbus.get(&format!("/approval/{id}")).await;
    assert_eq!(pending["status"], "pending", "{pending}");
    let (status, body) = askbus
        .send(&decide, Some(REVIEWER_TOKEN), Some(&http_approve))
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let result = node.stage("result").await["result"].clone();
    assert_eq!(
        result["structuredContent"],
        json!({"status": "decided", "decisions": [{"type": "approve"}]}),
        "{result}"
    );
    node.finish().await;
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

/// A 2026-07-28 `tools/call` of `question`, raw, from a client that declares the tasks
/// extension (`tasks`) or not; the JSON-RPC response.
async fn modern_question_call(askbus: &Askbus, tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "question",
            "arguments": {"questions": [{
                "question": "Which database should the service use?",
                "header": "Database",
                "options": [{"label": "Postgres", "description": ""}],
            }]},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
        },
    });
    let response = askbus
        .http
        .post(askbus.mcp_url())
        .bearer_auth(TOKEN)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "question")
        .json(&call)
        .send()
        .await
        .expect("answered");
    let status = response.status();
    let body = response.text().await.expect("a body");
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    // JSON, or an event stream whose last message is the response.
    let message = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|data| !data.is_empty())
        .unwrap_or(&body);
    serde_json::from_str(message).unwrap_or_else(|error| panic!("{error}: {body}"))
}

/// A task is kept a while after it ends (so its client can read how), and a client could
/// make tasks and cancel them as fast as it can call: past `--max-mcp-tasks`, a call is
/// served as for a client without tasks, and still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_task_limit_a_call_is_served_without_a_task() {
    let askbus = Askbus::serve(&["--max-mcp-tasks", "1", "--mcp-wait-secs", "0.3"]).await;
    let first = modern_question_call(&askbus, true).await;
    assert_eq!(first["result"]["resultType"], "task", "a task: {first}");
    assert!(first["result"]["taskId"].is_string(), "{first}");
    let second = modern_question_call(&askbus, true).await;
    assert_ne!(second["result"]["resultType"], "task", "no task: {second}");
    assert_eq!(
        second["result"]["structuredContent"]["status"], "waiting",
        "held open, then `waiting`, as for any client: {second}"
    );
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_mode_client_is_offered_the_approvals_answer_link_and_decides_through_it() {
    let askbus = Askbus::serve(&["--mcp-elicitation"]).await;
    let mut events = askbus.events().await;
    let mut node = Node::links(APPROVAL.tool, askbus.mcp_url()).await;
    let id = events.next_of(APPROVAL.asked).await["id"].clone();
    let offered = link_offered(&askbus, &mut node, "delete_rows").await;
    // The link answers as the reviewer who minted it (here the MCP caller, an admin), with
    // the body of `POST /approval/{id}/reply` and no token.
    let approve = json!({"decisions": [{"type": "approve"}]});
    let (status, body) = askbus.send(&offered.url, None, Some(&approve)).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let done = node.stage("result").await;
    let result = &done["result"];
    assert_eq!(
        result["structuredContent"],
        json!({"status": "decided", "decisions": [{"type": "approve"}]}),
        "{done}"
    );
    assert_eq!(done["elicitations"], 1, "{done}");
    let replied = events.next_terminal().await;
    assert_eq!(replied["type"], "approval.replied", "{replied}");
    assert_eq!(replied["properties"]["request_id"], id);
    offered.completed(&mut node).await;
    node.finish().await;
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_eliciting_urls_but_not_forms_answers_a_question_through_its_link() {
    let askbus = Askbus::serve(&["--mcp-elicitation"]).await;
    let mut events = askbus.events().await;
    let mut node = Node::links(QUESTION.tool, askbus.mcp_url()).await;
    let id = events.next_of(QUESTION.asked).await["id"].clone();
    let offered = link_offered(&askbus, &mut node, "Which database should the service use?").await;
    let (status, linked) = askbus
        .send(&format!("{}/request", offered.url), None, None)
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{linked}");
    let linked: Value = serde_json::from_str(&linked).expect("JSON");
    assert_eq!(linked["kind"], "question", "{linked}");
    assert_eq!(linked["request"]["id"], id, "{linked}");
    let answers: Value = serde_json::from_str(HTTP_ANSWERS).expect("answers");
    let reply = json!({ "answers": answers });
    let (status, body) = askbus.send(&offered.url, None, Some(&reply)).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let done = node.stage("result").await;
    assert_eq!(
        done["result"]["structuredContent"]["status"], "answered",
        "{done}"
    );
    assert!(
        result_text(&done["result"])
            .contains("\"Which database should the service use?\"=\"Postgres\""),
        "{done}"
    );
    let replied = events.next_terminal().await;
    assert_eq!(replied["type"], "question.replied", "{replied}");
    assert_eq!(replied["properties"]["requestID"], id);
    // The link decided once: a second answer through it is refused.
    let (status, body) = askbus.send(&offered.url, None, Some(&reply)).await;
    assert_eq!(status, reqwest::StatusCode::CONFLICT, "{body}");
    offered.completed(&mut node).await;
    node.finish().await;
    askbus.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_roles_the_askers_link_decides_nothing_and_an_agent_is_offered_none() {
    let askbus = Askbus::serve(&[
        "--mcp-elicitation",
        "--agent-token",
        &format!("bot={AGENT_TOKEN}"),
        "--reviewer-token",
        &format!("alice={REVIEWER_TOKEN}"),
    ])
    .await;
    let mut events = askbus.events().await;
    let approve = json!({"decisions": [{"type": "approve"}]});

    // The admin's client asks (as an agent of its name), so its own link may not decide it.
    let mut node = Node::links(APPROVAL.tool, askbus.mcp_url()).await;
    let id = events.next_of(APPROVAL.asked).await["id"]
        .as_str()
        .expect("the request id")
        .to_owned();
    let offered = link_offered(&askbus, &mut node, "delete_rows").await;
    let (status, body) = askbus.send(&offered.url, None, Some(&approve)).await;
    assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("asked this request"), "{body}");
    let pending = askbus.get(&format!("/approval/{id}")).await;
    assert_eq!(pending["status"], "pending", "nothing resolved: {pending}");
    // A reviewer decides over HTTP; the client hears the link's elicitation is complete.
    let decide = format!("{}/approval/{id}/reply", askbus.base);
    let (status, body) = askbus
        .send(&decide, Some(REVIEWER_TOKEN), Some(&approve))
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let done = node.stage("result").await;
    assert_eq!(
        done["result"]["structuredContent"]["status"], "decided",
        "{done}"
    );
    assert_eq!(events.next_terminal().await["type"], "approval.replied");
    offered.completed(&mut node).await;
    node.finish().await;

    // An agent's client: no link acts as an agent, so none is offered.
    let mut node = Node::links(APPROVAL.tool, askbus.mcp_url())
        .with_env("ASKBUS_TOKEN", AGENT_TOKEN)
        .await;
    let id = events.next_of(APPROVAL.asked).await["id"]
        .as_str()
        .expect("the request id")
        .to_owned();
    let decide = format!("{}/approval/{id}/reply", askbus.base);
    let (status, body) = askbus
        .send(&decide, Some(REVIEWER_TOKEN), Some(&approve))
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let done = node.stage("result").await;
    assert_eq!(
        done["result"]["structuredContent"]["status"], "decided",
        "{done}"
    );
    assert_eq!(done["elicitations"], 0, "no link was offered: {done}");
    node.finish().await;
    askbus.shutdown.cancel();
}

/// An answer link offered to a `tests/mcp/links.mjs` client.
struct Offered {
    /// The link.
    url: String,
    /// The elicitation's id, which `notifications/elicitation/complete` names.
    elicitation_id: String,
}

impl Offered {
    /// Waits for the client to hear this link's elicitation is complete.
    async fn completed(&self, node: &mut Node) {
        let complete = node.stage("complete").await;
        assert_eq!(
            complete["params"]["elicitationId"], self.elicitation_id,
            "{complete}"
        );
    }
}

/// The URL-mode elicitation node reports: the request's answer link on this server, whose
/// message mentions `mentions` and whose page loads without a token.
async fn link_offered(askbus: &Askbus, node: &mut Node, mentions: &str) -> Offered {
    let elicited = node.stage("elicited").await;
    let params = &elicited["params"];
    assert_eq!(params["mode"], "url", "{elicited}");
    let url = params["url"].as_str().expect("a URL").to_owned();
    assert!(
        url.starts_with(&format!("{}/answer/", askbus.base)),
        "{url} is not an answer link of {}",
        askbus.base
    );
    assert!(
        params["message"]
            .as_str()
            .is_some_and(|message| message.contains(mentions)),
        "{elicited}"
    );
    let elicitation_id = params["elicitationId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!elicitation_id.is_empty(), "{elicited}");
    let page = askbus
        .http
        .get(&url)
        .send()
        .await
        .expect("GET the link's page");
    assert_eq!(page.status(), reqwest::StatusCode::OK);
    let html = page
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/html"));
    assert!(html, "the link's page is HTML: {:?}", page.headers());
    Offered {
        url,
        elicitation_id,
    }
}

/// What differs between the two tools' requests on the askbus side.
struct RequestKind {
    /// The MCP tool that makes it.
    tool: &'static str,
    /// Its HTTP route (`GET {route}/{id}`).
    route: &'static str,
    /// The event announcing it.
    asked: &'static str,
    /// The event of its cancellation.
    cancelled: &'static str,
    /// The property naming the request in that event.
    request_id: &'static str,
    /// The property naming its session there.
    session_id: &'static str,
}

const QUESTION: RequestKind = RequestKind {
    tool: "question",
    route: "/question",
    asked: "question.asked",
    cancelled: "question.cancelled",
    request_id: "requestID",
    session_id: "sessionID",
};

const APPROVAL: RequestKind = RequestKind {
    tool: "request_approval",
    route: "/approval",
    asked: "approval.asked",
    cancelled: "approval.cancelled",
    request_id: "request_id",
    session_id: "session_id",
};

/// The decisions `decide_over_http` sends over HTTP, one per approval call, with the text
/// and `structuredContent` the MCP client must receive.
const DECISIONS: [(&str, &str); 3] = [
    (
        r#"{"type": "approve"}"#,
        r#"A human approved this call to `delete_rows` with {"table":"users"}: run it as you proposed."#,
    ),
    (
        r#"{"type": "edit", "edited_action": {"name": "delete_rows", "args": {"table": "sessions"}}}"#,
        r#"A human replaced this call to `delete_rows` with {"table":"users"}: run `delete_rows` with {"table":"sessions"} instead, not your original call."#,
    ),
    (
        r#"{"type": "reject", "message": "Not during business hours"}"#,
        "A human reviewed this call to `delete_rows`; do not run it. Their answer: Not during business hours",
    ),
];

/// `tools/list` offers the three tools, each with its askbus-tool schema, a title, the
/// four annotations and an output schema, in JSON Schema every SDK takes (no type arrays).
fn check_tools(tools: &Value) {
    let tools = &tools["tools"];
    let names: Vec<&str> = tools
        .as_array()
        .expect("a list of tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["question", "request_approval", "wait_for_answer"],
        "{tools}"
    );
    assert_eq!(tools[0]["inputSchema"]["type"], "object");
    assert!(tools[0]["inputSchema"]["properties"]["questions"].is_object());
    assert_eq!(tools[1]["inputSchema"]["type"], "object");
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["actions"]));
    assert_eq!(tools[2]["inputSchema"]["required"], json!(["id"]));
    for asking in &tools.as_array().expect("tools")[..2] {
        let locale = &asking["inputSchema"]["properties"]["locale"];
        assert_eq!(locale["type"], "string", "{asking}");
        assert!(locale["description"].is_string(), "{asking}");
    }
    let titles = [
        "Ask the human",
        "Ask the human to approve tool calls",
        "Wait for the human's answer",
    ];
    let idempotent = [false, true, true];
    for (index, tool) in tools.as_array().expect("tools").iter().enumerate() {
        assert_eq!(tool["title"], titles[index], "{tool}");
        assert_eq!(
            tool["annotations"],
            json!({
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": idempotent[index],
                "openWorldHint": true,
            }),
            "{tool}"
        );
        let output = &tool["outputSchema"];
        assert_eq!(output["type"], "object", "{tool}");
        assert_eq!(output["required"], json!(["status"]), "{tool}");
        assert!(
            output["properties"]["status"]["enum"]
                .as_array()
                .is_some_and(|statuses| statuses.contains(&json!("waiting"))),
            "{tool}"
        );
        for schema in [&tool["inputSchema"], output] {
            assert_no_type_arrays(schema, &tool["name"]);
        }
    }
}

/// Fails if any `type` keyword of `schema` is an array (`["string", "null"]`), which some
/// MCP hosts refuse.
fn assert_no_type_arrays(schema: &Value, tool: &Value) {
    match schema {
        Value::Object(object) => {
            assert!(
                !object.get("type").is_some_and(Value::is_array),
                "{tool}: a type array in {schema}"
            );
            object
                .values()
                .for_each(|value| assert_no_type_arrays(value, tool));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| assert_no_type_arrays(item, tool)),
        _ => {}
    }
}

/// The shared exchange of the `approve` scenario: node lists the tools and asks for the
/// approval of `delete_rows` once per [`DECISIONS`] entry; for each, the test finds the
/// request on `/event` and in `GET /approval`, waits for the first progress notification,
/// decides over HTTP, and checks the tool result node receives.
async fn decide_over_http(askbus: &Askbus, events: &mut Events, node: &mut Node, session: &str) {
    check_tools(&node.stage("tools").await);
    for (call, (decision, text)) in DECISIONS.iter().enumerate() {
        let asked = events.next_of("approval.asked").await;
        assert_eq!(asked["session_id"], session, "{asked}");
        assert_eq!(
            asked["action_requests"],
            json!([{
                "name": "delete_rows",
                "args": {"table": "users"},
                "description": "Delete the users inactive for 90 days",
                "tool_use_id": format!("toolu_{}", call + 1),
            }])
        );
        assert_eq!(
            asked["review_configs"],
            json!([{"action_name": "delete_rows", "allowed_decisions": ["approve", "edit", "reject"]}])
        );
        let id = asked["id"].as_str().expect("the request id").to_owned();
        let listed = askbus.get("/approval").await;
        assert_eq!(listed[0]["id"], id, "GET /approval lists it: {listed}");

        let progress = node.stage("progress").await["progress"].clone();
        assert!(
            progress["message"]
                .as_str()
                .is_some_and(|message| message.contains(&id)),
            "the progress message names the approval: {progress}"
        );

        let decision: Value = serde_json::from_str(decision).expect("a decision");
        askbus
            .post(
                &format!("/approval/{id}/reply"),
                &json!({"decisions": [decision]}),
            )
            .await;
        let done = node.stage("result").await;
        let result = &done["result"];
        assert_ne!(result["isError"], true, "{result}");
        assert_eq!(result_text(result), *text);
        assert_eq!(
            result["structuredContent"],
            json!({"status": "decided", "decisions": [decision]})
        );
        let replied = events.next_terminal().await;
        assert_eq!(replied["type"], "approval.replied", "{replied}");
        assert_eq!(replied["properties"]["request_id"], id);
    }
}

/// The `cancel` scenario for `kind`'s tool: node aborts the call at its first progress
/// notification, and the request is cancelled.
async fn cancel_call(kind: &RequestKind) {
    let askbus = Askbus::serve(&[]).await;
    let mut events = askbus.events().await;
    let mut node = Node::legacy("cancel", Transport::Http(askbus.mcp_url()))
        .with_env("ASKBUS_CANCEL_TOOL", kind.tool)
        .await;
    let asked = events.next_of(kind.asked).await;
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
    assert_eq!(cancelled["type"], kind.cancelled, "{cancelled}");
    assert_eq!(cancelled["properties"][kind.request_id], id);
    assert_eq!(cancelled["properties"][kind.session_id], SESSION);
    node.close_stdin();
    node.finish().await;
    let status = askbus.get(&format!("{}/{id}", kind.route)).await;
    assert_eq!(status["status"], "cancelled", "{status}");
    askbus.shutdown.cancel();
}

/// Waits for the stdio server to stop because node closed its end.
async fn stopped_with_stdin(
    served: tokio::task::JoinHandle<Result<askbus_mcp::QuitReason, askbus_mcp::McpServeError>>,
) {
    let quit = tokio::time::timeout(STEP_TIMEOUT, served)
        .await
        .expect("the stdio server stops when node closes its end")
        .expect("the server task")
        .expect("a clean stop");
    assert!(
        matches!(quit, askbus_mcp::QuitReason::Closed),
        "stopped because the client closed stdin: {quit:?}"
    );
}

/// The shared exchange of the `answer` scenario: node lists the tools and calls
/// `question`; the test waits for the question on `/event` and for the first progress
/// notification, answers over HTTP, and checks the tool result node receives.
async fn answer_over_http(askbus: &Askbus, events: &mut Events, node: &mut Node, name: &str) {
    check_tools(&node.stage("tools").await);

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
    let answers: Value = serde_json::from_str(HTTP_ANSWERS).expect("answers");
    askbus
        .post(
            &format!("/question/{id}/reply"),
            &json!({ "answers": answers }),
        )
        .await;
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
    /// The requests the server serves, when the test built the server itself (stdio).
    hub: Option<RequestHub>,
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
            hub: None,
            shutdown,
            http: reqwest::Client::new(),
        }
    }

    /// The HTTP API alone, over a hub the test also serves MCP from
    /// ([`serve_stdio`](Self::serve_stdio)).
    async fn serve_http_only() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let hub = RequestHub::new(Bus::new());
        let shutdown = CancellationToken::new();
        let config = HttpConfig {
            tokens: vec![askbus_http::AccessToken::all_sessions(TOKEN)],
            ..HttpConfig::default()
        };
        let app = askbus_http::router(hub.clone(), config, shutdown.clone());
        tokio::spawn(
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.clone().cancelled_owned())
                .into_future(),
        );
        Self {
            base,
            hub: Some(hub),
            shutdown,
            http: reqwest::Client::new(),
        }
    }

    /// Serves MCP over node's stdin and stdout from the hub of
    /// [`serve_http_only`](Self::serve_http_only), as `askbus mcp` does over its own.
    fn serve_stdio(
        &self,
        node: &mut Node,
    ) -> tokio::task::JoinHandle<Result<askbus_mcp::QuitReason, askbus_mcp::McpServeError>> {
        let hub = self.hub.clone().expect("a server built by the test");
        let (reader, writer) = node.take_stdio();
        let config = McpConfig {
            session_id: SESSION.into(),
            progress_interval: Duration::from_millis(100),
            ..McpConfig::default()
        };
        let mcp = AskbusMcp::new(hub, config);
        tokio::spawn(askbus_mcp::serve_io(
            mcp,
            reader,
            writer,
            self.shutdown.child_token(),
        ))
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

    /// `POST {path}` with a JSON `body`, which must answer 200.
    async fn post(&self, path: &str, body: &Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .json(body)
            .send()
            .await
            .expect("POST");
        assert_eq!(response.status(), reqwest::StatusCode::OK, "POST {path}");
    }

    /// `POST url` with `body` (a `GET` without one), as `token` if given; the status and
    /// the body.
    async fn send(
        &self,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> (reqwest::StatusCode, String) {
        let mut request = match body {
            Some(body) => self.http.post(url).json(body),
            None => self.http.get(url),
        };
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("the request");
        let status = response.status();
        (status, response.text().await.expect("the body"))
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

    /// The next event, which must end a question or an approval.
    async fn next_terminal(&mut self) -> Value {
        let event = self.next().await;
        let kind = event["type"].as_str().unwrap_or_default();
        assert!(
            [
                "question.replied",
                "question.rejected",
                "question.timed_out",
                "question.cancelled",
                "approval.replied",
                "approval.timed_out",
                "approval.cancelled",
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

/// A node script before it is spawned.
struct NodeBuilder {
    command: Command,
    steps: Steps,
}

impl Node {
    /// `tests/mcp/legacy.mjs <scenario>` (the 1.x SDK).
    fn legacy(scenario: &str, transport: Transport) -> NodeBuilder {
        let mut command = node_command("legacy.mjs");
        command.arg(scenario);
        let steps = match transport {
            Transport::Http(url) => {
                command.args(["http", &url]);
                Steps::OnStdout
            }
            Transport::Stdio => {
                command.arg("stdio");
                Steps::OnStderr
            }
        };
        NodeBuilder { command, steps }
    }

    /// `tests/mcp/defaults.mjs <url>` (the 1.x SDK, every setting at its default).
    fn defaults(url: String) -> NodeBuilder {
        let mut command = node_command("defaults.mjs");
        command.arg(url);
        NodeBuilder {
            command,
            steps: Steps::OnStdout,
        }
    }

    /// `tests/mcp/links.mjs <tool> <url>` (the 1.x SDK, declaring URL-mode elicitation).
    fn links(tool: &str, url: String) -> NodeBuilder {
        let mut command = node_command("links.mjs");
        command.args([tool, &url]);
        NodeBuilder {
            command,
            steps: Steps::OnStdout,
        }
    }

    /// `tests/mcp/modern.mjs <scenario> <url>` (the 2.x client, protocol 2026-07-28).
    fn modern(scenario: &str, url: String) -> NodeBuilder {
        let mut command = node_command("modern.mjs");
        command.args([scenario, &url]);
        NodeBuilder {
            command,
            steps: Steps::OnStdout,
        }
    }

    /// Node's stdout and stdin, for the test to serve MCP on (stdio only).
    fn take_stdio(&mut self) -> (tokio::process::ChildStdout, tokio::process::ChildStdin) {
        let stdout = self.child.stdout.take().expect("piped stdout");
        let stdin = self.child.stdin.take().expect("piped stdin");
        (stdout, stdin)
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
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let package = package();
            Node::spawn(
                self.command,
                &package,
                "@modelcontextprotocol/sdk",
                self.steps,
            )
            .await
        })
    }
}

/// `tests/mcp`, the npm package holding the scripts.
fn package() -> PathBuf {
    package_dir("mcp")
}

/// `tests/{name}`.
fn package_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// The Inspector CLI's arguments calling `question` with `questions` (`questions=[…]`).
fn question_call(questions: &str) -> Vec<&str> {
    vec![
        "--method",
        "tools/call",
        "--tool-name",
        "question",
        "--tool-arg",
        questions,
    ]
}

/// The server with its events, and the Inspector's CLI installed.
async fn serve_for_the_inspector() -> (Askbus, Events) {
    let askbus = Askbus::serve(&[]).await;
    let events = askbus.events().await;
    crate::node::check_node();
    crate::node::npm_ci(
        &package_dir("mcp-inspector"),
        "@modelcontextprotocol/inspector",
    )
    .await;
    (askbus, events)
}

/// Calls `question` with `questions` (and `more_args`) through the Inspector's CLI while the
/// human answers `answer` over HTTP; the `question.asked` event and the tool result.
async fn inspector_question(
    askbus: &Askbus,
    events: &mut Events,
    questions: &Value,
    more_args: &[&str],
    answer: &str,
) -> (Value, Value) {
    let questions = format!("questions={questions}");
    let mut call = question_call(&questions);
    call.extend_from_slice(more_args);
    // The human answers while the Inspector's call waits.
    let human = async {
        let asked = events.next_of("question.asked").await;
        let id = asked["id"].as_str().expect("the id");
        askbus
            .post(
                &format!("/question/{id}/reply"),
                &json!({"answers": [[answer]]}),
            )
            .await;
        asked
    };
    let (result, asked) = tokio::join!(inspector_call(askbus, &call), human);
    (asked, result)
}

/// What the Inspector's CLI prints for `args`, run to success, as JSON.
async fn inspector_call(askbus: &Askbus, args: &[&str]) -> Value {
    let output = tokio::time::timeout(STEP_TIMEOUT, inspector(askbus, args).output())
        .await
        .expect("the Inspector returns in time")
        .expect("run the Inspector");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{:?}\n{stdout}\n{stderr}",
        output.status
    );
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

/// The MCP Inspector's CLI (`tests/mcp-inspector`, installed) against askbus's `/mcp`
/// with the test's token, every other setting at its default, and `args`.
fn inspector(askbus: &Askbus, args: &[&str]) -> Command {
    let package = package_dir("mcp-inspector");
    let mut command = Command::new("node");
    command
        .arg(
            package.join(
                "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
            ),
        )
        .args(["--cli", &askbus.mcp_url(), "--header"])
        .arg(format!("Authorization: Bearer {TOKEN}"))
        .args(args)
        .current_dir(&package)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
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
