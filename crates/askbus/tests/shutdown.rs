//! The real `askbus` process: configured from its environment, and stopped by SIGTERM or
//! SIGINT with a client still streaming events, it ends the stream and exits 0 promptly
//! (the router's own shutdown of streams and long polls is tested in `tests/http/e2e.rs`).

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::time::Duration;

use futures_util::StreamExt;
use sse_stream::SseStream;
use support::{Server, question};

/// Longer than the server's shutdown grace would ever need, far shorter than a hang.
const PROMPTLY: Duration = Duration::from_secs(10);

#[tokio::test]
async fn sigterm_and_sigint_end_open_streams_and_exit_zero() {
    for signal in ["TERM", "INT"] {
        let server = Server::start("memory").await;
        let http = reqwest::Client::new();
        let created = server.post(&http, "/question", &question("call-1")).await;
        assert_eq!(created.status(), 200);

        let response = http
            .get(format!("{}/event", server.base))
            .send()
            .await
            .unwrap();
        let mut events = SseStream::from_bytes_stream(response.bytes_stream());
        let connected = events.next().await.unwrap().unwrap();
        assert!(connected.data.unwrap().contains("server.connected"));
        let status = tokio::time::timeout(PROMPTLY, server.stop_with(signal))
            .await
            .unwrap_or_else(|_| panic!("SIG{signal}: askbus still running"));
        assert_eq!(status.code(), Some(0), "SIG{signal}: {status}");

        let stream_end = tokio::time::timeout(PROMPTLY, async {
            while let Some(Ok(_)) = events.next().await {}
        })
        .await;
        assert!(stream_end.is_ok(), "SIG{signal}: the event stream ended");
    }
}

#[tokio::test]
async fn every_flag_can_come_from_the_environment() {
    let server = Server::start_with(
        Path::new("."),
        &[],
        &[
            ("ASKBUS_LISTEN", "127.0.0.1:0"),
            ("ASKBUS_STORE", "memory"),
            ("ASKBUS_TOKEN", "env-secret"),
            ("ASKBUS_CORS_ORIGINS", "http://localhost:5173"),
        ],
    )
    .await;
    let http = reqwest::Client::new();
    let url = format!("{}/question", server.base);
    let anonymous = http.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401, "ASKBUS_TOKEN requires a token");
    let allowed = http
        .get(&url)
        .bearer_auth("env-secret")
        .header("origin", "http://localhost:5173")
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), 200);
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "http://localhost:5173",
        "ASKBUS_CORS_ORIGINS allows the origin"
    );
    assert_eq!(server.stop_with("TERM").await.code(), Some(0));
}
