//! Node.js for the tests that drive npm packages (`tests/opencode-sdk/`, `tests/ui/`,
//! `tests/mcp/`).
//!
//! Each such test owns a directory with a pinned `package.json` and `package-lock.json`;
//! [`npm_ci`] installs it when `node_modules` is missing or was installed from another lock
//! file, so a fresh checkout needs nothing but Node.js and the npm registry. A [`Script`]
//! runs one of its scripts and follows the steps it reports.
//!
//! The server crate's tests include this file too (`#[path]`), for `askbus mcp` driven by
//! the scripts of `tests/mcp/`: only that package's tests get the built binary.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader, Lines};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

/// Limit of every wait for a script's next step; the scripts give up on their own earlier.
pub(crate) const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// The oldest Node.js major version the tests are known to work with.
const MIN_NODE_MAJOR: u32 = 20;
/// Limit of `npm ci` (a download of a few small packages).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(120);

/// Fails with install instructions unless Node.js (20 or newer) and npm are on `PATH`.
pub(crate) fn check_node() {
    const HOW: &str = "this test drives npm packages and needs Node.js 20+ with npm on \
        PATH: install them from https://nodejs.org/en/download (or e.g. `curl -fsSL \
        https://deb.nodesource.com/setup_20.x | sudo -E bash - && sudo apt-get install -y \
        nodejs`, `brew install node@20`, `nvm install 20`)";
    let version = |program: &str| {
        std::process::Command::new(program)
            .arg("--version")
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let node = version("node").unwrap_or_else(|| panic!("`node` was not found; {HOW}"));
    let major = node
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|major| major.parse::<u32>().ok());
    assert!(
        major.is_some_and(|major| major >= MIN_NODE_MAJOR),
        "found Node.js {node}, too old; {HOW}"
    );
    version(npm()).unwrap_or_else(|| panic!("`npm` was not found; {HOW}"));
}

/// The npm executable's name on this platform.
fn npm() -> &'static str {
    if cfg!(windows) { "npm.cmd" } else { "npm" }
}

/// Runs `npm ci` in `package` unless `node_modules/{dependency}/package.json` exists and was
/// installed from the current `package-lock.json` (a copy of which is kept as a stamp
/// inside `node_modules`).
///
/// Installs are serialised by an advisory lock on `package-lock.json` itself (which `npm ci`
/// only reads), so concurrent test runs over one checkout (several target directories)
/// never run `npm ci` in the same directory at once.
pub(crate) async fn npm_ci(package: &Path, dependency: &str) {
    let lock_file = package.join("package-lock.json");
    let wanted = std::fs::read(&lock_file)
        .unwrap_or_else(|error| panic!("read {}: {error}", lock_file.display()));
    let stamp = package
        .join("node_modules")
        .join(".askbus-package-lock.json");
    let guard = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&lock_file).expect("open package-lock.json");
        file.lock().expect("lock package-lock.json");
        file
    })
    .await
    .expect("the lock task");

    let installed = package
        .join("node_modules")
        .join(dependency)
        .join("package.json");
    if installed.is_file() && std::fs::read(&stamp).is_ok_and(|stamp| stamp == wanted) {
        return;
    }
    let started = Instant::now();
    let run = Command::new(npm())
        .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
        .current_dir(package)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(INSTALL_TIMEOUT, run)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "`npm ci` in {} took longer than {INSTALL_TIMEOUT:?}",
                package.display()
            )
        })
        .expect("run `npm ci`");
    assert!(
        output.status.success(),
        "`npm ci` in {} failed ({}); it needs the npm registry (or a configured mirror):\n{}\n{}",
        package.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    std::fs::write(&stamp, &wanted).expect("write the install stamp");
    eprintln!(
        "npm ci in {} took {:.1?}",
        package.display(),
        started.elapsed()
    );
    drop(guard);
}

/// Which output stream of a [`Script`] carries its steps.
pub(crate) enum Steps {
    /// Stdout; stderr is kept for failure messages.
    OnStdout,
    /// Stderr, because stdout carries something else (MCP over stdio); stdout is the
    /// caller's to take from [`Script::child`].
    OnStderr,
}

/// A running node script and the steps it prints, one JSON object with a `stage` per line.
pub(crate) struct Script {
    /// The node process, with its stdio piped.
    pub(crate) child: Child,
    /// The stream carrying the steps.
    steps: Lines<BufReader<Box<dyn AsyncRead + Send + Unpin>>>,
    /// What the script printed besides the steps, for failure messages.
    noise: Vec<String>,
    /// Stderr when the steps are on stdout, read to the end in the background.
    other: Option<JoinHandle<String>>,
}

impl Script {
    /// Installs `package` when needed ([`npm_ci`], which checks for `dependency`) and
    /// spawns `command` (node running one of its scripts) with its stdio piped.
    pub(crate) async fn spawn(
        command: Command,
        package: &Path,
        dependency: &str,
        steps: Steps,
    ) -> Self {
        check_node();
        npm_ci(package, dependency).await;
        Self::start(command, steps)
    }

    /// Spawns `command` (any program printing steps, already installed) with its stdio
    /// piped.
    pub(crate) fn start(mut command: Command, steps: Steps) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn node");
        let stderr = child.stderr.take().expect("piped stderr");
        let (steps, other): (Box<dyn AsyncRead + Send + Unpin>, _) = match steps {
            Steps::OnStderr => (Box::new(stderr), None),
            Steps::OnStdout => {
                let stdout = child.stdout.take().expect("piped stdout");
                (Box::new(stdout), Some(tokio::spawn(read_all(stderr))))
            }
        };
        Self {
            child,
            steps: BufReader::new(steps).lines(),
            noise: Vec::new(),
            other,
        }
    }

    /// Ends the script's stdin.
    pub(crate) fn close_stdin(&mut self) {
        drop(self.child.stdin.take());
    }

    /// The next step, which must be `stage`.
    pub(crate) async fn stage(&mut self, stage: &str) -> Value {
        self.stage_within(stage, STEP_TIMEOUT).await
    }

    /// The next step, which must be `stage` and come within `limit`.
    pub(crate) async fn stage_within(&mut self, stage: &str, limit: Duration) -> Value {
        loop {
            let line = match tokio::time::timeout(limit, self.steps.next_line()).await {
                Ok(Ok(Some(line))) => line,
                Ok(Ok(None)) => self.fail(&format!("node ended before `{stage}`")).await,
                Ok(Err(error)) => self.fail(&format!("read node's output: {error}")).await,
                Err(_) => self.fail(&format!("no `{stage}` within {limit:?}")).await,
            };
            match serde_json::from_str::<Value>(&line) {
                Ok(step) if step.get("stage").is_some() => {
                    if step["stage"] != stage {
                        self.fail(&format!("expected `{stage}`, got {step}")).await;
                    }
                    return step;
                }
                _ => self.noise.push(line),
            }
        }
    }

    /// Waits for the script to exit successfully.
    pub(crate) async fn finish(mut self) {
        match tokio::time::timeout(STEP_TIMEOUT, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(status) => self.fail(&format!("node exited with {status:?}")).await,
            Err(_) => self.fail("node did not exit").await,
        }
    }

    /// Kills the script and fails the test with everything it printed.
    async fn fail(&mut self, problem: &str) -> ! {
        let _ = self.child.kill().await;
        let mut output = std::mem::take(&mut self.noise).join("\n");
        while let Ok(Ok(Some(line))) =
            tokio::time::timeout(Duration::from_secs(1), self.steps.next_line()).await
        {
            output.push('\n');
            output.push_str(&line);
        }
        if let Some(other) = self.other.take() {
            output.push('\n');
            output.push_str(&other.await.unwrap_or_default());
        }
        panic!("{problem}; node printed:\n{output}");
    }
}

/// Everything `reader` yields, lossily decoded.
async fn read_all(mut reader: impl AsyncRead + Unpin) -> String {
    let mut bytes = Vec::new();
    let _ = reader.read_to_end(&mut bytes).await;
    String::from_utf8_lossy(&bytes).into_owned()
}
