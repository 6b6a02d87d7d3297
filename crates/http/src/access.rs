//! One access line per request, and a request id in every log line of it.
//!
//! An operator reading logs asks "what came in, how did it end, how long did it take", and
//! to follow one request through everything it logged. So every request gets an id: the
//! client's `x-request-id` when it sent a usable one (a proxy's, to join both logs), else a
//! fresh ULID; the response carries it back in `x-request-id`. The request runs inside a
//! `request` span holding the id, the method and the **route template**
//! (`/question/{id}/reply`: never the raw path, which holds ids and would make every line
//! unique), so every line logged while serving it names them, and as the work of that id
//! ([`askbus_bus::with_request_id`]), so every event it publishes carries it as
//! `requestID`. When the response's head is
//! ready, one `info` line of target `askbus::access` says its status and how long it took
//! (for a stream: until it opened). Tokens and bodies are never logged.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// The header that carries a request's id, both ways.
pub const REQUEST_ID: &str = "x-request-id";

/// The longest client-given id kept; a longer (or non-printable) one is replaced.
const MAX_CLIENT_ID: usize = 64;

/// The longest method logged.
const MAX_METHOD: usize = 16;

/// Logs `request`'s access line and runs it in its span; see the module docs. A
/// middleware for [`axum::middleware::from_fn`]: layer it on the router that holds every
/// route (after they are added, so that the matched route template is known).
///
/// ```
/// let app: axum::Router = axum::Router::new()
///     .route("/hello", axum::routing::get(|| async { "hello" }))
///     .layer(axum::middleware::from_fn(askbus_http::access_log));
/// # drop(app);
/// ```
pub async fn log(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request
        .headers()
        .get(REQUEST_ID)
        .filter(|id| usable(id))
        .cloned()
        .unwrap_or_else(fresh_id);
    // Methods are tokens, but an extension method may be long: a line stays short.
    let method = request.method().as_str();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("(no route)", MatchedPath::as_str);
    // The span records its fields when made: borrowing them from the request is enough.
    let span = tracing::info_span!(
        "request",
        id = id.to_str().unwrap_or_default(),
        method = %method.get(..MAX_METHOD).unwrap_or(method),
        route = %route
    );
    let cause: std::sync::Arc<str> = id.to_str().unwrap_or_default().into();
    let mut response = askbus_bus::with_request_id(cause, next.run(request))
        .instrument(span.clone())
        .await;
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    // No message: the span already names the method and route, and formatting them a
    // second time was about a tenth of what logging a request costs.
    span.in_scope(|| {
        tracing::info!(
            target: "askbus::access",
            status,
            ms = elapsed.as_secs_f64() * 1000.0,
        );
    });
    response.headers_mut().insert(REQUEST_ID, id);
    response
}

/// Whether a client's id may be kept: short, printable ASCII, no spaces.
fn usable(id: &HeaderValue) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty() && bytes.len() <= MAX_CLIENT_ID && bytes.iter().all(u8::is_ascii_graphic)
}

fn fresh_id() -> HeaderValue {
    HeaderValue::from_str(&ulid::Ulid::generate().to_string())
        .unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}
