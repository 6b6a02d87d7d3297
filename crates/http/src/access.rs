//! One access line per request, and a request id in every log line of it.
//!
//! An operator reading logs asks "what came in, how did it end, how long did it take", and
//! to follow one request through everything it logged. So every request gets an id: the
//! client's `x-request-id` when it sent a usable one (a proxy's, to join both logs), else a
//! fresh ULID; the response carries it back in `x-request-id`. The request runs as the
//! work of that id ([`askbus_bus::with_request_id`]), so every event it publishes carries
//! it as `requestID`, and a log format that reads it there (the server's, `LogLines` in
//! `askbus-server`) names it in every line logged while serving it. When the response's
//! head is ready, one `info` line of target `askbus::access` says the method, the **route
//! template** (`/question/{id}/reply`: never the raw path, which holds ids and would make
//! every line unique), the status and how long it took (for a stream: until it opened). A
//! request whose client left before its answer gets its line all the same, status 499 (so
//! does one the server dropped unanswered: shutdown past its grace period).
//! Tokens and bodies are never logged.
//!
//! No span per request: tracing-subscriber formats a span's fields when it is made and
//! enters it at every poll, which cost more than everything else the access line does
//! (see `LogLines`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::extract::MatchedPath;
use axum::http::{HeaderName, HeaderValue, Method, Request};
use axum::response::Response;
use tokio::task::futures::TaskLocalFuture;
use tower::{Layer, Service};

/// The header that carries a request's id, both ways.
pub const REQUEST_ID: &str = "x-request-id";

/// [`REQUEST_ID`] as a header name, made once: a name given as a string is parsed again
/// at every lookup.
const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static(REQUEST_ID);

/// The longest client-given id kept; a longer (or non-printable) one is replaced.
const MAX_CLIENT_ID: usize = 64;

/// The longest method logged.
const MAX_METHOD: usize = 16;

/// Logs each request's access line and runs it as the work of its id; see the module
/// docs. Layer it on the router that holds every route (after they are added, so that the
/// matched route template is known). A tower layer rather than
/// `axum::middleware::from_fn`, which boxes the inner service and its future for every
/// request. In front of a [`SiteGuard`](crate::SiteGuard), as the binary serves, use
/// [`guarded_and_logged`](crate::guarded_and_logged): one layer instead of two.
///
/// ```
/// let app: axum::Router = axum::Router::new()
///     .route("/hello", axum::routing::get(|| async { "hello" }))
///     .layer(askbus_http::AccessLog);
/// # drop(app);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AccessLog;

impl<S> Layer<S> for AccessLog {
    type Service = Logged<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Logged { inner }
    }
}

/// A service whose requests are logged ([`AccessLog`]).
#[derive(Debug, Clone)]
pub struct Logged<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for Logged<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = TaskLocalFuture<Arc<str>, LoggedResponse<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let started = Instant::now();
        let id = match request
            .headers()
            .get(&REQUEST_ID_HEADER)
            .filter(|id| usable(id))
        {
            Some(id) => id.clone(),
            None => {
                // Handed on in the request too, for work the service runs on tasks of its
                // own (MCP's tool calls), which the task-local id does not reach.
                let id = fresh_id();
                request.headers_mut().insert(&REQUEST_ID_HEADER, id.clone());
                id
            }
        };
        let method = request.method().clone();
        let route = request.extensions().get::<MatchedPath>().cloned();
        let cause: Arc<str> = id.to_str().unwrap_or_default().into();
        let response = LoggedResponse {
            response: self.inner.call(request),
            started,
            method,
            route,
            id: Some(id),
            answered: false,
        };
        askbus_bus::with_request_id(cause, response)
    }
}

pin_project_lite::pin_project! {
    /// A logged request's response on its way ([`AccessLog`]), polled as the work of the
    /// request's id, the access line included.
    pub struct LoggedResponse<F> {
        #[pin]
        response: F,
        started: Instant,
        method: Method,
        route: Option<MatchedPath>,
        // Taken when the response is ready, to go back in its `x-request-id`.
        id: Option<HeaderValue>,
        // Whether the response's head was ready (and its line written).
        answered: bool,
    }

    impl<F> PinnedDrop for LoggedResponse<F> {
        /// A request whose client went away before its answer (a `/wait` longer than the
        /// client's own timeout, a dropped connection) still gets its line, status 499 as
        /// proxies write it, so that the log shows every request that came in.
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if !*this.answered {
                access_line(this.method, this.route.as_ref(), CLIENT_CLOSED, this.started.elapsed());
            }
        }
    }
}

/// The status an access line gives a request whose client left before its answer (nginx's
/// "client closed request"; no response was sent).
const CLIENT_CLOSED: u16 = 499;

/// Writes the access line of a request (see the module docs).
fn access_line(method: &Method, route: Option<&MatchedPath>, status: u16, elapsed: Duration) {
    // Methods are tokens, but an extension method may be long: a line stays short.
    let method = method.as_str();
    tracing::info!(
        target: "askbus::access",
        method = method.get(..MAX_METHOD).unwrap_or(method),
        route = route.map_or("(no route)", MatchedPath::as_str),
        status,
        ms = elapsed.as_secs_f64() * 1000.0,
    );
}

impl<F, E> Future for LoggedResponse<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut result = ready!(this.response.poll(cx));
        *this.answered = true;
        if let Ok(response) = &mut result {
            let status = response.status().as_u16();
            access_line(
                this.method,
                this.route.as_ref(),
                status,
                this.started.elapsed(),
            );
            if let Some(id) = this.id.take() {
                response.headers_mut().insert(REQUEST_ID_HEADER, id);
            }
        }
        Poll::Ready(result)
    }
}

/// Whether a client's id may be kept: short, printable ASCII, no spaces.
fn usable(id: &HeaderValue) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty() && bytes.len() <= MAX_CLIENT_ID && bytes.iter().all(u8::is_ascii_graphic)
}

fn fresh_id() -> HeaderValue {
    let mut text = [0; ulid::ULID_LEN];
    HeaderValue::from_str(ulid::Ulid::generate().array_to_str(&mut text))
        .unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}
