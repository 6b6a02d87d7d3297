//! Cross-origin access for browser UIs served from elsewhere.
//!
//! The API is authorised by a bearer header, so CORS never needs credentials and never
//! needs a wildcard: it allows exactly the configured origins. An origin is checked when
//! it is made ([`CorsOrigin::from_str`]), so a configuration that builds a router is a
//! configuration that serves.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// One browser origin allowed to call the API: `http://` or `https://`, a host, an
/// optional port, nothing after (`https://ui.example.com`, `http://localhost:5173`).
///
/// # Examples
///
/// ```
/// use askbus_http::CorsOrigin;
///
/// let origin: CorsOrigin = "http://localhost:5173".parse().unwrap();
/// assert_eq!(origin.to_string(), "http://localhost:5173");
/// assert!("*".parse::<CorsOrigin>().is_err());
/// assert!("https://ui.example.com/".parse::<CorsOrigin>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorsOrigin(HeaderValue);

/// A string that is not an origin [`CorsOrigin`] accepts; displays why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidOrigin(String);

impl FromStr for CorsOrigin {
    type Err = InvalidOrigin;

    fn from_str(origin: &str) -> Result<Self, Self::Err> {
        let host = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"));
        let well_formed = host.is_some_and(|host| {
            !host.is_empty() && !host.contains(['/', '*', '?', '#', '@']) && !host.contains(' ')
        });
        well_formed
            .then(|| HeaderValue::from_str(origin).ok())
            .flatten()
            .map(Self)
            .ok_or_else(|| InvalidOrigin(origin.to_owned()))
    }
}

impl CorsOrigin {
    /// The origin as a header value, as browsers send it in `Origin`.
    pub(crate) fn header_value(&self) -> &HeaderValue {
        &self.0
    }
}

impl fmt::Display for CorsOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Only visible ASCII gets past `from_str`.
        f.write_str(self.0.to_str().unwrap_or_default())
    }
}

impl fmt::Display for InvalidOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a browser origin: expected http:// or https://, a host and an \
             optional port, and nothing else (for example http://localhost:5173)",
            self.0
        )
    }
}

impl std::error::Error for InvalidOrigin {}

/// CORS for exactly `origins`, or none.
pub(crate) fn cors_layer(origins: &[CorsOrigin]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(
                origins.iter().map(|origin| origin.0.clone()),
            ))
            .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("last-event-id"),
                HeaderName::from_static("x-opencode-directory"),
                HeaderName::from_static("x-opencode-workspace"),
            ])
            // So a browser client refused for a quota can read how long to wait, and a
            // paged list says where the next page starts (see `paging`).
            .expose_headers([
                header::RETRY_AFTER,
                header::LINK,
                crate::paging::NEXT_CURSOR,
            ])
            .max_age(Duration::from_secs(3600)),
    )
}
