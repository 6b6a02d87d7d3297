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
