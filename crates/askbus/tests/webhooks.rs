//! Webhooks from the real binary to a real receiver: every request event delivered, signed
//! so that the Standard Webhooks reference library (`standardwebhooks` on npm, in
//! `tests/webhooks/`, not askbus's code) verifies it, at least once, through a receiver that
//! is down and through a `kill -9` of askbus itself.
//!
//! Needs Node.js 20+ with npm, and the npm registry the first time (or after the lock file
//! changes).

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

// Node.js, `npm ci` and the script driver of the workspace's tests.
#[allow(dead_code)]
#[path = "../../../tests/node.rs"]
mod node;
mod support;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use node::{Script, Steps};
use serde_json::{Value, json};
use support::{Server, question};
use tokio::process::Command;

/// The secret every test signs with: `whsec_` and the base64 of 32 bytes.
const SECRET: &str = "whsec_C2FtcGxlLXNlY3JldC1mb3ItYXNrYnVzLXRlc3RzIQ==";

/// How long every message may take to arrive, retries included.
const DELIVERED_WITHIN: Duration = Duration::from_secs(40);

/// `tests/webhooks`, the npm package of the receiver.
fn package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/webhooks")
}

/// A receiver on `port` (0: any), answering verified deliveries with `status`.
struct Receiver {
    script: Script,
    port: u16,
}

impl Receiver {
    async fn start(port: u16, status: u16) -> Self {
        let mut command = Command::new("node");
        command
            .arg("receiver.mjs")
            .arg(port.to_string())
            .arg(SECRET)
            .arg(status.to_string())
            .current_dir(package());
        let mut script =
            Script::spawn(command, &package(), "standardwebhooks", Steps::OnStdout).await;
        let listening = script.stage("listening").await;
        let port = u16::try_from(listening["port"].as_u64().unwrap()).unwrap();
        Self { script, port }
    }

    /// The next verified delivery (a delivery that fails verification fails the test).
    async fn delivery(&mut self) -> Value {
        self.script.stage("delivery").await
    }

    /// Deliveries until `wanted` messages not among `known` arrived at `path` (each at
    /// least once: a message delivered again, as at-least-once allows, counts once);
    /// answers them by message id.
    async fn until(
        &mut self,
        wanted: usize,
        path: &str,
        known: &HashMap<String, Value>,
    ) -> HashMap<String, Value> {
        let mut seen = HashMap::new();
        tokio::time::timeout(DELIVERED_WITHIN, async {
            while seen.len() < wanted {
                let delivery = self.delivery().await;
                let id = delivery["id"].as_str().unwrap().to_owned();
                if delivery["path"] == path && !known.contains_key(&id) {
                    seen.insert(id, delivery);
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{} of {wanted} messages arrived", seen.len()));
        seen
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// `askbus --store memory` on loopback, signing with [`SECRET`], with `webhooks` (the
/// `--webhook` flags).
async fn in_memory(webhooks: &[&str]) -> Server {
    let mut args = vec![
        "--listen",
        "127.0.0.1:0",
        "--store",
        "memory",
        "--webhook-secret",
        SECRET,
    ];
    args.extend_from_slice(webhooks);
    Server::start_with(Path::new("."), &args, &[]).await
}

/// A loopback port nothing listens on (for now).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_arrives_verified_and_a_recipient_s_link_answers() {
    let mut receiver = Receiver::start(0, 204).await;
    let (all, local) = (receiver.url("/all"), receiver.url("/local"));
    let recipient = format!("local={local}");
    let server = in_memory(&["--webhook", &all, "--webhook", &recipient]).await;
    let http = reqwest::Client::new();
    let id = server.ask(&http, &question("call-1")).await;

    let mut asked = Vec::new();
    while asked.len() < 2 {
        asked.push(receiver.delivery().await);
    }
    asked.sort_by_key(|delivery| delivery["path"].as_str().unwrap().to_owned());
    let [to_all, to_local] = &asked[..] else {
        unreachable!()
    };
    assert_eq!(
        (&to_all["path"], &to_local["path"]),
        (&json!("/all"), &json!("/local"))
    );
    for delivery in &asked {
        assert_eq!(delivery["type"], "question.asked");
        assert_eq!(delivery["data"]["id"], id.as_str());
        assert_eq!(
            delivery["data"]["questions"][0]["question"],
            "Which region?"
        );
    }
    // One message, two deliveries: the same `webhook-id`, for the receiver to deduplicate.
    assert_eq!(to_all["id"], to_local["id"]);
    assert!(to_all["id"].as_str().unwrap().starts_with("msg_"));
    // Only the recipient's target holds a link, and it answers as the recipient.
    assert!(to_all["data"].get("answer_url").is_none());
    let link = to_local["data"]["answer_url"].as_str().unwrap();
    assert!(
        link.starts_with(&format!("{}/answer/", server.base)),
        "{link}"
    );
    let answered = http
        .post(link)
        .json(&json!({"answers": [["eu"]]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);

    let mut replied = Vec::new();
    while replied.len() < 2 {
        replied.push(receiver.delivery().await);
    }
    for delivery in &replied {
        assert_eq!(delivery["type"], "question.replied");
        assert_eq!(delivery["data"]["requestID"], id.as_str());
        assert_eq!(delivery["data"]["answers"], json!([["eu"]]));
        assert_eq!(delivery["data"]["answeredBy"]["name"], "local");
    }
    // Every delivery is listed as delivered (once its attempt is recorded, just after the
    // receiver answered), with that attempt.
    let listed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let listed = server.get(&http, "/webhook/deliveries").await;
            if listed
                .as_array()
                .unwrap()
                .iter()
                .all(|delivery| delivery["state"] == "delivered")
            {
                return listed;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("every delivery is recorded as delivered");
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 4, "{listed:?}");
    for delivery in listed {
        assert_eq!(delivery["attempts"], 1, "{delivery}");
        assert_eq!(delivery["last_attempt"]["status"], 204);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_killed_mid_stream_gets_every_message_once_back() {
    let mut receiver = Receiver::start(0, 204).await;
    let port = receiver.port;
    let url = receiver.url("/hook");
    let server = in_memory(&["--webhook", &url]).await;
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for call in 0..10 {
        ids.push(server.ask(&http, &question(&format!("call-{call}"))).await);
    }
    let mut arrived = receiver.until(10, "/hook", &HashMap::new()).await;
    // The receiver dies; the agents go on asking and the humans answering.
    receiver.script.child.kill().await.unwrap();
    for call in 10..20 {
        ids.push(server.ask(&http, &question(&format!("call-{call}"))).await);
    }
    for id in &ids[..10] {
        let path = format!("/question/{id}/reply");
        let status = server
            .post_status(&http, &path, &json!({"answers": [["us"]]}))
            .await;
        assert_eq!(status, 200);
    }
    // Attempts fail and are listed as such; nothing is lost.
    let failed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let pending = server.get(&http, "/webhook/deliveries?state=pending").await;
            let error = pending.as_array().unwrap().iter().find_map(|delivery| {
                delivery["last_attempt"]["error"]
                    .as_str()
                    .map(str::to_owned)
            });
            if let Some(error) = error {
                return error;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("failed attempts are listed");
    assert!(
        failed.contains("refused") || failed.contains("connect"),
        "{failed}"
    );

    let mut receiver = Receiver::start(port, 204).await;
    let rest = receiver.until(20, "/hook", &arrived).await;
    arrived.extend(rest);
    let asked: BTreeSet<&str> = arrived
        .values()
        .filter(|delivery| delivery["type"] == "question.asked")
        .map(|delivery| delivery["data"]["id"].as_str().unwrap())
        .collect();
    let replied: BTreeSet<&str> = arrived
        .values()
        .filter(|delivery| delivery["type"] == "question.replied")
        .map(|delivery| delivery["data"]["requestID"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ids.iter().map(String::as_str).collect());
    assert_eq!(replied, ids[..10].iter().map(String::as_str).collect());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_in_a_webhook_s_path_is_in_no_log_line_and_no_listing() {
    // A Slack-style URL, whose path is the receiver's secret; nothing listens there, so
    // its attempts fail, and are listed and logged under the webhook's name.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/services/T0/B0/path-secret-7f3k");
    let server = in_memory(&["--webhook", &url]).await;
    let http = reqwest::Client::new();
    server.ask(&http, &question("call-1")).await;
    let listed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let deliveries = server.get(&http, "/webhook/deliveries").await;
            let attempted = deliveries.as_array().unwrap().iter().any(|delivery| {
                delivery["attempts"].as_u64() > Some(0) && delivery["last_attempt"].is_object()
            });
            if attempted {
                return deliveries;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the failed attempt is listed");
    let name = listed[0]["target"].as_str().unwrap().to_owned();
    assert!(
        name.starts_with(&format!("http://127.0.0.1:{port}/...")),
        "{name}"
    );
    assert!(!listed.to_string().contains("path-secret"), "{listed}");
    let logged = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let logged = server.logged();
            if logged
                .iter()
                .any(|line| line.contains("failed (attempt 1)"))
            {
                return logged;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the failed attempt is logged");
    assert!(
        logged
            .iter()
            .any(|line| line.contains(&format!("delivering every request event to webhook {name}"))),
        "the start-up line names the webhook: {logged:#?}"
    );
    assert!(
        logged.iter().all(|line| !line.contains("path-secret")),
        "{logged:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_queue_loses_no_delivery() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/hook");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        &store,
        "--webhook",
        &url,
        "--webhook-secret",
        SECRET,
    ];
    let server = Server::start_with(dir.path(), &args, &[]).await;
    let http = reqwest::Client::new();
    let mut ids = BTreeSet::new();
    for call in 0..15 {
        ids.insert(server.ask(&http, &question(&format!("call-{call}"))).await);
    }
    // Acknowledged (200) while the receiver is down, then killed with the queue full.
    server.kill_9().await;

    let mut receiver = Receiver::start(port, 204).await;
    let server = Server::start_with(dir.path(), &args, &[]).await;
    let arrived = receiver.until(15, "/hook", &HashMap::new()).await;
    let asked: BTreeSet<String> = arrived
        .values()
        .map(|delivery| delivery["data"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(asked, ids);
    drop(server);
}
