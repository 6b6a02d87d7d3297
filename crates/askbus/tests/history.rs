//! Session histories over the real `askbus` binary on SQLite: a session's history (steps, a
//! question answered, an approval pending) reads the same before and after a restart, its
//! cursor included, and a stream resumed after that cursor goes on across the restart; and
//! reading a flooded session's history does not hold up anyone's writes.

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use sse_stream::SseStream;
use support::{Server, TestPrefix};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_servers_history_is_the_same_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let http = reqwest::Client::new();
    let server = Server::start(&store).await;
    for step in [
        json!({"type": "user", "text": "Clean up the database"}),
        json!({"type": "tool_use", "id": "tc-1", "name": "count_rows", "input": {"table": "tmp"}}),
        json!({"type": "tool_result", "tool_use_id": "tc-1", "name": "count_rows", "content": "1,234 rows"}),
    ] {
        server.step(&http, "agent", &step).await;
    }
    let question = server.ask(&http, &support::question("call-1")).await;
    let answer = json!({"answers": [["eu"]]});
    let path = format!("/question/{question}/reply");
    assert_eq!(server.post_status(&http, &path, &answer).await, 200);
    let approval = json!({"session_id": "agent", "action_requests": [
        {"name": "delete_rows", "args": {"table": "tmp"}, "tool_use_id": "toolu_1"}
    ]});
    assert_eq!(server.post_status(&http, "/approval", &approval).await, 200);

    let before = server.get(&http, "/session/agent/history").await;
    let parts: Vec<&Value> = before["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| {
            let part = &message["content"][0];
            (part["type"] == "approval_request").then_some(part)
        })
        .collect();
    assert_eq!(parts.len(), 2, "{before:#}");
    assert_eq!(parts[0]["submittedAnswers"], json!({"Which region?": "eu"}));
    assert_eq!(parts[1]["isResolved"], false, "the approval waits");

    assert!(server.stop_with("TERM").await.success());
    let server = Server::start(&store).await;
    let after = server.get(&http, "/session/agent/history").await;
    assert_eq!(after, before, "the same history, the same cursor");

    // A client that loaded the history before the restart resumes after its cursor.
    let cursor = before["last_event_id"].as_str().unwrap();
    let response = http
        .get(format!("{}/session/agent/stream", server.base))
        .header("last-event-id", cursor)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut frames = SseStream::from_bytes_stream(response.bytes_stream());
    let text = json!({"type": "text", "text": "Waiting for the approval."});
    server.step(&http, "agent", &text).await;
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let item = frames.next().await.unwrap().unwrap();
                if let Some(data) = item.data {
                    return serde_json::from_str::<Value>(&data).unwrap();
                }
            }
        })
        .await
        .expect("a frame within 10 s")
    };
    // The text closes the group the approval is in, then opens its own block.
    let closed = next().await;
    assert_eq!(closed["type"], "group_end", "{closed}");
    assert_eq!(closed["summary"], "Delete rows");
    let text = next().await;
    assert_eq!(text["type"], "content_block_start", "{text}");
    assert_eq!(text["content_block"]["type"], "text");
    server.kill_9().await;
}

/// History reads do not hold up writes, on SQLite or Redis: while 10 clients read the
/// history of a flooded session (1,000 steps of 64 KB kept, `--max-history-mib 128`) and 30
/// more ask for it and go away at once, the steps of another session are acknowledged in
/// less than a fifth of the time the reads take, at least 10 of them (about 1 ms each
/// without the reads). Such a step once waited up to 9.9 s on SQLite (11 s here), 33.6 s on Redis:
/// every history read ran on the store's one writer, whole, those of clients gone
/// included, and was folded on the threads that answer every request. (One test, the
/// stores one after the other: two floods at once would measure each other.) The reads
/// themselves take as long as the machine needs (on a loaded one, the last of them waited
/// over 30 s for its turn and got `408` while history reads had a request timeout: they
/// hold a stream slot instead), so only the steps are timed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_reads_do_not_hold_up_the_writes_of_other_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let redis = TestPrefix::new();
    let sqlite = format!("sqlite:{}", dir.path().join("askbus.db").display());
    for store in [sqlite, redis.store()] {
        let args = [
            "--listen",
            "127.0.0.1:0",
            "--store",
            &store,
            "--max-history-mib",
            "128",
        ];
        let server = Server::start_with(dir.path(), &args, &[]).await;
        let during = steps_while_a_flood_is_read(&server).await;
        // Relative to the reads, not to a clock: a loaded machine slows both alike, while a
        // step held up until the reads end (as it once was) takes as long as they do.
        assert!(
            during.steps >= 10 && during.slowest * 5 < during.reads,
            "{store}: {during:?}: the steps of another session were held up while a flooded \
             history was read"
        );
        server.kill_9().await;
    }
}

/// The steps of another session acknowledged while clients read a flooded history.
#[derive(Debug)]
struct StepsDuringReads {
    /// How many were acknowledged before the last read ended.
    steps: usize,
    /// How long the slowest of them took.
    slowest: Duration,
    /// How long the reads took, from the first request to the last answer.
    reads: Duration,
}

/// Floods a session of `server`, has 10 clients read its history and 30 ask for it and go
/// away; answers how the steps of another session fared meanwhile.
async fn steps_while_a_flood_is_read(server: &Server) -> StepsDuringReads {
    let http = reqwest::Client::new();
    server.flood(&http, "flood").await;
    let reads_started = Instant::now();
    let url = format!("{}/session/flood/history", server.base);
    let readers: Vec<_> = (0..10)
        .map(|_| {
            let request = http.get(&url).send();
            // Read back once the steps are done: parsing here would hold up this test's
            // own steps.
            tokio::spawn(async move { request.await?.bytes().await })
        })
        .collect();
    for _ in 0..30 {
        drop(server.request_on_socket("/session/flood/history"));
    }
    let step = json!({"type": "text", "text": "still here"});
    let mut slowest = Duration::ZERO;
    let mut steps = 0;
    while !readers.iter().all(tokio::task::JoinHandle::is_finished) {
        let started = Instant::now();
        server.step(&http, "other", &step).await;
        slowest = slowest.max(started.elapsed());
        steps += 1;
    }
    let reads = reads_started.elapsed();
    eprintln!("the slowest of {steps} steps during 10 history reads ({reads:?}) took {slowest:?}");
    for reader in readers {
        let history: Value = serde_json::from_slice(&reader.await.unwrap().unwrap()).unwrap();
        let kept = history["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("{history}"))
            .len();
        assert!((1_000..=1_125).contains(&kept), "{kept} messages");
    }
    StepsDuringReads {
        steps,
        slowest,
        reads,
    }
}
