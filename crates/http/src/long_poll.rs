//! Long polls (`GET /question/{id}/wait`, `GET /approval/{id}/wait`): how agents that are not
//! in this process wait for a human without holding a thread or a connection forever.
//!
//! A wait is an async future: dropping it (the client went away, the time is up, the server
//! shuts down) leaves the request pending. Its length is what the client asks, capped by
//! [`HttpConfig::max_wait`](crate::HttpConfig::max_wait), and it ends at once on shutdown.

use std::future::Future;
use std::time::Duration;

use serde::Deserialize;

use crate::AppState;
use crate::error::ApiError;

/// The `?timeout=` of a long poll.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct WaitQuery {
    /// Seconds to wait at most (default 30; capped by the server, 120 s by default).
    timeout: Option<f64>,
    /// Accepted for OpenCode clients, ignored.
    #[allow(dead_code)]
    directory: Option<String>,
}

/// How long a wait lasts when the client does not say.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

impl WaitQuery {
    /// The wait the client asked for, capped by the server.
    ///
    /// # Errors
    ///
    /// 400 for a negative or non-finite timeout.
    pub(crate) fn limit(&self, state: &AppState) -> Result<Duration, ApiError> {
        let asked = match self.timeout {
            None => DEFAULT_WAIT,
            Some(seconds) => Duration::try_from_secs_f64(seconds).map_err(|_| {
                ApiError::bad_request("`timeout` must be a non-negative number of seconds")
            })?,
        };
        Ok(asked.min(state.inner.config.max_wait))
    }
}

/// `outcome`, if it arrives within `limit` and before shutdown.
pub(crate) async fn long_poll<T>(
    state: &AppState,
    limit: Duration,
    outcome: impl Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        // An outcome ready now is answered, even during shutdown.
        biased;
        waited = tokio::time::timeout(limit, outcome) => waited.ok(),
        () = state.inner.shutdown.cancelled() => None,
    }
}
