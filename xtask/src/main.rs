//! Project automation, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! Plain `std::process::Command` calls, no dependencies, so building the task runner costs
//! nothing next to the project itself (matklad/cargo-xtask).

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci      format check, clippy (warnings denied), every test, the examples run, docs
          (warnings denied), every crate packaged and built alone
  bench   the criterion benchmarks (figures land in target/criterion) and the load tests
          (wrk and redis-server, installed with apt-get when missing; figures printed)";

fn main() -> ExitCode {
    let command = std::env::args().nth(1);
    let result = match command.as_deref() {
        Some("ci") => ci(),
        Some("bench") => bench(),
        Some("help" | "--help" | "-h") => {
            eprintln!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("unknown or missing command\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Everything CI checks, in the order that fails fastest.
fn ci() -> Result<(), String> {
    cargo(&["fmt", "--all", "--", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--locked",
        "--",
        "-D",
        "warnings",
    ])?;
    // The browser tests of the web UI (tests/ui.rs) drive Debian's chromium.
    apt_install("/usr/bin/chromium", "chromium")?;
    // The store and multi-instance tests use the real Redis on 127.0.0.1:6379, and start
    // redis-servers of their own to restart.
    ensure_redis()?;
    cargo(&[
        "test",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--locked",
    ])?;
    cargo(&["test", "--workspace", "--doc", "--all-features", "--locked"])?;
    // The examples are built by `--all-targets`; each also checks its own run, with only
    // the features it needs.
    for example in [&["agent_loop"][..], &["rig_agent", "--features", "rig"]] {
        let mut args = vec!["run", "--locked", "--package", "askbus", "--example"];
        args.extend(example);
        cargo(&args)?;
    }
    cargo_with_env(
        &[
            "doc",
            "--workspace",
            "--no-deps",
            "--all-features",
            "--locked",
        ],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    // Every published crate packs, and its package builds on its own with its default
    // features (the verification `cargo publish` does; members that depend on each other
    // unpublished are packed together), so no crate leans on a feature another member
    // happens to turn on. The working tree as it is, like every step above.
    // The members that are never published (`publish = false`) are left out.
    // Built in a target directory of its own, made afresh: cargo takes a packaged crate
    // of an unchanged version for unchanged, so artifacts of an earlier run's packages
    // would be used as they were (see `forget_packaged_sources`).
    let verify = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/verify");
    if verify.exists() {
        std::fs::remove_dir_all(&verify)
            .map_err(|error| format!("cannot remove {}: {error}", verify.display()))?;
    }
    forget_packaged_sources()?;
    cargo(&[
        "package",
        "--target-dir",
        &verify.to_string_lossy(),
        "--workspace",
        "--exclude",
        "askbus-loadtest",
        "--exclude",
        "askbus-tests",
        "--exclude",
        "xtask",
        "--locked",
        "--allow-dirty",
    ])
}

/// The benchmarks, with the bare-primitive baselines measured in the same run; then the
/// verdict line each target's bench printed (see [`TARGET_PREFIX`]), gathered into one table.
fn bench() -> Result<(), String> {
    // The HTTP load tests (crates/loadtest) drive Debian's wrk; the shared-store one and the
    // Redis store's tests need Redis.
    apt_install("/usr/bin/wrk", "wrk")?;
    ensure_redis()?;
    // Every bench runs even when one fails, so the table has every figure there is.
    let args = ["bench", "--workspace", "--locked", "--no-fail-fast"];
    let (ran, verdicts) = cargo_gathering(&args, TARGET_PREFIX);
    eprintln!("\nxtask: the targets (askbus against its baseline, same run):");
    for verdict in &verdicts {
        eprintln!("  {verdict}");
    }
    if verdicts.is_empty() {
        eprintln!("  (no bench printed a verdict)");
    }
    ran
}

/// What starts the verdict lines of the benches (`askbus_loadtest::target::PREFIX`, which
/// this dependency-free crate spells itself).
const TARGET_PREFIX: &str = "TARGET | ";

/// Runs cargo with `args`, passing its output on as it comes, and keeps the lines of its
/// standard output that start with `prefix`.
fn cargo_gathering(args: &[&str], prefix: &str) -> (Result<(), String>, Vec<String>) {
    use std::io::{BufRead, Write};
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("xtask: cargo {}", args.join(" "));
    let child = Command::new(&cargo)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(error) => return (Err(format!("could not run {cargo}: {error}")), Vec::new()),
    };
    let mut gathered = Vec::new();
    if let Some(output) = child.stdout.take() {
        let mut stdout = std::io::stdout().lock();
        for line in std::io::BufReader::new(output)
            .lines()
            .map_while(Result::ok)
        {
            // Passed on as cargo printed it; a closed stdout only loses the echo.
            let _ = writeln!(stdout, "{line}");
            if let Some(verdict) = line.strip_prefix(prefix) {
                gathered.push(verdict.to_owned());
            }
        }
    }
    let ran = match child.wait() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("`cargo {}` failed ({status})", args.join(" "))),
        Err(error) => Err(format!("could not wait for {cargo}: {error}")),
    };
    (ran, gathered)
}

/// Installs Debian package `package` with apt-get unless `binary` exists (an `apt-get
/// update` first if the package lists do not know it yet), so a fresh machine needs no
/// manual step; tells how to get it when that fails (not root, no apt, no network).
fn apt_install(binary: &str, package: &str) -> Result<(), String> {
    if std::path::Path::new(binary).exists() {
        return Ok(());
    }
    eprintln!("xtask: {binary} is missing; installing the Debian package `{package}`");
    let apt_get = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|status| status.success())
    };
    let installed = apt_get(&["install", "-y", package])
        || (apt_get(&["update"]) && apt_get(&["install", "-y", package]));
    if installed && std::path::Path::new(binary).exists() {
        Ok(())
    } else {
        Err(format!(
            "could not install `{package}` (needed for {binary}): run `sudo apt-get update && \
             sudo apt-get install -y {package}` (Debian/Ubuntu), or install it with your \
             system's package manager so that {binary} exists, then run this again"
        ))
    }
}

/// Where the tests expect Redis.
const REDIS: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 6379);

/// Makes sure Debian's `redis-server` is installed (the tests that restart Redis start
/// their own, on other ports) and a Redis answers on 127.0.0.1:6379: one already running is
/// used as it is; otherwise one is started in the background, keeping nothing on disk (the
/// tests clean up their own keys). Says how to get one when that fails.
fn ensure_redis() -> Result<(), String> {
    apt_install("/usr/bin/redis-server", "redis-server")?;
    let listening = || TcpStream::connect_timeout(&REDIS, Duration::from_millis(500)).is_ok();
    if listening() {
        return Ok(());
    }
    eprintln!("xtask: no Redis on {REDIS}; starting redis-server for the tests");
    let started = Command::new("/usr/bin/redis-server")
        .args([
            "--daemonize",
            "yes",
            "--bind",
            "127.0.0.1",
            "--port",
            "6379",
        ])
        .args(["--save", "", "--appendonly", "no"])
        .status()
        .is_ok_and(|status| status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while started && Instant::now() < deadline {
        if listening() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "the tests need Redis on {REDIS} and it could not be started: start one yourself \
         (`redis-server --daemonize yes`, or `docker run -p 6379:6379 redis`), then run this again"
    ))
}

/// Removes the sources of askbus crates that earlier `cargo package` runs extracted.
///
/// `cargo package --workspace` verifies each crate against the packages of the others
/// through a registry of its own in `target/package`, whose crates it extracts under
/// `$CARGO_HOME/registry/src/`, and it never extracts a version already there again: a
/// crate changed since (same version) would be verified against its old source, failing
/// on an API that changed, or passing on one that no longer exists. crates.io's sources
/// are left alone.
fn forget_packaged_sources() -> Result<(), String> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    let Some(sources) = cargo_home.map(|home| home.join("registry").join("src")) else {
        return Ok(());
    };
    let Ok(registries) = std::fs::read_dir(&sources) else {
        return Ok(());
    };
    for registry in registries.flatten() {
        if registry
            .file_name()
            .to_string_lossy()
            .starts_with("index.crates.io-")
        {
            continue;
        }
        let Ok(crates) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for extracted in crates.flatten() {
            if extracted
                .file_name()
                .to_string_lossy()
                .starts_with("askbus")
            {
                std::fs::remove_dir_all(extracted.path()).map_err(|error| {
                    format!("cannot remove {}: {error}", extracted.path().display())
                })?;
            }
        }
    }
    Ok(())
}

fn cargo(args: &[&str]) -> Result<(), String> {
    cargo_with_env(args, &[])
}

fn cargo_with_env(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .map_err(|error| format!("could not run {cargo}: {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}
