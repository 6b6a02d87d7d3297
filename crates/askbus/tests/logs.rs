//! What an operator reads: one access line per request, naming the route's template, its
//! status and the request's id (the client's `x-request-id`, echoed back), never a token;
//! no colour codes when the log is not a terminal; JSON lines with `--log-format json`; and
//! the process set up as it says at start (transparent huge pages off).

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::Server;

const TOKEN: &str = "log-test-secret-0123456789abcdef";

/// Asks a question, answers it with the request id `trace-42`, and waits until the reply's
/// access line is logged; every line logged by then.
async fn answer_one(server: &Server) -> Vec<String> {
    let http = reqwest::Client::new();
    let ask = json!({"sessionID": "logs", "questions": [{"question": "Which?", "header": "Pick",
        "options": [{"label": "A", "description": "a"}]}]});
    let created: Value = http
        .post(format!("{}/question", server.base))
        .bearer_auth(TOKEN)
        .json(&ask)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let reply = http
        .post(format!(
            "{}/question/{}/reply",
            server.base,
            created["id"].as_str().unwrap()
        ))
        .bearer_auth(TOKEN)
        .header("x-request-id", "trace-42")
        .json(&json!({"answers": [["A"]]}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    assert_eq!(reply.headers()["x-request-id"], "trace-42");
    let fresh = http
        .get(format!("{}/health", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        fresh.headers()["x-request-id"].len(),
        26,
        "a ULID when the client sent none"
    );
    for _ in 0..100 {
        let lines = server.logged();
        if lines
            .iter()
            .any(|line| line.contains("trace-42") && line.contains("200"))
        {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no access line for the reply: {:?}", server.logged());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_lines_name_the_route_template_and_the_request_id_without_colour() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        "memory",
        "--token",
        TOKEN,
    ];
    // NO_COLOR is not what turns colours off: stderr being a pipe is.
    let server = Server::start_with(dir.path(), &args, &[("NO_COLOR", "")]).await;
    let lines = answer_one(&server).await;
    let reply = lines
        .iter()
        .find(|line| line.contains("trace-42") && line.contains("askbus::access"))
        .unwrap();
    for field in [
        " INFO request{id=trace-42}: askbus::access: ",
        "method=POST",
        "route=/question/{id}/reply",
        "status=200",
    ] {
        assert!(reply.contains(field), "no {field} in {reply}");
    }
    assert!(reply.contains("ms="), "{reply}");
    for line in &lines {
        assert!(!line.contains('\u{1b}'), "a colour code in {line:?}");
        assert!(!line.contains(TOKEN), "the token in {line:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_name_the_request_and_carry_the_access_fields() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        "memory",
        "--token",
        TOKEN,
        "--log-format",
        "json",
    ];
    let server = Server::start_with(dir.path(), &args, &[]).await;
    let lines = answer_one(&server).await;
    let parsed: Vec<Value> = lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect();
    let reply = parsed
        .iter()
        .find(|line| line["target"] == "askbus::access" && line["span"]["id"] == "trace-42")
        .unwrap();
    assert_eq!(reply["span"]["name"], "request");
    assert_eq!(reply["level"], "INFO");
    assert_eq!(reply["fields"]["status"], 200);
    assert_eq!(reply["fields"]["route"], "/question/{id}/reply");
    assert_eq!(reply["fields"]["method"], "POST");
    assert!(reply["fields"]["ms"].as_f64().unwrap() >= 0.0, "{reply}");
    let timestamp = reply["timestamp"].as_str().unwrap();
    // RFC 3339, UTC, with microseconds: 2026-11-28T08:30:00.123456Z.
    let shape: String = timestamp
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    assert_eq!(shape, "9999-99-99T99:99:99.999999Z", "{timestamp}");
}

/// The server turns transparent huge pages off for its own process (its allocator gives
/// memory back and takes it again under load, each huge page zeroed on the way back),
/// unless `MIMALLOC_ALLOW_THP` says otherwise.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transparent_huge_pages_are_off_unless_the_operator_chose() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--listen", "127.0.0.1:0", "--store", "memory"];
    for (choice, enabled) in [(None, "0"), (Some("1"), "1")] {
        let env: Vec<(&str, &str)> = choice
            .map(|choice| ("MIMALLOC_ALLOW_THP", choice))
            .into_iter()
            .collect();
        let server = Server::start_with(dir.path(), &args, &env).await;
        let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
        let line = status
            .lines()
            .find(|line| line.starts_with("THP_enabled:"))
            .unwrap();
        assert_eq!(
            line.split_whitespace().nth(1),
            Some(enabled),
            "{choice:?}: {line}"
        );
    }
}
