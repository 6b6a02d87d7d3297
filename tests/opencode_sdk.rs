//! The real `@opencode-ai/sdk` v2 client against a running askbus server.
//!
//! SPEC section 7 promises that OpenCode's clients answer askbus questions unchanged. This
//! test proves it with the npm package itself: it installs the pinned version
//! (`tests/opencode-sdk/package-lock.json`, `npm ci` when `node_modules` is missing or
//! stale), serves the askbus router over real TCP on 127.0.0.1, and runs
//! `tests/opencode-sdk/drive.mjs`, which uses `event.subscribe`, `global.event`,
//! `question.list`, `question.reply` and `question.reject` the way an OpenCode UI does,
//! then answers askbus approvals as OpenCode permissions (`permission.list`,
//! `permission.reply` with `once` / `always` / `reject`, the deprecated
//! `permission.respond`, refused for an agent's token), watches a timed-out and an aborted
//! question disappear by the `question.rejected` it receives, and calls the v2 client
//! (`v2.health.get`, `v2.event.subscribe`, `v2.session.question.*`,
//! `v2.session.permission.*`).
//!
//! The exchange is driven by process I/O, never by sleeps: node prints a `subscribed` line
//! once both event streams are open, the test then asks two questions in process, node sees
//! them announced by `question.asked`, answers one, rejects the other, and prints a summary
//! line. The test checks both sides: the in-process futures resolve with exactly what node
//! sent, and node saw OpenCode's field names and events.
//!
//! Needs Node.js 20+ with npm, and the npm registry the first time (or after the lock file
//! changes).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use askbus::question::{Identity, Role};
use askbus::{AskError, Bus, QuestionInfo, QuestionOption, QuestionService, Timeout, ToolRef};
use askbus_http::{AccessToken, HttpConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader, Lines};
use tokio::net::TcpListener;
use tokio::process::{ChildStdout, Command};
use tokio_util::sync::CancellationToken;

use crate::node;

/// Limit of the whole node run; `drive.mjs` gives up on its own a little earlier.
const NODE_TIMEOUT: Duration = Duration::from_secs(25);
/// What `drive.mjs` is told its own limit is, in milliseconds.
const NODE_SELF_TIMEOUT_MS: &str = "20000";
/// Limit of each in-process wait once node is done.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(5);
/// The bearer token the server requires and node sends.
const TOKEN: &str = "opencode-sdk-test-token-0123456789";
/// An agent's token: it may ask, never decide.
const AGENT_TOKEN: &str = "opencode-sdk-agent-token-0123456789";
/// The `directory` `/global/event` reports.
const DIRECTORY: &str = "/srv/askbus-opencode-sdk";
/// The syntactically valid but unknown id `drive.mjs` rejects.
const UNKNOWN_ID: &str = "que_00000000000000000000000000";

#[test]
fn the_opencode_sdk_lists_replies_rejects_and_streams_events() {
    let started = Instant::now();
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("opencode-sdk");
    node::check_node();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        node::npm_ci(&package, "@opencode-ai/sdk").await;
        drive(&package).await;
    });
    eprintln!("opencode_sdk: done in {:.1?}", started.elapsed());
}

/// The asker's first request: answered by node.
fn setup_questions() -> Vec<QuestionInfo> {
    vec![
        QuestionInfo::new(
            "Which database should the service use?",
            "Database",
            [
                QuestionOption::new("Postgres", "the production default"),
                QuestionOption::new("SQLite", "one file, no server"),
            ],
        ),
        QuestionInfo::new(
            "Which signals should be exported?",
            "Telemetry",
            [
                QuestionOption::new("Logs", ""),
                QuestionOption::new("Metrics", ""),
                QuestionOption::new("Traces", ""),
            ],
        )
        .multiple()
        .options_only(),
    ]
}

/// The asker's second request: rejected by node.
fn deploy_question() -> Vec<QuestionInfo> {
    vec![QuestionInfo::new(
        "Deploy to production now?",
        "Deploy",
        [
            QuestionOption::new("Yes", "ship it"),
            QuestionOption::new("No", "wait"),
        ],
    )]
}

/// Serves askbus, runs `drive.mjs` against it and checks both sides of the exchange.
async fn drive(package: &Path) {
    let questions = QuestionService::new(Bus::new());
    let shutdown = CancellationToken::new();
    let config = HttpConfig {
        tokens: vec![
            AccessToken::all_sessions(TOKEN),
            AccessToken::new(AGENT_TOKEN, Identity::new("agent-1", Role::Agent)),
        ],
        // Short, so node also sees a heartbeat frame without waiting long for it.
        heartbeat_interval: Duration::from_millis(200),
        directory: DIRECTORY.to_owned(),
        ..HttpConfig::default()
    };
    let app = askbus_http::router(questions.clone(), config, shutdown.clone());
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let address = listener.local_addr().expect("the bound address");
    let server = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.clone().cancelled_owned())
            .into_future(),
    );

    let mut child = Command::new("node")
        .arg("drive.mjs")
        .arg(format!("http://{address}"))
        .current_dir(package)
        .env("ASKBUS_TOKEN", TOKEN)
        .env("ASKBUS_AGENT_TOKEN", AGENT_TOKEN)
        .env("ASKBUS_DRIVE_TIMEOUT_MS", NODE_SELF_TIMEOUT_MS)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node drive.mjs");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let stderr = tokio::spawn(read_all(stderr));

    let session = async {
        let mut lines = BufReader::new(stdout).lines();
        let subscribed = next_json(&mut lines).await?;
        if subscribed["stage"] != "subscribed" {
            return Err(format!(
                "expected the `subscribed` line first, got {subscribed}"
            ));
        }
        // Both streams are open: ask now, so node sees the questions announced.
        let setup = questions
            .ask("ses_opencode_sdk", setup_questions())
            .tool(ToolRef {
                message_id: "msg_sdk".to_owned(),
                call_id: "call_sdk".to_owned(),
            })
            .timeout(Timeout::Never)
            .submit()
            .map_err(|error| format!("submit the first question: {error}"))?;
        let deploy = questions
            .ask("ses_opencode_deploy", deploy_question())
            .timeout(Timeout::Never)
            .submit()
            .map_err(|error| format!("submit the second question: {error}"))?;
        let summary = next_json(&mut lines).await?;
        if let Some(extra) = lines.next_line().await.map_err(|error| error.to_string())? {
            return Err(format!("unexpected output after the summary: {extra}"));
        }
        Ok((setup, deploy, summary))
    };
    let outcome = tokio::time::timeout(NODE_TIMEOUT, session).await;
    // Node must be gone before its stderr can be read to the end: killed at once if the
    // exchange failed, given a moment to exit by itself otherwise.
    if !matches!(outcome, Ok(Ok(_))) {
        let _ = child.start_kill();
    }
    let status = match tokio::time::timeout(SETTLE_TIMEOUT, child.wait()).await {
        Ok(status) => status.map_err(|error| error.to_string()),
        Err(_) => {
            let _ = child.kill().await;
            Err("node did not exit after its summary".to_owned())
        }
    };
    let stderr = stderr.await.expect("the stderr reader");
    let (setup, deploy, summary) = match (outcome, &status) {
        (Ok(Ok(result)), Ok(status)) if status.success() => result,
        (Err(_), _) => {
            panic!("node drive.mjs took longer than {NODE_TIMEOUT:?}; stderr:\n{stderr}")
        }
        (Ok(Err(error)), _) => panic!("node drive.mjs: {error} ({status:?}); stderr:\n{stderr}"),
        (Ok(Ok(_)), _) => panic!("node drive.mjs failed ({status:?}); stderr:\n{stderr}"),
    };
    let (setup_id, deploy_id) = (setup.id().to_string(), deploy.id().to_string());
    let sent = check_summary(&summary, &setup_id, &deploy_id);

    // The asker's side: exactly what node sent, and the rejection.
    let answers = tokio::time::timeout(SETTLE_TIMEOUT, setup)
        .await
        .expect("the replied question resolves")
        .expect("the first question was answered");
    assert_eq!(answers, sent, "the in-process asker got what node sent");
    let rejected = tokio::time::timeout(SETTLE_TIMEOUT, deploy)
        .await
        .expect("the rejected question resolves");
    assert_eq!(rejected, Err(AskError::Rejected { reason: None }));
    assert_eq!(questions.pending_count(), 0);

    // Graceful shutdown ends node's (already closed) and any other open streams promptly.
    shutdown.cancel();
    tokio::time::timeout(SETTLE_TIMEOUT, server)
        .await
        .expect("graceful shutdown does not hang")
        .expect("the server task")
        .expect("axum::serve");
}

/// Checks node's summary; returns the answers node sent to `setup_id`.
fn check_summary(summary: &Value, setup_id: &str, deploy_id: &str) -> Vec<Vec<String>> {
    let context = || format!("node's summary: {summary:#}");
    assert_eq!(summary["stage"], "summary", "{}", context());

    // `question.list`: both requests, with OpenCode's field names.
    let listed = summary["listed"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", context()));
    let find = |id: &str| {
        listed
            .iter()
            .find(|request| request["id"] == id)
            .unwrap_or_else(|| panic!("{id} is not listed; {}", context()))
    };
    let setup = find(setup_id);
    assert_eq!(setup["sessionID"], "ses_opencode_sdk");
    assert_eq!(
        setup["tool"],
        json!({"messageID": "msg_sdk", "callID": "call_sdk"})
    );
    let setup_questions = setup["questions"]
        .as_array()
        .expect("`questions` is an array");
    assert_eq!(setup_questions.len(), 2);
    assert_eq!(
        setup_questions[0]["question"],
        "Which database should the service use?"
    );
    assert_eq!(setup_questions[0]["header"], "Database");
    assert_eq!(
        setup_questions[0]["options"][0],
        json!({"label": "Postgres", "description": "the production default"})
    );
    assert_eq!(setup_questions[0]["multiple"], false);
    assert_eq!(setup_questions[1]["multiple"], true);
    assert_eq!(setup_questions[1]["custom"], false);
    let deploy = find(deploy_id);
    assert_eq!(deploy["sessionID"], "ses_opencode_deploy");
    assert_eq!(deploy["questions"][0]["header"], "Deploy");
    assert_eq!(
        summary["asked"],
        json!([setup_id, deploy_id]),
        "{}",
        context()
    );

    // `question.reply` and `question.reject` answered `true`.
    let expected = vec![
        vec!["Postgres".to_owned()],
        vec!["Logs".to_owned(), "Metrics".to_owned()],
    ];
    assert_eq!(summary["reply"]["requestID"], setup_id);
    assert_eq!(
        summary["reply"]["answers"],
        json!(expected),
        "{}",
        context()
    );
    assert_eq!(summary["reply"]["result"], true, "{}", context());
    assert_eq!(summary["reject"]["requestID"], deploy_id);
    assert_eq!(summary["reject"]["result"], true, "{}", context());

    // Errors reach the SDK as JSON bodies it can read, with OpenCode's `_tag`.
    let again = &summary["errors"]["replyAgain"];
    assert_eq!(again["status"], 409, "{}", context());
    assert_eq!(again["body"]["code"], "already_resolved");
    assert_eq!(again["body"]["_tag"], "QuestionAlreadyResolvedError");
    assert_eq!(again["body"]["requestID"], setup_id);
    let unknown = &summary["errors"]["rejectUnknown"];
    assert_eq!(unknown["status"], 404, "{}", context());
    assert_eq!(unknown["body"]["_tag"], "QuestionNotFoundError");
    assert_eq!(unknown["body"]["requestID"], UNKNOWN_ID);
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|text| text.contains(UNKNOWN_ID)),
        "the SDK's error message is the server's: {}",
        context()
    );

    // `event.subscribe`: the SSE frames, parsed by the SDK.
    let by_type = &summary["events"]["byType"];
    assert_eq!(by_type["server.connected"], 1, "{}", context());
    assert_eq!(by_type["question.asked"], 2, "{}", context());
    assert_eq!(by_type["question.replied"], 1, "{}", context());
    assert_eq!(by_type["question.rejected"], 1, "{}", context());
    assert!(
        by_type["server.heartbeat"].as_u64() >= Some(1),
        "{}",
        context()
    );
    let log = summary["events"]["log"].as_array().expect("the event log");
    let question_events: Vec<(&Value, &Value)> = log
        .iter()
        .filter(|event| {
            event["type"]
                .as_str()
                .is_some_and(|kind| kind.starts_with("question."))
        })
        .map(|event| (&event["type"], &event["requestID"]))
        .collect();
    assert_eq!(
        question_events,
        [
            (&json!("question.asked"), &json!(setup_id)),
            (&json!("question.asked"), &json!(deploy_id)),
            (&json!("question.replied"), &json!(setup_id)),
            (&json!("question.rejected"), &json!(deploy_id)),
        ],
        "question events in order; {}",
        context()
    );
    for event in log
        .iter()
        .filter(|event| event["type"] != "server.heartbeat")
    {
        if event["type"] != "server.connected" {
            assert!(
                event["id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("evt_")),
                "{event}"
            );
        }
    }
    let replied = &summary["events"]["replied"];
    assert_eq!(
        replied["properties"],
        json!({
            "sessionID": "ses_opencode_sdk",
            "requestID": setup_id,
            "answers": expected,
            "answeredBy": {"name": "admin", "role": "admin"}
        })
    );
    let rejected = &summary["events"]["rejected"];
    assert_eq!(
        rejected["properties"],
        json!({
            "sessionID": "ses_opencode_deploy",
            "requestID": deploy_id,
            "answeredBy": {"name": "admin", "role": "admin"}
        })
    );

    // `global.event`: the same events, wrapped with the directory.
    let global = &summary["globalEvents"];
    assert_eq!(global["byType"]["server.connected"], 1, "{}", context());
    assert_eq!(global["byType"]["question.asked"], 2, "{}", context());
    assert_eq!(global["byType"]["question.replied"], 1, "{}", context());
    assert_eq!(global["byType"]["question.rejected"], 1, "{}", context());

    // `global.health` and `session.abort`, as the SDK calls them.
    assert_eq!(summary["health"]["healthy"], true, "{}", context());
    assert!(summary["health"]["version"].is_string(), "{}", context());
    let abort = &summary["abort"];
    assert!(abort["requestID"].is_string(), "{}", context());
    assert_eq!(abort["result"], true, "{}", context());
    assert_eq!(
        abort["stillListed"],
        false,
        "the aborted session's question is gone; {}",
        context()
    );
    assert_eq!(
        global["sample"],
        json!({"directory": DIRECTORY, "hasPayload": true})
    );

    check_permissions(&summary["permissions"]);
    check_stale_questions(&summary["stale"]);
    check_v2(&summary["v2"]);
    expected
}

/// Approvals answered as OpenCode permissions, through the approval's own decision path.
fn check_permissions(permissions: &Value) {
    let context = || format!("node's permissions: {permissions:#}");
    let ids = &permissions["ids"];
    // `permission.asked` carries OpenCode's `PermissionRequest`, built from the approval.
    let asked = &permissions["asked"][0];
    assert_eq!(asked["id"], ids["once"], "{}", context());
    assert_eq!(asked["sessionID"], "ses_permissions");
    assert_eq!(asked["permission"], "bash");
    assert_eq!(asked["patterns"], json!(["ls -la"]));
    assert_eq!(asked["always"], json!(["ls -la"]));
    assert_eq!(
        asked["tool"],
        json!({"messageID": "", "callID": "call_once"})
    );
    assert_eq!(asked["metadata"]["actions"][0]["args"]["command"], "ls -la");
    assert_eq!(asked["metadata"]["approvalKey"], "ses_permissions_1");
    // `permission.list` lists the same four.
    let listed = permissions["listed"]
        .as_array()
        .expect("the listed permissions");
    assert_eq!(listed.len(), 4, "{}", context());
    assert_eq!(&listed[0], asked, "{}", context());

    // The agent's token may not decide, whatever the door: the approval's own 403.
    assert_eq!(permissions["agentReply"]["status"], 403, "{}", context());
    assert_eq!(permissions["agentReply"]["body"]["code"], "forbidden");
    assert_eq!(
        permissions["agentReply"]["body"]["_tag"],
        "PermissionForbiddenError"
    );
    for name in ["once", "always", "reject", "respond"] {
        assert_eq!(permissions["results"][name], true, "{name}; {}", context());
    }
    let again = &permissions["errors"]["replyAgain"];
    assert_eq!(again["status"], 409, "{}", context());
    assert_eq!(again["body"]["_tag"], "PermissionAlreadyResolvedError");
    assert_eq!(again["body"]["requestID"], ids["once"]);
    let unknown = &permissions["errors"]["unknown"];
    assert_eq!(unknown["status"], 404, "{}", context());
    assert_eq!(unknown["body"]["_tag"], "PermissionNotFoundError");

    // askbus's own view: approved, approved, rejected with the message, approved; decided
    // by the admin, never by the agent.
    let statuses = &permissions["statuses"];
    let admin = json!({"name": "admin", "role": "admin"});
    for (name, decision) in [
        ("once", json!({"type": "approve"})),
        ("always", json!({"type": "approve"})),
        (
            "reject",
            json!({"type": "reject", "message": "not on main"}),
        ),
        ("respond", json!({"type": "approve"})),
    ] {
        assert_eq!(statuses[name]["status"], "replied", "{name}; {}", context());
        assert_eq!(statuses[name]["decisions"], json!([decision]), "{name}");
        assert_eq!(statuses[name]["answeredBy"], admin, "{name}");
    }
    // `permission.replied`, which OpenCode clients settle a prompt by.
    for (name, reply) in [
        ("once", "once"),
        ("always", "always"),
        ("reject", "reject"),
        ("respond", "once"),
    ] {
        assert_eq!(
            permissions["replied"][name],
            json!({"sessionID": "ses_permissions", "requestID": ids[name], "reply": reply}),
            "{name}; {}",
            context()
        );
    }
    assert_eq!(permissions["stillListed"], 0, "{}", context());
}

/// A timed-out and an aborted question leave OpenCode clients by `question.rejected`.
fn check_stale_questions(stale: &Value) {
    let context = || format!("node's stale questions: {stale:#}");
    for (name, ended_as, session) in [
        ("timedOut", "timed_out", "ses_stale_timeout"),
        ("cancelled", "cancelled", "ses_stale_abort"),
    ] {
        let ended = &stale[name];
        assert_eq!(
            ended["rejected"],
            json!({"sessionID": session, "requestID": ended["id"], "endedAs": ended_as}),
            "{name}; {}",
            context()
        );
        assert_eq!(
            ended["askbusType"],
            format!("question.{ended_as}"),
            "askbus's own event is there too; {}",
            context()
        );
        assert_eq!(ended["sameId"], true, "the companion has its event's id");
    }
    assert_eq!(stale["aborted"], true, "{}", context());
    // `session.abort` also ends the session's approvals: `permission.replied` `reject`.
    assert_eq!(
        stale["approval"]["replied"]["reply"],
        "reject",
        "{}",
        context()
    );
    assert_eq!(stale["stillListed"], 0, "{}", context());
    assert_eq!(stale["approvalStillListed"], false, "{}", context());
}

/// The v2 client's routes and event stream.
fn check_v2(v2: &Value) {
    let context = || format!("node's v2: {v2:#}");
    let routes = &v2["routes"];
    let ids = &routes["ids"];
    assert_eq!(routes["health"]["healthy"], true, "{}", context());
    assert_eq!(
        routes["questions"],
        json!([
            {"id": ids["reply"], "sessionID": "ses_v2"},
            {"id": ids["reject"], "sessionID": "ses_v2"},
        ]),
        "{}",
        context()
    );
    let permission = &routes["permission"];
    assert_eq!(permission["id"], ids["approval"], "{}", context());
    assert_eq!(permission["action"], "bash");
    assert_eq!(permission["resources"], json!(["npm publish"]));
    assert_eq!(
        permission["source"],
        json!({"type": "tool", "messageID": "", "callID": "call_v2"})
    );
    assert_eq!(routes["permissions"], json!([permission]), "{}", context());
    assert_eq!(
        routes["questionRequests"]["location"]["directory"],
        DIRECTORY
    );
    for id in [&ids["reply"], &ids["reject"]] {
        assert!(
            routes["questionRequests"]["ids"]
                .as_array()
                .is_some_and(|listed| listed.contains(id)),
            "{}",
            context()
        );
    }
    assert!(
        routes["permissionRequests"]["ids"]
            .as_array()
            .is_some_and(|listed| listed.contains(&ids["approval"])),
        "{}",
        context()
    );
    // A request outside the path's session is not found there.
    assert_eq!(routes["wrongSession"]["status"], 404, "{}", context());
    assert_eq!(
        routes["statuses"],
        json!({"reply": 204, "reject": 204, "permission": 204}),
        "{}",
        context()
    );
    assert_eq!(routes["approval"]["status"], "replied");
    assert_eq!(
        routes["approval"]["decisions"],
        json!([{"type": "reject", "message": "not today"}])
    );

    // `/api/event`: `{id, type, data}` frames, the same events and companions.
    assert_eq!(v2["connected"]["type"], "server.connected", "{}", context());
    let log = v2["log"].as_array().expect("the v2 event log");
    for event in log {
        assert_eq!(event["hasData"], true, "{event}");
        assert_eq!(event["hasProperties"], false, "{event}");
    }
    let saw = |kind: &str, id: &Value| {
        log.iter()
            .any(|event| event["type"] == kind && event["requestID"] == *id)
    };
    assert!(saw("question.replied", &ids["reply"]), "{}", context());
    assert!(saw("question.rejected", &ids["reject"]), "{}", context());
    assert!(saw("approval.asked", &ids["approval"]), "{}", context());
    assert!(saw("permission.asked", &ids["approval"]), "{}", context());
    assert!(saw("permission.replied", &ids["approval"]), "{}", context());
}

/// The next stdout line of node, as JSON.
async fn next_json(lines: &mut Lines<BufReader<ChildStdout>>) -> Result<Value, String> {
    let line = lines
        .next_line()
        .await
        .map_err(|error| format!("read node's stdout: {error}"))?
        .ok_or("node closed its stdout early")?;
    serde_json::from_str(&line).map_err(|error| format!("node printed non-JSON ({error}): {line}"))
}

/// Everything `reader` yields, lossily decoded.
async fn read_all(mut reader: impl AsyncRead + Unpin) -> String {
    let mut bytes = Vec::new();
    let _ = reader.read_to_end(&mut bytes).await;
    String::from_utf8_lossy(&bytes).into_owned()
}
