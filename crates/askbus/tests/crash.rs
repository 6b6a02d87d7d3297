//! `kill -9` of the real `askbus` binary while questions are pending and replies are in
//! flight, then a restart on the same SQLite file: every acknowledged answer (HTTP 200) is
//! still there, nothing resolved twice or otherwise, and agents that ask again from the
//! same tool call get the stored outcome.

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use support::Server;

/// How many questions the agent asks before the crash.
const QUESTIONS: usize = 300;
/// How many of them are answered (and acknowledged) before the replies that race the kill.
const ANSWERED_FIRST: usize = 10;
/// The kill comes once this many of the racing replies were acknowledged.
const ACKED_BEFORE_KILL: usize = 10;

/// The question of the agent's tool call number `call`.
fn question(call: usize) -> Value {
    support::question(&format!("call-{call}"))
}

/// The one answer question `index` ever gets: custom text naming it.
fn answer(index: usize) -> Value {
    json!([[format!("answer-{index}")]])
}

async fn post(
    http: &reqwest::Client,
    url: String,
    body: &Value,
) -> reqwest::Result<reqwest::Response> {
    http.post(url).json(body).send().await
}

/// Posts question `index`'s one answer; returns the status.
async fn answer_over_http(server: &Server, http: &reqwest::Client, index: usize, id: &str) -> u16 {
    let body = json!({ "answers": answer(index) });
    let path = format!("/question/{id}/reply");
    server.post_status(http, &path, &body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_answers_survive_kill_9_and_nothing_resolves_twice() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let http = reqwest::Client::new();

    let server = Server::start(&store).await;
    let mut ids = Vec::new();
    for call in 0..QUESTIONS {
        ids.push(server.ask(&http, &question(call)).await);
    }
    for (index, id) in ids.iter().enumerate().take(ANSWERED_FIRST) {
        assert_eq!(answer_over_http(&server, &http, index, id).await, 200);
    }

    // Every other question gets its reply at once, racing a kill -9.
    let acked = Arc::new(AtomicUsize::new(0));
    let racing: Vec<_> = ids
        .iter()
        .enumerate()
        .skip(ANSWERED_FIRST)
        .map(|(index, id)| {
            let (http, acked) = (http.clone(), Arc::clone(&acked));
            let url = format!("{}/question/{id}/reply", server.base);
            tokio::spawn(async move {
                let replied = post(&http, url, &json!({ "answers": answer(index) })).await;
                let ok = replied.is_ok_and(|response| response.status() == 200);
                if ok {
                    acked.fetch_add(1, Ordering::SeqCst);
                }
                (index, ok)
            })
        })
        .collect();
    tokio::time::timeout(Duration::from_secs(30), async {
        while acked.load(Ordering::SeqCst) < ACKED_BEFORE_KILL {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("some replies are acknowledged");
    server.kill_9().await;
    let mut acknowledged: Vec<usize> = (0..ANSWERED_FIRST).collect();
    for reply in racing {
        let (index, ok) = reply.await.unwrap();
        if ok {
            acknowledged.push(index);
        }
    }
    let in_flight = QUESTIONS - acknowledged.len();
    eprintln!(
        "crash: {} answers acknowledged, {in_flight} not",
        acknowledged.len()
    );

    let server = Server::start(&store).await;
    let mut still_pending = Vec::new();
    for (index, id) in ids.iter().enumerate() {
        let got = server.get(&http, &format!("/question/{id}")).await;
        match got["status"].as_str().unwrap() {
            "replied" => assert_eq!(got["answers"], answer(index), "{id} has its own answer"),
            "pending" => {
                assert!(
                    !acknowledged.contains(&index),
                    "acknowledged {id} was lost: {got}"
                );
                still_pending.push((index, id));
            }
            other => panic!("{id} ended {other}, which nobody asked for: {got}"),
        }
    }

    // An acknowledged answer is final: a second one is refused.
    let reply = format!("/question/{}/reply", ids[0]);
    let again = server
        .post(&http, &reply, &json!({ "answers": [["us"]] }))
        .await;
    assert_eq!(again.status(), 409);

    // The agent re-asks from the same tool calls: the same requests, no second prompt.
    let reasked = server.ask(&http, &question(0)).await;
    assert_eq!(reasked, ids[0]);
    let outcome = server
        .get(&http, &format!("/question/{}/wait?timeout=5", ids[0]))
        .await;
    assert_eq!(outcome["status"], "replied");
    assert_eq!(outcome["answers"], answer(0));

    // What was still pending is answered now, once.
    let listed = server.get(&http, "/question").await;
    assert_eq!(listed.as_array().unwrap().len(), still_pending.len());
    for (index, id) in still_pending {
        let reasked = server.ask(&http, &question(index)).await;
        assert_eq!(reasked, *id, "a pending request is joined, not repeated");
        assert_eq!(answer_over_http(&server, &http, index, id).await, 200);
    }
    server.kill_9().await;
}
