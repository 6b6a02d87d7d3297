//! Project automation, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! Plain `std::process::Command` calls, no dependencies, so building the task runner costs
//! nothing next to the project itself (matklad/cargo-xtask).

use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci      format check, clippy (warnings denied), every test, docs (warnings denied)
  bench   the criterion benchmarks; figures land in target/criterion";

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
    cargo(&[
        "test",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--locked",
    ])?;
    cargo(&["test", "--workspace", "--doc", "--all-features", "--locked"])?;
    cargo_with_env(
        &[
            "doc",
            "--workspace",
            "--no-deps",
            "--all-features",
            "--locked",
        ],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )
}

/// The benchmarks, with the bare-primitive baselines measured in the same run.
fn bench() -> Result<(), String> {
    cargo(&["bench", "--workspace", "--locked"])
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
