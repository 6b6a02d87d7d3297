//! `askbus probe`: a health check for images without curl.
//!
//! A container's `HEALTHCHECK` (and any supervisor that runs a command rather than an HTTP
//! request) runs the binary it already has: `askbus probe` reads the same `--listen` (or
//! `ASKBUS_LISTEN`) as the server it checks, asks that port on loopback (a server listening
//! on every address, `0.0.0.0`, is reached on `127.0.0.1`), and succeeds only on a `200`.
//! The probes are the routes orchestrators use: `GET /health` (the process answers) and,
//! with `--ready`, `GET /ready` (the store answers, and a server on Redis caught up). Both
//! are public, so the probe needs no token, and both pass the site guard without a
//! `Host` it knows.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// How long the probe waits for an answer: under a typical health check's own timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a probe failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Nothing answered within three seconds, or the connection failed.
    #[error("{url}: no answer")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What the HTTP client said.
        source: reqwest::Error,
    },
    /// The server answered, not with `200`.
    #[error("{url}: {status}")]
    NotHealthy {
        /// The URL asked.
        url: String,
        /// What it answered.
        status: reqwest::StatusCode,
    },
}

/// Asks the server listening on `listen` for `/health` (`/ready` when `ready`).
///
/// # Errors
///
/// [`ProbeError`] unless it answers `200` within three seconds.
pub async fn probe(listen: SocketAddr, ready: bool) -> Result<(), ProbeError> {
    let url = format!(
        "http://{}/{}",
        reachable(listen),
        if ready { "ready" } else { "health" }
    );
    let unreachable = |source| ProbeError::Unreachable {
        url: url.clone(),
        source,
    };
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .build()
        .map_err(unreachable)?;
    let response = client.get(&url).send().await.map_err(unreachable)?;
    match response.status() {
        reqwest::StatusCode::OK => Ok(()),
        status => Err(ProbeError::NotHealthy { url, status }),
    }
}

/// Where a local client reaches a server listening on `listen`: loopback (of the same
/// family) for the unspecified address, else `listen` itself.
fn reachable(listen: SocketAddr) -> SocketAddr {
    match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => (Ipv4Addr::LOCALHOST, listen.port()).into(),
        IpAddr::V6(ip) if ip.is_unspecified() => (Ipv6Addr::LOCALHOST, listen.port()).into(),
        _ => listen,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_server_on_every_address_is_probed_on_loopback() {
        let at = |text: &str| reachable(text.parse().unwrap()).to_string();
        assert_eq!(at("0.0.0.0:4717"), "127.0.0.1:4717");
        assert_eq!(at("[::]:4717"), "[::1]:4717");
        assert_eq!(at("10.1.2.3:80"), "10.1.2.3:80");
    }
}
