//! `askbus mcp`, the real binary, as MCP clients run it: spawned, one process per client,
//! several in one directory.

#![allow(clippy::unwrap_used)]

// Each test binary uses a part of the support module.
#[allow(dead_code)]
mod support;

use serde_json::json;
use support::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_askbus_mcp_processes_start_in_one_directory() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let first = Server::start_in(dir.path(), &["mcp"]).await;
    let second = Server::start_in(dir.path(), &["mcp"]).await;

    // Each keeps its own requests, in memory.
    let created = first
        .post(&http, "/question", &support::question("call-1"))
        .await;
    assert_eq!(created.status(), 200);
    assert_eq!(
        first
            .get(&http, "/question")
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(second.get(&http, "/question").await, json!([]));
    let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(
        written.is_empty(),
        "nothing is written to the directory: {written:?}"
    );
}
