//! `askbus`: the askbus server binary. All logic is in the `askbus_server` library; this
//! file parses flags, sets up logging and waits for a signal.

use std::process::ExitCode;

use anyhow::Context;
use std::io::IsTerminal;

use askbus_server::{Cli, Command, LogFormat};
use clap::Parser;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

/// mimalloc instead of glibc's malloc. With many pending requests the heap holds millions of
/// small allocations, and glibc frees them into fastbins that one `free` of a larger chunk
/// then consolidates all at once, under the arena lock: the load bench saw worker threads
/// stalled for 230 ms in `malloc_consolidate` with two million questions pending (p99 of
/// replies 125 ms against the bare axum baseline's 9 ms). mimalloc frees into per-page lists
/// and has no such sweep. The library crates leave the choice to their embedders.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,tower_http=warn,hyper=warn")),
        )
        .with_writer(std::io::stderr);
    match cli.log_format {
        // Colour codes only where a terminal shows them: never into a file or a collector.
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => logs.json().with_current_span(true).init(),
    }
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    if let Some(Command::Audit(command)) = &cli.command {
        // A one-off command: no server, no connections to make room for.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        return Ok(runtime.block_on(askbus_server::run_audit(command, cli))?);
    }
    if let Some(Command::Probe { ready }) = cli.command {
        // A health check: one request, no server.
        let listen = cli.settings()?.listen;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        return Ok(runtime.block_on(askbus_server::probe(listen, ready))?);
    }
    // First: the default number of event streams is derived from the limit in force.
    match askbus_server::raise_open_files_limit() {
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
        askbus_server::run(settings, shutdown)
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
