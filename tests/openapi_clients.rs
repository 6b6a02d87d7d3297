//! The served `/openapi.json` through tools nobody here wrote, run with their default flags
//! against the real server: Redocly's linter, openapi-typescript (its types compiled by
//! `tsc --strict` with an `openapi-fetch` client), openapi-python-client (its generated
//! client driven through a flow), and schemathesis (undocumented statuses, responses and
//! SSE events that do not fit their schemas).
//!
//! Each test serves askbus over real TCP on 127.0.0.1 behind the site guard, as the binary
//! does, reads the document from it, and hands it to the tool. The npm tools are pinned in
//! `tests/openapi-node/` (installed by [`node::npm_ci`]), the PyPI ones in
//! `tests/openapi-python/requirements.txt` (installed by [`python::venv`]). Generated code
//! goes to a temporary directory, except the TypeScript types, which `tsc` must compile
//! beside the client script and its `node_modules` (`tests/openapi-node/generated/`,
//! ignored by git).
//!
//! Needs Node.js 20+ with npm and Python 3.10+, and the registries the first time.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use askbus::Bus;
use askbus::question::RequestHub;
use askbus_http::{AccessToken, HttpConfig, SiteGuard, guarded};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::{node, python};

/// The bearer token the server requires and the clients send.
const TOKEN: &str = "openapi-clients-test-token-0123456789";
/// Limit of one tool's run (a generator, a linter, a client flow, schemathesis).
const TOOL_TIMEOUT: Duration = Duration::from_secs(90);

/// askbus served on an ephemeral loopback port, as the binary serves it.
struct Served {
    /// `http://127.0.0.1:PORT`.
    url: String,
    /// The questions and approvals behind it, to check what the clients did.
    hub: RequestHub,
    /// Ends the server (and its open streams) when the test is done.
    shutdown: CancellationToken,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Serves a fresh hub with one token, behind the site guard. Long polls are cut at 500 ms
/// and heartbeats come every 200 ms, so no tool waits long on a held response.
async fn serve() -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address: SocketAddr = listener.local_addr().expect("the bound address");
    let hub = RequestHub::new(Bus::new());
    let config = HttpConfig {
        tokens: vec![AccessToken::all_sessions(TOKEN)],
        max_wait: Duration::from_millis(500),
        heartbeat_interval: Duration::from_millis(200),
        ..HttpConfig::default()
    };
    let guard = SiteGuard::new(address, &config);
    let shutdown = CancellationToken::new();
    let app = guarded(
        askbus_http::router(hub.clone(), config, shutdown.clone()),
        guard,
    );
    tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.clone().cancelled_owned())
            .into_future(),
    );
    Served {
        url: format!("http://{address}"),
        hub,
        shutdown,
    }
}

impl Served {
    /// Fetches `/openapi.json` from the server and writes it to `directory`; answers its path.
    async fn write_document(&self, directory: &Path) -> PathBuf {
        let response = reqwest::get(format!("{}/openapi.json", self.url))
            .await
            .expect("GET /openapi.json");
        assert!(response.status().is_success(), "GET /openapi.json");
        let document = response.bytes().await.expect("the document");
        let path = directory.join("openapi.json");
        std::fs::write(&path, &document).expect("write openapi.json");
        path
    }
}

/// Runs `command` to its end within [`TOOL_TIMEOUT`]; answers its output, whatever its status.
async fn run(command: &mut Command, what: &str) -> Output {
    tokio::time::timeout(
        TOOL_TIMEOUT,
        command
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("`{what}` took longer than {TOOL_TIMEOUT:?}"))
    .unwrap_or_else(|error| panic!("run `{what}`: {error}"))
}

/// Runs `command` and fails the test, with everything it printed, unless it succeeds.
async fn run_ok(command: &mut Command, what: &str) -> Output {
    let output = run(command, what).await;
    assert!(
        output.status.success(),
        "`{what}` failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    output
}

/// `tests/openapi-node/`, installed.
async fn node_package() -> PathBuf {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi-node");
    node::check_node();
    node::npm_ci(&package, "@redocly/cli").await;
    package
}

/// The interpreter of `tests/openapi-python/`'s environment, installed, and its `bin`.
async fn python_package() -> (PathBuf, PathBuf) {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi-python");
    let interpreter = python::venv(&package).await;
    let bin = interpreter.parent().expect("the venv's bin").to_owned();
    (package, bin)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redocly_lints_the_served_document_without_errors() {
    let package = node_package().await;
    let served = serve().await;
    let directory = tempfile::tempdir().expect("a temporary directory");
    let document = served.write_document(directory.path()).await;

    // The recommended ruleset, the default without a configuration file.
    let output = run(
        Command::new(package.join("node_modules/.bin/redocly"))
            .args(["lint", "--format=json"])
            .arg(&document)
            .current_dir(directory.path()),
        "redocly lint",
    )
    .await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "redocly's report is not JSON ({error}):\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let errors: Vec<&Value> = report["problems"]
        .as_array()
        .expect("redocly lists its problems")
        .iter()
        .filter(|problem| problem["severity"] == "error")
        .collect();
    assert!(
        errors.is_empty() && report["totals"]["errors"] == 0,
        "redocly lint found errors: {errors:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_typescript_types_compile_strictly_and_drive_the_server() {
    let package = node_package().await;
    let served = serve().await;
    let directory = tempfile::tempdir().expect("a temporary directory");
    let document = served.write_document(directory.path()).await;
    let generated = package.join("generated");
    std::fs::create_dir_all(&generated).expect("create generated/");

    // Default flags: no `--default-non-nullable false`, nothing else.
    run_ok(
        Command::new(package.join("node_modules/.bin/openapi-typescript"))
            .arg(&document)
            .arg("-o")
            .arg(generated.join("askbus.d.ts"))
            .current_dir(&package),
        "openapi-typescript",
    )
    .await;
    // `tsconfig.json` is `strict`; nothing is emitted if anything does not type-check.
    run_ok(
        Command::new(package.join("node_modules/.bin/tsc"))
            .args(["--project", "tsconfig.json"])
            .current_dir(&package),
        "tsc --strict",
    )
    .await;
    let output = run_ok(
        Command::new("node")
            .arg(generated.join("client.js"))
            .arg(&served.url)
            .env("ASKBUS_TOKEN", TOKEN)
            .current_dir(&package),
        "node generated/client.js",
    )
    .await;
    check_flow(&served, &output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_python_client_generates_a_client_that_drives_the_server() {
    let (package, bin) = python_package().await;
    let served = serve().await;
    let directory = tempfile::tempdir().expect("a temporary directory");
    let document = served.write_document(directory.path()).await;
    let client = directory.path().join("askbus-client");

    // Default flags and configuration (its post hooks run the pinned ruff).
    let output = run_ok(
        Command::new(bin.join("openapi-python-client"))
            .args(["generate", "--path"])
            .arg(&document)
            .arg("--output-path")
            .arg(&client)
            .env("PATH", path_with(&bin))
            .current_dir(directory.path()),
        "openapi-python-client generate",
    )
    .await;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // The one thing it leaves out, by design: the body of `GET /metrics`, OpenMetrics text,
    // which it has no parser for (the function is generated; it answers the raw response).
    let unexpected: Vec<&str> = said
        .split("\n\n")
        .filter(|paragraph| {
            ["Unable to", "Cannot", "Unsupported", "removal of"]
                .iter()
                .any(|problem| paragraph.contains(problem))
                && !paragraph.contains("application/openmetrics-text")
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "openapi-python-client dropped parts of the document: {unexpected:#?}\n{said}"
    );

    let output = run_ok(
        Command::new(bin.join("python"))
            .arg(package.join("flow.py"))
            .arg(&served.url)
            .env("ASKBUS_TOKEN", TOKEN)
            .env("PYTHONPATH", &client),
        "python flow.py",
    )
    .await;
    check_flow(&served, &output);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_every_status_and_response_documented() {
    let (package, bin) = python_package().await;
    let served = serve().await;
    let directory = tempfile::tempdir().expect("a temporary directory");
    // A small, fixed sample: the same cases every run, within the time budget.
    let output = run(
        Command::new(bin.join("schemathesis"))
            .arg("--config-file")
            .arg(package.join("schemathesis.toml"))
            .arg("run")
            .arg(format!("{}/openapi.json", served.url))
            .args([
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
                "--phases",
                "examples,coverage,fuzzing",
                "--max-examples",
                "8",
                "--seed",
                "18",
                "--workers",
                "1",
                "--request-timeout",
                "5",
                "--no-color",
            ])
            .arg("--header")
            .arg(format!("Authorization: Bearer {TOKEN}"))
            .current_dir(directory.path()),
        "schemathesis run",
    )
    .await;
    assert!(
        output.status.success(),
        "schemathesis found responses the document does not describe ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
}

/// `PATH` with `bin` first, so a tool finds its environment's other tools.
fn path_with(bin: &Path) -> std::ffi::OsString {
    let mut paths = vec![bin.to_owned()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).expect("a PATH")
}

/// Checks the summary line a client flow (`client.ts`, `flow.py`) prints last, and what the
/// server saw: its question answered with what it sent, its approval approved, and the
/// interrupt state it read naming the request the server had pending.
fn check_flow(served: &Served, output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary: Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("the flow printed no summary:\n{stdout}"));
    assert_eq!(summary["question"]["status"], "replied", "{summary}");
    assert_eq!(
        summary["question"]["answers"],
        serde_json::json!([["Rust"], ["Linux", "macOS"]]),
        "{summary}"
    );
    assert_eq!(summary["approval"]["status"], "replied", "{summary}");
    assert_eq!(summary["interrupt"]["interrupted"], true, "{summary}");
    assert_eq!(summary["interrupt"]["kind"], "question", "{summary}");

    let question_id = summary["question"]["id"]
        .as_str()
        .expect("the question's id");
    let question = served
        .hub
        .questions()
        .get(question_id.parse().expect("a question id"))
        .expect("the server knows the question");
    assert!(question.outcome.is_some(), "the question was answered");
    let interrupted = summary["interrupt"]["checkpoint_id"]
        .as_str()
        .expect("the checkpoint id");
    let pending = served
        .hub
        .oldest_pending(summary["interrupt"]["session_id"].as_str().unwrap())
        .expect("the interrupted session has a pending request");
    assert_eq!(pending.id().to_string(), interrupted);
}
