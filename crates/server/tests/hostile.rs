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

/// `POST /question` in `session`, from no tool call.
fn ask_in(session: &str) -> Value {
    json!({"sessionID": session, "timeout": null, "questions": [
        {"question": "Go on?", "header": "Go", "options": [{"label": "Yes", "description": ""}]}
    ]})
}

/// `count` creates in `session`, 32 at a time; the statuses, and one refusal's
/// `Retry-After` and body.
async fn flood(
    server: &Server,
    http: &reqwest::Client,
    session: &str,
    count: usize,
) -> (Vec<u16>, Option<(String, Value)>) {
    use futures_util::StreamExt;
    let body = ask_in(session);
    let responses: Vec<reqwest::Response> = futures_util::stream::iter(0..count)
        .map(|_| server.post(http, "/question", &body))
        .buffer_unordered(32)
        .collect()
        .await;
    let statuses = responses.iter().map(|r| r.status().as_u16()).collect();
    let mut refusal = None;
    for response in responses {
        if response.status() == 429 && refusal.is_none() {
            let retry = response.headers()["retry-after"]
                .to_str()
                .unwrap()
                .to_owned();
            refusal = Some((retry, response.json().await.unwrap()));
        }
    }
    (statuses, refusal)
}

/// A runaway agent that creates questions without end is refused once its session holds
/// 1,000 (the default), with 429 `quota` and `Retry-After`; other sessions, `/health` and
/// replies go on, and an answer frees a slot. The server's total is capped the same way.
#[tokio::test]
async fn a_flood_of_creates_is_refused_at_the_pending_limits() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let server = Server::start_with(
        dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--store",
            &store,
            "--max-pending",
            "1500",
        ],
        &[],
    )
    .await;
    let http = reqwest::Client::new();

    let (statuses, refusal) = flood(&server, &http, "runaway", 1_050).await;
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 1_000);
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 50);
    let (retry, body) = refusal.unwrap();
    assert_eq!(retry, "30");
    assert_eq!(body["code"], "quota");
    assert!(
        body["message"].as_str().unwrap().contains("\"runaway\""),
        "{body}"
    );

    // The server's total: 500 more fit, in another session, then nothing.
    let (statuses, refusal) = flood(&server, &http, "other", 510).await;
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 500);
    let (_, body) = refusal.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("1500 requests"),
        "{body}"
    );

    // What does not create still works, and an answer makes room.
    assert_eq!(server.get(&http, "/health").await["healthy"], true);
    let pending = server.get(&http, "/question?sessionID=runaway").await;
    assert_eq!(pending.as_array().unwrap().len(), 1_000);
    let id = pending[0]["id"].as_str().unwrap();
    let answer = json!({"answers": [["Yes"]]});
    let path = format!("/question/{id}/reply");
    assert_eq!(server.post_status(&http, &path, &answer).await, 200);
    assert_eq!(
        server
            .post_status(&http, "/question", &ask_in("runaway"))
            .await,
        200
    );
}

/// Streams opened until refused: with the open-files limit at 1,024 (hard 2,048), the
/// server raises it to 2,048 and holds at most 1,536 streams, then answers 503
/// `too_many_streams` with `Retry-After`, while `/health`, a reply and the streams already
/// open go on; closed streams free their slots. (Without the cap, streams took every file
/// descriptor and `/health` stopped answering.)
#[tokio::test]
async fn a_flood_of_event_streams_is_refused_before_the_files_run_out() {
    // This process holds as many connections as the server, plus a few.
    rlimit::increase_nofile_limit(4_096).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let args = ["--listen", "127.0.0.1:0", "--store", store.as_str()];
    let server = Server::start_with_open_files(dir.path(), &args, 1_024, 2_048).await;
    let http = reqwest::Client::new();
    let id = server.ask(&http, &ask_in("agent")).await;

    let url = format!("{}/event", server.base);
    let mut open = Vec::new();
    let refused = loop {
        let response = http.get(&url).send().await.unwrap();
        if response.status() != 200 {
            break response;
        }
        open.push(response);
        assert!(open.len() <= 2_048, "no cap below the file limit");
    };
    assert_eq!(open.len(), askbus_server::event_streams_for(2_048));
    assert_eq!(open.len(), 1_536);
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "10");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "too_many_streams");

    assert_eq!(server.get(&http, "/health").await["healthy"], true);
    let answer = json!({"answers": [["Yes"]]});
    let path = format!("/question/{id}/reply");
    assert_eq!(server.post_status(&http, &path, &answer).await, 200);
    let mut seen = String::new();
    while !seen.contains("question.replied") {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), open[0].chunk())
            .await
            .expect("the open stream carries the reply")
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }

    // Ten clients leave: ten new streams get in (once the server saw them go).
    open.truncate(open.len() - 10);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut reopened = 0;
    while reopened < 10 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "slots came back: {reopened}"
        );
        let response = http.get(&url).send().await.unwrap();
        if response.status() == 200 {
            open.push(response);
            reopened += 1;
        } else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}
