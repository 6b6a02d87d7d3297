//! The `askbus` binary's whole `main`: parse [`Cli`], set up logging, run the command or
//! the server on a runtime of its own, and stop on a signal. It lives in the library so
//! that the binary (in the `askbus` package, behind its `server` feature) is two lines
//! and the global allocator its own choice.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::JsonFields;

use crate::{Cli, Command, DEFAULT_LOG_FILTER, LogFormat, LogLines};

/// Runs the `askbus` command line: what the binary's `main` does, exit code included.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER)),
        )
        .with_writer(std::io::stderr);
    match cli.log_format {
        // Colour codes only where a terminal shows them: never into a file or a collector.
        LogFormat::Text => logs
            .with_ansi(std::io::stderr().is_terminal())
            .event_format(LogLines::text())
            .init(),
        LogFormat::Json => logs
            .event_format(LogLines::json())
            .fmt_fields(JsonFields::new())
            .init(),
    }
    match run_cli(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_cli(cli: &Cli) -> anyhow::Result<()> {
    if let Some(Command::Audit(command)) = &cli.command {
        // A one-off command: no server, no connections to make room for.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        return Ok(runtime.block_on(crate::run_audit(command, cli))?);
    }
    if let Some(Command::Probe { ready }) = cli.command {
        // A health check: one request, no server.
        let listen = cli.settings()?.listen;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        return Ok(runtime.block_on(crate::probe(listen, ready))?);
    }
    match crate::turn_off_huge_pages() {
        Ok(crate::HugePages::TurnedOff) => {
            tracing::debug!("transparent huge pages: off for this process");
        }
        Ok(crate::HugePages::OperatorsChoice) => {
            tracing::info!("transparent huge pages: as MIMALLOC_ALLOW_THP says");
        }
        Ok(crate::HugePages::Unsupported) => {}
        Err(error) => tracing::warn!("transparent huge pages: cannot turn them off: {error}"),
    }
    // First: the default number of event streams is derived from the limit in force.
    match crate::raise_open_files_limit() {
        Ok(Some(files)) if files.now > files.before => tracing::info!(
            "open files: soft limit raised from {} to {} (the hard limit)",
            files.before,
            files.now
        ),
        Ok(Some(files)) => tracing::info!("open files: limit {}", files.now),
        Ok(None) => {}
        Err(error) => tracing::warn!("open files: cannot raise the limit: {error}"),
    }
    let settings = cli.settings()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let served = runtime.block_on(async {
        let shutdown = CancellationToken::new();
        tokio::spawn(cancel_on_signal(shutdown.clone()));
        crate::run(settings, shutdown)
            .await
            .with_context(|| format!("cannot serve on {}", cli.listen))
    });
    // `askbus mcp` on a terminal reads stdin on a blocking thread, which cannot be
    // cancelled: do not let it hold up the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    served?;
    tracing::info!("askbus stopped");
    Ok(())
}

/// Cancels `shutdown` on SIGINT (Ctrl-C) or SIGTERM.
async fn cancel_on_signal(shutdown: CancellationToken) {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!("cannot listen for SIGTERM: {error}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {}
        () = terminate => {}
    }
    tracing::info!("shutting down: closing open streams");
    shutdown.cancel();
}
