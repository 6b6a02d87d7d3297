//! The container image and `deploy/` as an operator meets them.
//!
//! There is no Docker daemon or cluster here, so the image is linted and the manifest is
//! checked and then run natively: hadolint lints the `Dockerfile`, kubernetes-validate
//! checks `deploy/kubernetes.yaml` against the Kubernetes schemas (both from PyPI, pinned in
//! `tests/deploy/requirements.txt`), and the replicas the manifest describes run as real
//! `askbus` processes with its environment. Only what a cluster supplies is swapped: this
//! test's Redis prefix for the `redis` Service, loopback port 0 for `0.0.0.0:4717`, and
//! secrets made as the manifest's `kubectl create secret` makes them. Then the kubelet's
//! probes (sent by pod IP), an in-cluster client asking through one replica (naming the
//! Service as its host) and a reviewer answering through the other, a stranger's host
//! refused, and the image's `HEALTHCHECK` command, run as the image would run it.
//!
//! A missing Redis fails these tests and says how to get one (`cargo xtask ci` starts it).

// The binary these tests run is built with the `server` feature only.
#![cfg(feature = "server")]
#![allow(clippy::unwrap_used)]

mod support;

#[path = "../../../tests/python.rs"]
mod python;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use support::{Server, TestPrefix, question};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `program args` in the repository's root and returns its output, failing the test
/// with it unless it succeeds.
fn run_ok(program: &Path, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap_or_else(|error| panic!("run {}: {error}", program.display()));
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{} {args:?} failed ({}):\n{printed}",
        program.display(),
        output.status
    );
    printed
}

/// The linters' virtual environment: its `bin` directory.
async fn linters() -> PathBuf {
    let python = python::venv(&root().join("tests/deploy")).await;
    python.parent().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dockerfile_and_the_manifest_lint_clean() {
    let bin = linters().await;
    // hadolint fails on any finding, warnings and notes included.
    run_ok(&bin.join("hadolint"), &["Dockerfile"]);
    let checked = run_ok(
        &bin.join("kubernetes-validate"),
        &["--strict", "deploy/kubernetes.yaml"],
    );
    for resource in [
        "deployment/askbus",
        "service/askbus",
        "deployment/redis",
        "service/redis",
        "networkpolicy/redis",
    ] {
        assert!(
            checked.contains(&format!("passed for resource {resource}")),
            "{checked}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manifests_replicas_share_requests_and_answer_their_probes() {
    let bin = linters().await;
    let manifest: Value = serde_json::from_str(&run_ok(
        &bin.join("python"),
        &["tests/deploy/manifest.py", "deploy/kubernetes.yaml"],
    ))
    .unwrap();
    assert_eq!(manifest["replicas"], 2, "{manifest}");
    let port = manifest["port"].as_u64().unwrap();
    let declared = manifest["env"].as_object().unwrap();
    assert_eq!(declared["ASKBUS_LISTEN"], format!("0.0.0.0:{port}"));

    // Every `ASKBUS_` variable the manifest sets is one askbus reads (a typo would be
    // ignored; help shows `[env: NAME=value]`, or `[env: NAME]` for a secret's), and every
    // other is used in one of them, as Kubernetes expands it: `$(NAME)`.
    let help = run_ok(Path::new(env!("CARGO_BIN_EXE_askbus")), &["--help"]);
    for name in declared.keys() {
        if name.starts_with("ASKBUS_") {
            assert!(
                help.contains(&format!("[env: {name}="))
                    || help.contains(&format!("[env: {name}]")),
                "askbus reads no {name}"
            );
        } else {
            let used = format!("$({name})");
            assert!(
                declared
                    .values()
                    .any(|value| value.as_str().is_some_and(|value| value.contains(&used))),
                "{name} is set and never used"
            );
        }
    }

    // The secret, as `kubectl create secret` in the manifest's header makes it.
    let (admin, alice) = ("a".repeat(64), "b".repeat(64));
    let secrets = HashMap::from([
        ("token", admin.clone()),
        ("reviewer-tokens", format!("alice={alice}")),
        ("link-secret", "c".repeat(64)),
        ("redis-password", "d".repeat(64)),
    ]);
    let redis = TestPrefix::new();
    let mut env: Vec<(String, String)> = declared
        .iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(value) => value.clone(),
                secret => secrets[secret["secret"].as_str().unwrap()].clone(),
            };
            (name.clone(), value)
        })
        .collect();
    for (name, value) in &mut env {
        match name.as_str() {
            "ASKBUS_LISTEN" => *value = "127.0.0.1:0".to_owned(),
            "ASKBUS_STORE" => {
                // The local Redis has no password; the manifest's must use the secret's.
                assert!(
                    value.starts_with("redis://:$(REDIS_PASSWORD)@redis:6379/"),
                    "{value}"
                );
                *value = redis.store();
            }
            _ => {}
        }
    }
    let env: Vec<(&str, &str)> = env
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let replicas = [
        Server::start_with(Path::new("."), &[], &env).await,
        Server::start_with(Path::new("."), &[], &env).await,
    ];

    let http = reqwest::Client::new();
    let call = |server: &Server, method: reqwest::Method, path: &str, host: &str| {
        http.request(method, format!("{}{path}", server.base))
            .header(reqwest::header::HOST, host)
    };
    // The kubelet probes each pod by its IP address, without a token.
    let pod_ip = format!("10.244.0.7:{port}");
    for replica in &replicas {
        for probe in ["liveness", "readiness"] {
            let path = manifest[probe].as_str().unwrap();
            let (status, _) = sent(call(replica, reqwest::Method::GET, path, &pod_ip)).await;
            assert_eq!(status, 200, "{probe} {path}");
        }
    }

    // An in-cluster agent names the Service; a reviewer comes in through the public name.
    let service = format!(
        "{}:{}",
        manifest["service"].as_str().unwrap(),
        manifest["service_port"]
    );
    let (_, asked) = sent(
        call(&replicas[0], reqwest::Method::POST, "/question", &service)
            .bearer_auth(&admin)
            .json(&question("deploy-1")),
    )
    .await;
    let id = asked["id"].as_str().unwrap().to_owned();
    let public = "askbus.example.com";
    let (_, listed) =
        sent(call(&replicas[1], reqwest::Method::GET, "/question", public).bearer_auth(&alice))
            .await;
    assert_eq!(listed[0]["id"], id.as_str(), "{listed}");
    let reply = format!("/question/{id}/reply");
    let (status, _) = sent(
        call(&replicas[1], reqwest::Method::POST, &reply, public)
            .bearer_auth(&alice)
            .json(&json!({"answers": [["eu"]]})),
    )
    .await;
    assert_eq!(status, 200);
    let wait = format!("/question/{id}/wait?timeout=10");
    let (_, outcome) =
        sent(call(&replicas[0], reqwest::Method::GET, &wait, &service).bearer_auth(&admin)).await;
    assert_eq!(outcome["status"], "replied", "{outcome}");
    assert_eq!(outcome["answeredBy"]["name"], "alice", "{outcome}");

    // A name the manifest does not allow is refused (DNS rebinding), token or not.
    let stranger = "askbus.attacker.example";
    let (status, _) =
        sent(call(&replicas[0], reqwest::Method::GET, "/question", stranger).bearer_auth(&admin))
            .await;
    assert_eq!(status, 421);

    // The image's health check, run as the image runs it (its binary, with the
    // environment of the manifest), passes against a replica and fails against nothing.
    let healthcheck = healthcheck_command();
    assert_eq!(healthcheck[0], "/usr/local/bin/askbus");
    let check = |listen: &str| {
        Command::new(env!("CARGO_BIN_EXE_askbus"))
            .args(&healthcheck[1..])
            .envs(env.iter().copied())
            .env("ASKBUS_LISTEN", listen)
            .output()
            .unwrap()
    };
    assert!(check(replicas[0].address()).status.success());
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = closed.local_addr().unwrap().to_string();
    drop(closed);
    let failed = check(&nowhere);
    assert!(!failed.status.success());
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("/health: no answer"),
        "{}",
        String::from_utf8_lossy(&failed.stderr)
    );
}

/// Sends `request`: its status, and its body as JSON (`null` if it is not).
async fn sent(request: reqwest::RequestBuilder) -> (reqwest::StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The exec form of the `Dockerfile`'s `HEALTHCHECK ... CMD [...]`.
fn healthcheck_command() -> Vec<String> {
    let dockerfile = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    let at = dockerfile.find("HEALTHCHECK").expect("a HEALTHCHECK");
    let command = &dockerfile[at..];
    let start = command.find("CMD [").unwrap() + "CMD ".len();
    let end = start + command[start..].find(']').unwrap() + 1;
    serde_json::from_str(&command[start..end]).unwrap()
}
