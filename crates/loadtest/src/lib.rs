//! Load tests of the askbus HTTP API, run by `cargo xtask bench` (the `http_load` bench).
//!
//! Two questions are answered with figures, never with timed assertions:
//!
//! - **Reply throughput.** How many `POST /question/{id}/reply` per second askbus answers,
//!   each request answering a distinct live question, next to a bare axum handler that
//!   parses the same JSON body ([`baseline`]), both measured by the same load generator
//!   ([`wrk`], a separate process) in the same run. The figures are requests per second,
//!   their ratio, and p50/p99 latency at 64 connections. Afterwards the bench counts what
//!   the server actually did: questions answered, and responses by status ([`Served`]).
//! - **SSE fan-out.** 1,000 subscribers on `GET /event` over real TCP ([`sse`]) while
//!   events are published in process at 100 per second: every event must reach every
//!   subscriber exactly once, in order, and the publish-to-receive latency is reported.
//!   Half the subscribers then drop their connection for ten seconds while publishing goes
//!   on and reconnect with `Last-Event-ID`: they must miss nothing and see nothing twice.
//!
//! Policy, in exact words:
//!
//! - **Loopback only, bounded.** Servers listen on `127.0.0.1:0`; every loop is bounded in
//!   count and duration, so a run stops by itself.
//! - **Correctness fails the run; speed does not.** A lost, duplicated or misordered event,
//!   or a reply count that does not add up, makes the bench exit non-zero. A missed
//!   performance target is reported next to its figure.
//! - **Served as shipped.** Both routers are served by the `askbus` binary's accept loop
//!   (`askbus_server::serve_router`, default connection limits) on a tokio multi-thread
//!   runtime of their own. askbus is its HTTP API router (`askbus_http::router`, default
//!   settings: no auth, as on loopback) behind the site guard the binary puts in front of
//!   everything (`askbus_http::guarded`, or `guarded_and_logged` with the access log),
//!   without the web UI and `/mcp` routes the binary merges beside it, which no request
//!   here reaches.
//! - **One machine.** The load generator, the servers and the SSE clients share the same
//!   cores; the figures say so, and say how busy the processors were meanwhile, with this
//!   bench and with other processes ([`cpu`]).
//!
//! Without `--bench` (that is, under `cargo test --all-targets`) the bench runs a smoke
//! version that needs no `wrk`: a few hundred replies and 50 subscribers for a second.
//!
//! # The benches
//!
//! Each has its own docs, follows the policy above, and ends with [`target`] lines, which
//! `cargo xtask bench` gathers into one table once every bench ran:
//!
//! - `http_load`: reply throughput and SSE fan-out, as above (and what metrics and the
//!   access log cost);
//! - `shared_load`: two hubs sharing one Redis, against bare Redis streams;
//! - `resume_load`: reply to agent resumed over HTTP, against a `GET /health` round trip;
//! - `webhook_load`: what outbound webhooks add to a reply, and deliveries per second.

pub mod baseline;
pub mod cpu;
pub mod reply;
pub mod sse;
pub mod stats;
pub mod target;
pub mod wrk;

mod serve;

pub use serve::{Served, StatusCounts, StatusTally};
pub use target::Target;

/// Sets this process's memory up as the `askbus` binary does
/// ([`askbus_server::turn_off_huge_pages`]): the benches allocate with mimalloc as it does,
/// and serve askbus (and their baselines) in process. A refusal is said, not fatal.
pub fn memory_as_the_binary() {
    if let Err(error) = askbus_server::turn_off_huge_pages() {
        eprintln!("transparent huge pages stay on: {error}");
    }
}

/// Installs the `askbus` binary's logging (its `text` format, `info` and up) as the global
/// subscriber, writing into a sink: a server hosted here pays for each access line's
/// formatting as the binary does, and prints nothing.
///
/// # Panics
///
/// When a global subscriber is already set.
pub fn log_into_sink() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            askbus_server::DEFAULT_LOG_FILTER,
        ))
        .with_ansi(false)
        .with_writer(std::io::sink)
        .event_format(askbus_server::LogLines::text())
        .init();
}

/// Why a load test could not run or could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// `wrk` is missing; the message says how to get it.
    #[error("wrk is not installed: {0}")]
    WrkUnavailable(String),
    /// `wrk` ran but failed.
    #[error("wrk failed ({status}): {stderr}")]
    WrkFailed {
        /// How it exited.
        status: std::process::ExitStatus,
        /// What it said.
        stderr: String,
    },
    /// `wrk`'s report lacks a figure the bench needs.
    #[error("cannot read wrk's report: no {missing} in\n{output}")]
    WrkReport {
        /// The figure that was not found.
        missing: &'static str,
        /// The whole report.
        output: String,
    },
    /// Writing wrk's files or running a program failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
