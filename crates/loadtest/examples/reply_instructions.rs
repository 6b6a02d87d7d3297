//! What one reply costs in instructions, for callgrind: the figures README's Performance
//! section quotes. A machine's speed drifts; an instruction count does not.
//!
//! ```sh
//! cargo build --profile profiling -p askbus-loadtest --example reply_instructions
//! for n in 5000 25000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \
//!     target/profiling/examples/reply_instructions obs $n
//! done
//! ```
//!
//! A run registers 25,000 pending questions, then sends `n` replies (`POST
//! /question/{id}/reply`, the `http_load` bench's body) through the router called in
//! process, on one current-thread runtime, so that the server's background tasks count
//! too. The cost of a reply is the difference of the totals of two runs (25,000 and 5,000
//! replies) divided by 20,000: the setup, the same in both, drops out.
//!
//! Modes, as the `http_load` bench serves them: `bare` (its baseline handler), `quiet`
//! (`--no-metrics`, no access log), `metrics` (metrics, no access log) and `obs` (as
//! shipped: metrics and the access line, formatted by the server's `text` format into a
//! sink). askbus is behind its site guard in each, as the binary serves it.

#![allow(clippy::print_stdout, reason = "an example's figures are its output")]

use std::process::ExitCode;

use askbus_bus::Bus;
use askbus_http::{HttpConfig, SiteGuard};
use askbus_loadtest::reply::{REPLY_BODY, reply_questions};
use askbus_question::RequestHub;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// The address the site guard is told the server listens on, and requests name.
const LISTEN: &str = "127.0.0.1:4717";

/// The questions registered: as many as the longest run replies to.
const QUESTIONS: usize = 25_000;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(Ok(replies))) = (args.next(), args.next().map(|n| n.parse())) else {
        eprintln!(
            "usage: reply_instructions bare|quiet|metrics|obs <replies, at most {QUESTIONS}>"
        );
        return ExitCode::FAILURE;
    };
    if replies > QUESTIONS {
        eprintln!("at most {QUESTIONS} replies");
        return ExitCode::FAILURE;
    }
    askbus_loadtest::log_into_sink();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds");
    match runtime.block_on(run(&mode, replies)) {
        Ok(ok) => {
            println!("{mode}: {ok} of {replies} replies answered 200");
            if ok == replies {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(problem) => {
            eprintln!("{problem}");
            ExitCode::FAILURE
        }
    }
}

async fn run(mode: &str, replies: usize) -> Result<usize, String> {
    let hub = RequestHub::new(Bus::new());
    let ids: Vec<String> = (0..QUESTIONS)
        .map(|_| {
            hub.questions()
                .ask("load-test", reply_questions())
                .submit()
                .map(|asked| asked.detach().id.to_string())
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let config = |metrics| HttpConfig {
        metrics,
        ..HttpConfig::default()
    };
    let guard = SiteGuard::new(LISTEN.parse().map_err(|e| format!("{e}"))?, &config(true));
    let shutdown = CancellationToken::new();
    let router = match mode {
        "bare" => askbus_loadtest::baseline::router(),
        "quiet" => askbus_http::guarded(askbus_http::router(hub, config(false), shutdown), guard),
        "metrics" => askbus_http::guarded(askbus_http::router(hub, config(true), shutdown), guard),
        "obs" => {
            askbus_http::guarded_and_logged(askbus_http::router(hub, config(true), shutdown), guard)
        }
        other => return Err(format!("no mode {other:?}: bare, quiet, metrics or obs")),
    };
    let mut ok = 0;
    for id in &ids[..replies] {
        let request = Request::post(format!("/question/{id}/reply"))
            .header("host", LISTEN)
            .header("content-type", "application/json")
            .body(Body::from(REPLY_BODY))
            .map_err(|e| e.to_string())?;
        let response = router
            .clone()
            .oneshot(request)
            .await
            .map_err(|e| e.to_string())?;
        if response.status() == StatusCode::OK {
            ok += 1;
        }
        // Let the background tasks run, as they would between requests.
        tokio::task::yield_now().await;
    }
    Ok(ok)
}
