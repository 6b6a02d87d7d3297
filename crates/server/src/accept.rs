//! The accept loop: every TCP connection served by hyper's HTTP/1.1 server, with timers.
//!
//! `axum::serve` gives hyper no timer, and without one hyper cannot time out anything: a
//! client that opens a connection and sends half a request header holds a task and a
//! socket for as long as it likes. This loop builds each connection itself, with a
//! [`TokioTimer`], so hyper enforces a header read timeout; the router's own timeout
//! ([`askbus_http::HttpConfig::request_timeout`]) then bounds the body and the handler of
//! every non-streaming route.
//!
//! Policy, in exact words:
//!
//! - **Headers in time.** A request header (from its first byte to its blank line) must
//!   arrive within [`ConnectionLimits::header_read_timeout`], or the connection is closed
//!   without an answer. The same limit closes a keep-alive connection that stays idle that
//!   long between requests. It never applies while a response is being sent, so an event
//!   stream lives as long as its client keeps reading.
//! - **Responses taken in time.** A response the client stops taking (its socket stays
//!   full) is given up, and the connection dropped, once a write has waited
//!   [`ConnectionLimits::write_timeout`]. Without it, a client that asks for a large list
//!   and never reads would make the server hold the list for as long as it keeps the
//!   connection, and could do so on as many connections as it can open.
//! - **So many connections, no more.** At most [`ConnectionLimits::max_connections`]
//!   are open at once, whoever opened them and whether or not they sent anything yet; past
//!   that, the next client waits in the listen backlog until one closes. Without a cap, a
//!   client opening connections faster than the header timeout closes them would run the
//!   process out of file descriptors, and then the store, the probes and every other client
//!   would fail with it. The event streams' slots
//!   ([`askbus_http::HttpConfig::event_streams`]) are fewer, so streams never take every
//!   connection.
//! - **Shutdown.** Cancelling the token stops accepting at once; every connection is asked
//!   to close after its current response (idle ones close now), and the router's streams
//!   and long polls end on the same token. Connections still open after
//!   [`ConnectionLimits::shutdown_grace`] are dropped, so shutdown never hangs on a client.
//! - **Every answer is JSON.** hyper's own answers to a request it cannot parse (400,
//!   414, 431) are given the API's `{code, message}` body on their way out
//!   (`parse_errors.rs`).
//! - **No delay.** `TCP_NODELAY` is set on every connection: an event frame or a short
//!   answer leaves at once instead of waiting for the previous packet's acknowledgement.
//!
//! ```no_run
//! use askbus_server::{ConnectionLimits, serve_router};
//! use tokio::net::TcpListener;
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn example() -> std::io::Result<()> {
//! let listener = TcpListener::bind("127.0.0.1:0").await?;
//! let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
//! serve_router(listener, app, ConnectionLimits::default(), CancellationToken::new()).await;
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_io_timeout::TimeoutStream;
use tokio_util::sync::CancellationToken;

use crate::parse_errors::JsonParseErrors;

/// How often a server at its connection cap says so in its log, at most.
const FULL_WARNING_EVERY: Duration = Duration::from_secs(60);

/// Limits of the connections, enforced by the accept loop ([`serve_router`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use askbus_server::ConnectionLimits;
///
/// let limits = ConnectionLimits::default();
/// assert_eq!(limits.header_read_timeout, Duration::from_secs(10));
/// assert_eq!(limits.shutdown_grace, Duration::from_secs(5));
/// assert_eq!(limits.write_timeout, Duration::from_secs(60));
/// assert_eq!(limits.max_connections, 10_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Longest time a request header may take to arrive, and longest idle time of a
    /// keep-alive connection between requests. Default: 10 s.
    pub header_read_timeout: Duration,
    /// How long open connections may take to finish after shutdown begins before they are
    /// dropped. Default: 5 s.
    pub shutdown_grace: Duration,
    /// Longest time one write of a response may wait for the client to take more (its
    /// socket full); then the connection is dropped. A client that keeps reading does not
    /// meet it: the socket has room again once about half its send buffer (at most a few
    /// megabytes) is taken. Default: 60 s.
    pub write_timeout: Duration,
    /// Most connections open at once; the next waits until one closes. Default: 10,000
    /// (the server's flags size it from the open-files limit: `--max-connections`).
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
            write_timeout: Duration::from_secs(60),
            max_connections: 10_000,
        }
    }
}

/// Serves `app` over HTTP/1.1 on every connection `listener` accepts, within `limits`,
/// until `shutdown` is cancelled; then returns once every connection has closed, or once
/// the grace period has run out and the rest were dropped.
///
/// Failed accepts (a connection reset before it was accepted, too many open files) are
/// retried as `axum::serve` retries them, so they never stop the server.
///
/// # Cancel safety
///
/// Dropping the future drops every connection at once, without a graceful close.
pub async fn serve_router(
    mut listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let graceful = GracefulShutdown::new();
    // Owning the connection tasks lets the grace period end them: dropping the set aborts
    // whatever is still running.
    let mut connections = JoinSet::new();
    let room = Arc::new(Semaphore::new(limits.max_connections));
    let mut warned_full: Option<Instant> = None;
    loop {
        // A slot first: at the cap, the next client waits in the listen backlog.
        let slot = match Arc::clone(&room).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if warned_full.is_none_or(|at| at.elapsed() >= FULL_WARNING_EVERY) {
                    tracing::warn!(
                        "{} connections are open, the most this server holds \
                         (--max-connections): new ones wait until one closes",
                        limits.max_connections
                    );
                    warned_full = Some(Instant::now());
                }
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break,
                    Some(_) = connections.join_next(), if !connections.is_empty() => continue,
                    slot = Arc::clone(&room).acquire_owned() => {
                        slot.expect("the connection slots are never closed")
                    }
                }
            }
        };
        let stream = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            // Reap finished connections so the set only holds live ones.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            (stream, _) = axum::serve::Listener::accept(&mut listener) => stream,
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {error}");
        }
        let mut stream = TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.write_timeout));
        let connection = builder.serve_connection(
            TokioIo::new(JsonParseErrors::new(Box::pin(stream))),
            TowerToHyperService::new(app.clone()),
        );
        let connection = graceful.watch(connection);
        connections.spawn(async move {
            let _slot = slot;
            if let Err(error) = connection.await {
                // Header timeouts and clients that go away mid-request end up here.
                tracing::debug!("connection closed: {error}");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "connections still open after {:?}; dropping them",
            limits.shutdown_grace
        );
    }
    connections.shutdown().await;
}
