//! Node.js for the tests that drive npm packages (`tests/opencode-sdk/`, `tests/ui/`).
//!
//! Each such test owns a directory with a pinned `package.json` and `package-lock.json`;
//! [`npm_ci`] installs it when `node_modules` is missing or was installed from another lock
//! file, so a fresh checkout needs nothing but Node.js and the npm registry.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;

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
