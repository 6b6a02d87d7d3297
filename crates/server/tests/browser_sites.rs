//! Pages of other sites, in Debian's chromium, against the real `askbus` binary on its
//! defaults (loopback, no token): a DNS-rebinding page and a cross-site page fire every
//! request a browser lets them, and nothing is read, answered, approved or cancelled; the
//! server's own page still answers.
//!
//! The pages are `tests/ui/sites.mjs` (playwright-core, pinned in `tests/ui/`). Needs
//! Node.js 20+ with npm, the npm registry the first time, and the `chromium` Debian package
//! (`cargo xtask ci` installs it).

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

    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ui");
    let mut command = Command::new("node");
    command
        .arg("sites.mjs")
        .current_dir(&package)
        .env("ASKBUS_URL", &server.base)
        .env("ASKBUS_QUESTION", &question)
        .env("ASKBUS_APPROVAL", &approval);
    let mut script = Script::spawn(command, &package, "playwright-core", Steps::OnStdout).await;
    let rebinding = script.stage("rebinding").await;
    assert_eq!(rebinding["refused"], 5);
    script.stage("cross_site").await;
    let own = script.stage("own_page").await;
    assert_eq!(own["answered"], 200);
    script.stage("done").await;
    script.finish().await;

    // Nothing the other sites sent took effect; the own page's answer did.
    let approval = server.get(&http, &format!("/approval/{approval}")).await;
    assert_eq!(approval["status"], "pending", "{approval}");
    let question = server.get(&http, &format!("/question/{question}")).await;
    assert_eq!(question["status"], "replied", "{question}");
    assert_eq!(question["answers"], json!([["eu"]]));
}
