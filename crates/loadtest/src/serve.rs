//! Serving a router on a loopback port, counting its responses by status.

use std::net::{Ipv4Addr, SocketAddr};
use std::ops::{Add, Sub};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use askbus_server::{ConnectionLimits, serve_router};
use axum::Router;
use axum::http::StatusCode;
use axum::response::Response;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::util::MapResponseLayer;

/// A router served on `127.0.0.1` at a port the system picked, until [`Served::stop`].
///
/// It is served by the `askbus` binary's own accept loop ([`serve_router`], default
/// [`ConnectionLimits`]) on the runtime that calls [`Served::start`]. Every response passes
/// one counting layer ([`StatusCounts`]); the baseline and askbus pay for it alike.
pub struct Served {
    /// Where it listens.
    address: SocketAddr,
    /// Responses by status, since start.
    counts: Arc<StatusCounts>,
    /// Cancelled by `stop`; also given to the router by callers whose streams must end.
    shutdown: CancellationToken,
    /// The serving task.
    task: JoinHandle<()>,
}

/// Responses counted by status, updated as they leave the router.
#[derive(Debug, Default)]
pub struct StatusCounts {
    /// 200.
    ok: AtomicU64,
    /// 404.
    not_found: AtomicU64,
    /// 409.
    conflict: AtomicU64,
    /// Every other status.
    other: AtomicU64,
}

/// A reading of [`StatusCounts`]; subtract two readings for what happened in between.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusTally {
    /// 200 responses.
    pub ok: u64,
    /// 404 responses.
    pub not_found: u64,
    /// 409 responses.
    pub conflict: u64,
    /// Responses with any other status.
    pub other: u64,
}

/// How long [`Served::stop`] lets connections finish before they are dropped.
const STOP_GRACE: Duration = Duration::from_secs(5);

impl Served {
    /// Binds `127.0.0.1:0` and serves `router` on the current runtime until `shutdown` is
    /// cancelled.
    ///
    /// # Errors
    ///
    /// The port cannot be bound.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn start(router: Router, shutdown: CancellationToken) -> std::io::Result<Self> {
        Self::start_at(|_| router, shutdown).await
    }

    /// [`Served::start`], with the router made for the address bound (askbus's site guard
    /// needs it).
    ///
    /// # Errors
    ///
    /// The port cannot be bound.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn start_at(
        router: impl FnOnce(SocketAddr) -> Router,
        shutdown: CancellationToken,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?;
        let router = router(address);
        let counts = Arc::new(StatusCounts::default());
        let counted = Arc::clone(&counts);
        let router = router.layer(MapResponseLayer::new(move |response: Response| {
            counted.record(response.status());
            response
        }));
        let limits = ConnectionLimits {
            shutdown_grace: STOP_GRACE,
            ..ConnectionLimits::default()
        };
        let server = serve_router(listener, router, limits, shutdown.clone());
        Ok(Self {
            address,
            counts,
            shutdown,
            task: tokio::spawn(server),
        })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:<port>` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Responses so far, by status.
    pub fn tally(&self) -> StatusTally {
        self.counts.tally()
    }

    /// Cancels the shutdown token, which stops accepting and ends open streams, and waits
    /// until every connection is closed (those still open after a few seconds are
    /// dropped).
    ///
    /// # Errors
    ///
    /// The serving task panicked.
    pub async fn stop(self) -> Result<(), tokio::task::JoinError> {
        self.shutdown.cancel();
        self.task.await
    }
}

impl StatusCounts {
    fn record(&self, status: StatusCode) {
        let counter = match status {
            StatusCode::OK => &self.ok,
            StatusCode::NOT_FOUND => &self.not_found,
            StatusCode::CONFLICT => &self.conflict,
            _ => &self.other,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn tally(&self) -> StatusTally {
        StatusTally {
            ok: self.ok.load(Ordering::Relaxed),
            not_found: self.not_found.load(Ordering::Relaxed),
            conflict: self.conflict.load(Ordering::Relaxed),
            other: self.other.load(Ordering::Relaxed),
        }
    }
}

impl StatusTally {
    /// Every response counted.
    pub fn total(&self) -> u64 {
        self.ok + self.not_found + self.conflict + self.other
    }
}

impl Add for StatusTally {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        Self {
            ok: self.ok + other.ok,
            not_found: self.not_found + other.not_found,
            conflict: self.conflict + other.conflict,
            other: self.other + other.other,
        }
    }
}

impl Sub for StatusTally {
    type Output = Self;

    fn sub(self, earlier: Self) -> Self {
        Self {
            ok: self.ok - earlier.ok,
            not_found: self.not_found - earlier.not_found,
            conflict: self.conflict - earlier.conflict,
            other: self.other - earlier.other,
        }
    }
}
