//! Pages of other sites, in Debian's chromium, against the real `askbus` binary on its
//! defaults (loopback, no token): a DNS-rebinding page and a cross-site page fire every
//! request a browser lets them, and nothing is read, answered, approved or cancelled; the
//! server's own page still answers; and markup in every field an agent fills shows as
//! text in the web UI even with its CSP bypassed.
//!
//! The pages are `tests/ui/sites.mjs` (playwright-core, pinned in `tests/ui/`). Needs
//! Node.js 20+ with npm, the npm registry the first time, and the `chromium` Debian package
//! (`cargo xtask ci` installs it).

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

// Node.js, `npm ci` and the script driver of the workspace's tests.
#[allow(dead_code)]
#[path = "../../../tests/node.rs"]
mod node;
mod support;

use std::path::Path;

use node::{Script, Steps};
use serde_json::{Value, json};
use support::Server;
use tokio::process::Command;

/// Markup an agent might put in any field: it must show as text, and never run.
const PAYLOAD: &str = "<svg onload=window.__pwned=1>";

/// `text` as one URL path segment.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(byte).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_other_sites_can_neither_read_nor_change_anything() {
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "/usr/bin/chromium is missing: `cargo xtask ci` installs it; by hand: `sudo apt-get install -y chromium`"
    );
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("askbus.db").display());
    let server = Server::start(&store).await;
    let http = reqwest::Client::new();
    let mut question = support::question("call-1");
    question["sessionID"] = json!("demo");
    let question = server.ask(&http, &question).await;
    let approval = server
        .post(
            &http,
            "/approval",
            &json!({"session_id": "demo", "action_requests": [{"name": "delete_db", "args": {"db": "production"}}]}),
        )
        .await
        .json::<Value>()
        .await
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Markup in every field an agent fills, in a session of its own.
    let session = format!("s{PAYLOAD}");
    let markup_question = json!({
        "sessionID": session,
        "questions": [{
            "question": format!("Which? {PAYLOAD}"),
            "header": PAYLOAD,
            "options": [{"label": PAYLOAD, "description": format!("d{PAYLOAD}")}],
        }],
        "timeout": null,
    });
    server.ask(&http, &markup_question).await;
    let markup_approval = json!({"session_id": session, "action_requests": [{
        "name": PAYLOAD,
        "args": {"path": PAYLOAD, PAYLOAD: 1},
        "description": format!("Delete {PAYLOAD}"),
    }]});
    assert_eq!(
        server
            .post_status(&http, "/approval", &markup_approval)
            .await,
        200
    );
    let step_path = format!("/session/{}/step", urlencode(&session));
    for step in [
        json!({"type": "user", "text": PAYLOAD}),
        json!({"type": "thinking", "thinking": PAYLOAD}),
        json!({"type": "tool_use", "id": "t1", "name": PAYLOAD, "input": {"q": PAYLOAD}, "tool_content_message": PAYLOAD}),
        json!({"type": "tool_result", "tool_use_id": "t1", "name": PAYLOAD, "content": PAYLOAD}),
        json!({"type": "text", "text": format!("{PAYLOAD} payload-end")}),
    ] {
        assert_eq!(
            server.post_status(&http, &step_path, &step).await,
            200,
            "{step}"
        );
    }

    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ui");
    let mut command = Command::new("node");
    command
        .arg("sites.mjs")
        .current_dir(&package)
        .env("ASKBUS_URL", &server.base)
        .env("ASKBUS_QUESTION", &question)
        .env("ASKBUS_APPROVAL", &approval)
        .env("ASKBUS_PAYLOAD_SESSION", &session)
        .env("ASKBUS_PAYLOAD", PAYLOAD);
    let mut script = Script::spawn(command, &package, "playwright-core", Steps::OnStdout).await;
    let rebinding = script.stage("rebinding").await;
    assert_eq!(rebinding["refused"], 5);
    script.stage("cross_site").await;
    let own = script.stage("own_page").await;
    assert_eq!(own["answered"], 200);
    script.stage("payloads").await;
    script.stage("done").await;
    script.finish().await;

    // Nothing the other sites sent took effect; the own page's answer did.
    let approval = server.get(&http, &format!("/approval/{approval}")).await;
    assert_eq!(approval["status"], "pending", "{approval}");
    let question = server.get(&http, &format!("/question/{question}")).await;
    assert_eq!(question["status"], "replied", "{question}");
    assert_eq!(question["answers"], json!([["eu"]]));
}
