//! The adversarial suite: the real `askbus` binary on its defaults (loopback, no token,
//! SQLite) against an attacker and a careless client. Each test is a probe that once got
//! through, or one that must keep failing to get through.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use support::Server;

/// A server on a fresh SQLite file, as `cargo run --release` runs it.
async fn server() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    (Server::start(&store).await, dir)
}

/// An approval of `delete_db` with `args`, from the agent's tool call `toolu_1`.
fn delete_db(args: Value) -> Value {
    json!({"session_id": "agent", "action_requests": [
        {"name": "delete_db", "args": args, "tool_use_id": "toolu_1"}
    ]})
}

#[tokio::test]
async fn an_approval_is_never_reused_for_arguments_the_human_did_not_see() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let approved = server
        .post(&http, "/approval", &delete_db(json!({"db": "staging"})))
        .await;
    let id = approved.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = json!({"decisions": [{"type": "approve"}]});
    assert_eq!(
        server
            .post_status(&http, &format!("/approval/{id}/reply"), &reply)
            .await,
        200
    );

    let reused = server
        .post(&http, "/approval", &delete_db(json!({"db": "production"})))
        .await;
    assert_eq!(reused.status(), 409);
    let error: Value = reused.json().await.unwrap();
    assert_eq!(error["code"], "call_id_reused");
    assert!(
        error["message"].as_str().unwrap().contains("toolu_1"),
        "{error}"
    );

    // A question from a reused tool call with another question gets no old answer either.
    let ask = |question: &str| {
        json!({"sessionID": "agent", "tool": {"messageID": "m", "callID": "call_1"},
               "questions": [{"question": question, "header": "Go",
                              "options": [{"label": "Yes", "description": ""}]}]})
    };
    let first = server.ask(&http, &ask("Drop the staging tables?")).await;
    let answer = json!({"answers": [["Yes"]]});
    assert_eq!(
        server
            .post_status(&http, &format!("/question/{first}/reply"), &answer)
            .await,
        200
    );
    assert_eq!(
        server
            .post_status(&http, "/question", &ask("Drop the production tables?"))
            .await,
        409
    );
    // The same content is the same request: a retry gets its outcome.
    assert_eq!(
        server.ask(&http, &ask("Drop the staging tables?")).await,
        first
    );
}

#[tokio::test]
async fn one_edit_is_never_copied_over_other_actions() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let created = server
        .post(
            &http,
            "/approval",
            &json!({"session_id": "agent", "action_requests": [
                {"name": "delete_rows", "args": {"table": "tmp"}},
                {"name": "send_email", "args": {"to": "boss"}},
            ]}),
        )
        .await;
    let id = created.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lone_edit = json!({"decisions": [
        {"type": "edit", "edited_action": {"name": "delete_rows", "args": {"table": "users"}}}
    ]});
    let path = format!("/approval/{id}/reply");
    assert_eq!(server.post_status(&http, &path, &lone_edit).await, 422);
    let status = server.get(&http, &format!("/approval/{id}")).await;
    assert_eq!(status["status"], "pending", "nothing was decided: {status}");
}

/// Posts `count` steps of `session`, `parallel` at a time, each `{"type": "thinking"}` with
/// `text` and its number; each must be recorded.
async fn post_steps(
    server: &Server,
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
            let (server, http, path) = (server, http, &path);
            async move { server.post_status(http, path, &step).await }
        });
        for status in futures_util::future::join_all(batch).await {
            assert_eq!(status, 200);
        }
        started = count.min(started + parallel);
    }
}

/// A session nobody reads while more events than the bus keeps (4,096) go by in other
/// sessions still has its whole history, pending question included: the web UI once said
/// "Nothing recorded for this session yet" beside that question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_unread_while_thousands_of_events_go_by_keeps_its_history() {
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let step = json!({"type": "user", "text": "Clean up the disk"});
    server.step(&http, "quiet", &step).await;
    let mut question = support::question("call-quiet");
    question["sessionID"] = json!("quiet");
    let id = server.ask(&http, &question).await;
    post_steps(&server, &http, "busy", 4_200, 32, "noise").await;

    let history = server.get(&http, "/session/quiet/history").await;
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{history:#}");
    assert_eq!(messages[0]["content"][0]["text"], "Clean up the disk");
    let part = &messages[1]["content"][0];
    assert_eq!(part["approval_key"], id.as_str());
    assert_eq!(part["isResolved"], false);
}

/// Big steps are kept in the store, not in the server's memory: after 2,000 steps of 60 KB
/// (117 MiB) posted to one session, the server holds no more than the bus's replay window
/// (the newest 4,096 events, here every step) and 48 MiB besides; it once also kept every
/// transcript whole, about three times what was posted, for good. Reading the history
/// folds at most the session's newest 1,000 records (about 1/8 more before a trim).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_steps_are_not_kept_in_memory() {
    const STEPS: usize = 2_000;
    const STEP_BYTES: usize = 60 * 1024;
    let (server, _dir) = server().await;
    let http = reqwest::Client::new();
    let big = "x".repeat(STEP_BYTES);
    post_steps(&server, &http, "warm-up", 16, 8, &big).await;
    let before = server.resident_kib();
    post_steps(&server, &http, "flood", STEPS, 8, &big).await;
    let after = server.resident_kib();
    let posted_kib = u64::try_from(STEPS * STEP_BYTES / 1024).unwrap();
    eprintln!("resident: {before} KiB before, {after} KiB after {STEPS} steps of 60 KB");
    assert!(
        after.saturating_sub(before) < posted_kib + 48 * 1024,
        "resident memory grew from {before} KiB to {after} KiB"
    );
    let history = server.get(&http, "/session/flood/history").await;
    let kept = history["messages"].as_array().unwrap().len();
    assert!((1_000..=1_125).contains(&kept), "{kept} messages");
}
