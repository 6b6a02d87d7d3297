//! Python for the tests that drive PyPI packages (an SDK or a code generator written
//! elsewhere, run with its defaults).
//!
//! Each such test owns a directory with a `requirements.txt` pinning every package with
//! `==`; [`venv`] makes a virtual environment in its `.venv` (ignored by git) and installs
//! them when the environment is missing or was installed from another `requirements.txt`,
//! so a fresh checkout needs nothing but Python 3.10+ and the PyPI registry.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;

/// The oldest Python the tests are known to work with (the MCP SDK's own minimum).
const MIN_PYTHON: (u32, u32) = (3, 10);
/// Limit of the install (a download of a few packages).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(300);

/// The `python3` found on `PATH`, or a failure saying how to get one.
fn python() -> &'static str {
    const HOW: &str = "this test drives PyPI packages and needs Python 3.10+ with its `venv` \
        module on PATH as `python3`: install it from https://www.python.org/downloads/ (or \
        `sudo apt-get install -y python3 python3-venv`, `brew install python@3.11`)";
    let output = std::process::Command::new("python3")
        .args(["-c", "import sys, venv; print(*sys.version_info[:2])"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .unwrap_or_else(|| panic!("`python3` with `venv` was not found; {HOW}"));
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let parsed: Vec<u32> = version
        .split(' ')
        .filter_map(|part| part.parse().ok())
        .collect();
    assert!(
        matches!(parsed[..], [major, minor] if (major, minor) >= MIN_PYTHON),
        "found Python {version}, too old; {HOW}"
    );
    "python3"
}

/// The Python interpreter of `package`'s virtual environment, with `requirements.txt`
/// installed in it.
///
/// Installs are serialised by an advisory lock on `requirements.txt` itself, so concurrent
/// test runs over one checkout never install into one environment at once.
pub(crate) async fn venv(package: &Path) -> PathBuf {
    let requirements = package.join("requirements.txt");
    let wanted = std::fs::read(&requirements)
        .unwrap_or_else(|error| panic!("read {}: {error}", requirements.display()));
    let environment = package.join(".venv");
    let interpreter = environment.join("bin").join("python");
    let stamp = environment.join(".askbus-requirements.txt");
    let lock_path = requirements.clone();
    let guard = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&lock_path).expect("open requirements.txt");
        file.lock().expect("lock requirements.txt");
        file
    })
    .await
    .expect("the lock task");

    if interpreter.is_file() && std::fs::read(&stamp).is_ok_and(|stamp| stamp == wanted) {
        return interpreter;
    }
    let started = Instant::now();
    run(
        Command::new(python())
            .args(["-m", "venv", "--clear"])
            .arg(&environment),
        "python3 -m venv",
    )
    .await;
    run(
        Command::new(&interpreter)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "-r",
            ])
            .arg(&requirements),
        "pip install",
    )
    .await;
    std::fs::write(&stamp, &wanted).expect("write the install stamp");
    eprintln!(
        "the virtual environment of {} took {:.1?}",
        package.display(),
        started.elapsed()
    );
    drop(guard);
    interpreter
}

/// Runs `command` to success within [`INSTALL_TIMEOUT`], or fails saying what it printed.
async fn run(command: &mut Command, what: &str) {
    let output = tokio::time::timeout(
        INSTALL_TIMEOUT,
        command.stdin(Stdio::null()).kill_on_drop(true).output(),
    )
    .await
    .unwrap_or_else(|_| panic!("`{what}` took longer than {INSTALL_TIMEOUT:?}"))
    .unwrap_or_else(|error| panic!("run `{what}`: {error}"));
    assert!(
        output.status.success(),
        "`{what}` failed ({}); it needs the PyPI registry (or a configured mirror):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
}
