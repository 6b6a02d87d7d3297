//! The audit log through the real `askbus` binary: a key from `askbus audit keygen`, a
//! server signing with it over SQLite, answers over HTTP, `askbus audit export`, and
//! `askbus audit verify` passing on the export and failing, naming the entry, on a changed
//! byte; and an acknowledged answer's entry surviving `kill -9`.

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use support::Server;

/// Runs `askbus {args}` in `dir` to its end.
async fn askbus(dir: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_askbus"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .await
        .expect("the askbus binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `GET /audit` until every entry (at least `count`) is sealed; the entries.
async fn sealed_entries(server: &Server, http: &reqwest::Client, count: usize) -> Vec<Value> {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let entries = server.get(http, "/audit").await;
            let entries = entries.as_array().unwrap().clone();
            if entries.len() >= count && entries.iter().all(|entry| entry["hash"].is_string()) {
                return entries;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the server seals its audit entries within 10 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_export_verifies_and_a_changed_byte_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let made = askbus(dir.path(), &["audit", "keygen", "--out", "audit.key"]).await;
    assert!(made.status.success(), "{}", text(&made.stderr));
    assert!(text(&made.stdout).contains("BEGIN PUBLIC KEY"));
    let again = askbus(dir.path(), &["audit", "keygen", "--out", "audit.key"]).await;
    assert!(!again.status.success(), "a key is never overwritten");
    assert!(
        text(&again.stderr).contains("not overwritten"),
        "{}",
        text(&again.stderr)
    );

    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        &store,
        "--audit-key",
        "audit.key",
    ];
    let server = Server::start_with(dir.path(), &args, &[]).await;
    let http = reqwest::Client::new();
    let answered = server.ask(&http, &support::question("call-1")).await;
    let path = format!("/question/{answered}/reply");
    let reply = json!({ "answers": [["Rust"]] });
    assert_eq!(server.post_status(&http, &path, &reply).await, 200);
    let rejected = server.ask(&http, &support::question("call-2")).await;
    let path = format!("/question/{rejected}/reject");
    assert_eq!(server.post_status(&http, &path, &json!({})).await, 200);

    let entries = sealed_entries(&server, &http, 2).await;
    assert_eq!(entries.len(), 2);
    assert!(
        entries.iter().all(|entry| entry["sig"].is_string()),
        "signed"
    );
    let first: Value = serde_json::from_str(entries[0]["draft"].as_str().unwrap()).unwrap();
    assert_eq!(first["request_id"], answered.as_str());
    assert_eq!(first["decision"], json!([["Rust"]]));
    // Without tokens the server's one user asks and decides.
    let local = json!({"name": "local", "role": "admin"});
    assert_eq!((&first["asked_by"], &first["decided_by"]), (&local, &local));
    let status = server.stop_with("TERM").await;
    assert!(status.success());

    let nowhere = askbus(
        dir.path(),
        &["audit", "export", "--store", "sqlite:none.db"],
    )
    .await;
    assert!(!nowhere.status.success());
    assert!(
        text(&nowhere.stderr).contains("no store at none.db"),
        "{}",
        text(&nowhere.stderr)
    );
    assert!(
        !dir.path().join("none.db").exists(),
        "export creates no store"
    );

    let exported = askbus(
        dir.path(),
        &[
            "audit",
            "export",
            "--store",
            &store,
            "--audit-key",
            "audit.key",
        ],
    )
    .await;
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    let export = text(&exported.stdout);
    assert_eq!(export.lines().count(), 2, "{export}");
    std::fs::write(dir.path().join("audit.jsonl"), &export).unwrap();

    let verify = |file: &'static str, key: Option<&'static str>| {
        let mut args = vec!["audit", "verify", file];
        args.extend(key.map(|key| ["--public-key", key]).into_iter().flatten());
        let dir = dir.path().to_owned();
        async move { askbus(&dir, &args).await }
    };
    let passed = verify("audit.jsonl", Some("audit.key.pub")).await;
    assert!(passed.status.success(), "{}", text(&passed.stderr));
    assert!(
        text(&passed.stdout).starts_with("OK: 2 entries, chain intact, 2 signatures verified"),
        "{}",
        text(&passed.stdout)
    );

    // One byte of the second entry: its outcome "rejected" becomes "rejectee".
    let at = export.rfind("rejected").unwrap();
    assert!(at > export.find('\n').unwrap(), "in the second line");
    let mut changed = export.clone().into_bytes();
    changed[at + 7] ^= 1;
    std::fs::write(dir.path().join("changed.jsonl"), &changed).unwrap();
    let failed = verify("changed.jsonl", Some("audit.key.pub")).await;
    assert!(!failed.status.success(), "a changed byte fails");
    let said = text(&failed.stderr);
    assert!(
        said.contains("line 2 (entry 2): its hash does not match"),
        "{said}"
    );

    // Another key's public half: the first entry's signature fails.
    let other = askbus(dir.path(), &["audit", "keygen", "--out", "other.key"]).await;
    assert!(other.status.success());
    let wrong = verify("audit.jsonl", Some("other.key.pub")).await;
    assert!(!wrong.status.success());
    assert!(
        text(&wrong.stderr).contains("line 1 (entry 1)"),
        "{}",
        text(&wrong.stderr)
    );
    // Without a key the chain alone is checked.
    let unkeyed = verify("audit.jsonl", None).await;
    assert!(unkeyed.status.success(), "{}", text(&unkeyed.stderr));
    assert!(text(&unkeyed.stdout).contains("signatures not checked"));
}

/// The receipt is written with the answer, so an answer acknowledged just before `kill -9`
/// has its entry after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_answer_keeps_its_audit_entry_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let http = reqwest::Client::new();
    let server = Server::start(&store).await;
    let id = server.ask(&http, &support::question("call-1")).await;
    let path = format!("/question/{id}/reply");
    let reply = json!({ "answers": [["Go"]] });
    assert_eq!(server.post_status(&http, &path, &reply).await, 200);
    server.kill_9().await;

    let server = Server::start(&store).await;
    let entries = server.get(&http, "/audit").await;
    let entries = entries.as_array().unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["seq"], 1);
    let draft: Value = serde_json::from_str(entries[0]["draft"].as_str().unwrap()).unwrap();
    assert_eq!(draft["request_id"], id.as_str());
    assert_eq!(draft["outcome"], "replied");
    assert_eq!(draft["decision"], json!([["Go"]]));
    // The restarted server seals it.
    let sealed = sealed_entries(&server, &http, 1).await;
    assert_eq!(sealed[0]["prev"], "0".repeat(64));
    server.kill_9().await;
}
