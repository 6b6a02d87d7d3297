//! How long the real `askbus` binary keeps resolved requests and session histories
//! (`--keep-resolved-days`): a request resolved longer ago than that is gone after a
//! restart, together with the idempotent re-ask of its tool call; a recent one, and every
//! pending one, stay. A session's history goes once its newest record is older than that
//! and nothing of it is pending; a session waiting for an answer keeps its history.

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use askbus_store::{SessionEvent, SqliteStore, Store, Write};
use serde_json::{Value, json};
use support::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_deletes_requests_resolved_longer_ago_than_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let store = format!("sqlite:{}", path.display());
    let http = reqwest::Client::new();

    let server = Server::start(&store).await;
    let mut ids = Vec::new();
    for call in ["old", "recent", "pending"] {
        ids.push(server.ask(&http, &support::question(call)).await);
    }
    for id in &ids[..2] {
        let reply = format!("/question/{id}/reply");
        let answered = json!({ "answers": [["eu"]] });
        assert_eq!(server.post_status(&http, &reply, &answered).await, 200);
    }
    assert!(server.stop_with("TERM").await.success());
    // The first answer was given 31 days ago.
    let backdated = month_ago(
        &path,
        &format!(
            "UPDATE requests SET resolved_at_ms = ?1 WHERE id = '{}'",
            ids[0]
        ),
    );
    assert_eq!(backdated, 1);

    let status = |server: &Server, id: &str| {
        let request = http.get(format!("{}/question/{id}", server.base));
        async move { request.send().await.unwrap().status().as_u16() }
    };
    // Kept for good: everything is still there.
    let keeping = Server::start_with(
        dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--store",
            &store,
            "--keep-resolved-days",
            "0",
        ],
        &[],
    )
    .await;
    for id in &ids {
        assert_eq!(status(&keeping, id).await, 200, "{id}");
    }
    assert!(keeping.stop_with("TERM").await.success());

    // The default, 30 days: the month-old answer is gone, the rest stays.
    let server = Server::start(&store).await;
    assert_eq!(status(&server, &ids[0]).await, 404);
    assert_eq!(status(&server, &ids[1]).await, 200);
    let pending = server.get(&http, &format!("/question/{}", ids[2])).await;
    assert_eq!(pending["status"], "pending");
    // Its tool call asks again: a new question, not the forgotten answer.
    let reasked = server.ask(&http, &support::question("old")).await;
    assert_ne!(reasked, ids[0]);
    let recent_again = server.ask(&http, &support::question("recent")).await;
    assert_eq!(recent_again, ids[1]);
    server.kill_9().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_deletes_the_histories_of_sessions_quiet_longer_than_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let store = format!("sqlite:{}", path.display());
    let http = reqwest::Client::new();

    let server = Server::start(&store).await;
    let in_session = |session: &str, call: &str| {
        let mut question = support::question(call);
        question["sessionID"] = json!(session);
        question
    };
    for session in ["quiet", "waiting", "recent"] {
        let step = json!({"type": "user", "text": format!("Hello from {session}")});
        server.step(&http, session, &step).await;
    }
    let answered = server.ask(&http, &in_session("quiet", "call-q")).await;
    let reply = format!("/question/{answered}/reply");
    let answer = json!({"answers": [["eu"]]});
    assert_eq!(server.post_status(&http, &reply, &answer).await, 200);
    server.ask(&http, &in_session("waiting", "call-w")).await;
    assert!(server.stop_with("TERM").await.success());
    // Both sessions last recorded something 31 days ago.
    let backdated = month_ago(
        &path,
        "UPDATE histories SET newest_at_ms = ?1 WHERE session_id IN ('quiet', 'waiting')",
    );
    assert_eq!(backdated, 2);

    let server = Server::start(&store).await;
    for (session, kept) in [("quiet", 0), ("waiting", 2), ("recent", 1)] {
        let history: Value = server
            .get(&http, &format!("/session/{session}/history"))
            .await;
        let messages = history["messages"].as_array().unwrap().len();
        // Quiet with nothing pending: gone; a question waits: kept; recent: kept.
        assert_eq!(messages, kept, "{session}: {history:#}");
    }
    server.kill_9().await;
}

/// The sweep at start-up deletes quiet histories a batch per transaction: a file with
/// 3,000 quiet sessions once made the server commit (and fsync) twice per session, 6,000
/// commits, 8.4 s before it listened instead of 0.13 s. Each commit writes to the WAL, so
/// the server's write calls until it listens count them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_histories_are_swept_a_batch_per_commit() {
    const SESSIONS: usize = 3_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("askbus.db");
    let store = SqliteStore::open(&path).unwrap();
    let steps: Vec<_> = (0..SESSIONS)
        .map(|n| {
            store.write(Write::Event(SessionEvent {
                session_id: format!("session-{n}"),
                event_type: "agent.step".into(),
                properties: r#"{"step":{"type":"user","text":"hi"}}"#.into(),
            }))
        })
        .collect();
    for step in steps {
        step.await.unwrap();
    }
    drop(store);
    let backdated = month_ago(&path, "UPDATE histories SET newest_at_ms = ?1");
    assert_eq!(backdated, SESSIONS);

    let server = Server::start(&format!("sqlite:{}", path.display())).await;
    let writes = server.write_calls();
    eprintln!("{writes} write calls to sweep {SESSIONS} quiet histories and listen");
    assert!(
        writes < 1_000,
        "{writes} write calls: more than one commit per batch"
    );
    let http = reqwest::Client::new();
    let history = server.get(&http, "/session/session-0/history").await;
    assert_eq!(history["messages"], json!([]), "swept");
    server.kill_9().await;
}

/// Runs `update` on the SQLite file at `path`, its `?1` the time 31 days ago in
/// milliseconds (as the store records times); answers how many rows it changed.
fn month_ago(path: &std::path::Path, update: &str) -> usize {
    let month_ago = askbus_store::now_ms() - 31 * 24 * 3600 * 1000;
    rusqlite::Connection::open(path)
        .unwrap()
        .execute(update, rusqlite::params![i64::try_from(month_ago).unwrap()])
        .unwrap()
}
