//! The API's error shape on every error response, whichever layer or route made it.
//!
//! A timeout, a body limit, axum's own rejections and the MCP endpoint answer errors in
//! plain text; [`JsonErrors`] rewrites those into the shape every other error has. It is a
//! tower layer of its own rather than `axum::middleware::map_response`, which boxes the
//! inner future and clones the inner service for every request: the router and the site
//! guard each apply it, so that cost was paid twice on every reply, though nearly every
//! response is a success or JSON already. Here a response is only looked at as it passes,
//! and only an error to rewrite (its body read, a new one made) takes a boxed future.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::{Request, header};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use tower::{Layer, Service};

use crate::error::{ApiError, ErrorCode};
use crate::extract::read_body;
use crate::questions;

/// Rewrites error responses that are not JSON into the API's error shape; see the module
/// docs and [`json_errors`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JsonErrors;

impl<S> Layer<S> for JsonErrors {
    type Service = Shaped<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Shaped { inner }
    }
}

/// A service whose error responses are in the API's shape ([`JsonErrors`]).
#[derive(Debug, Clone)]
pub(crate) struct Shaped<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for Shaped<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ShapedResponse<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        ShapedResponse::Answering {
            response: self.inner.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// A response on its way through [`JsonErrors`].
    #[project = Step]
    pub(crate) enum ShapedResponse<F> {
        /// The inner service is answering.
        Answering { #[pin] response: F },
        /// Its answer was an error to rewrite, which reads the body it had.
        Rewriting { rewritten: BoxFuture<'static, Response> },
    }
}

impl<F, E> Future for ShapedResponse<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project() {
                Step::Answering { response } => {
                    let response = ready!(response.poll(cx))?;
                    if !needs_shape(&response) {
                        return Poll::Ready(Ok(response));
                    }
                    self.set(Self::Rewriting {
                        rewritten: Box::pin(json_errors(response)),
                    });
                }
                Step::Rewriting { rewritten } => return rewritten.as_mut().poll(cx).map(Ok),
            }
        }
    }
}

/// Whether `response` is an error whose body is not JSON.
fn needs_shape(response: &Response) -> bool {
    let status = response.status();
    (status.is_client_error() || status.is_server_error())
        && !questions::is_json(response.headers())
}

/// The last line of defence: an error response that is not JSON (from a layer such as the
/// timeout, from axum itself, or from the MCP endpoint) is rewritten into the API's error
/// shape, keeping its status and headers, and for a client error its words when it had a
/// short plain-text body (a server error's body may hold internals and is never passed on).
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let code = ErrorCode::from_status(status);
    let (mut parts, body) = response.into_parts();
    let said = read_body(body, MAX_PLAIN_ERROR)
        .await
        .ok()
        .filter(|_| status.is_client_error())
        .and_then(|bytes| String::from_utf8(bytes.to_vec()).ok())
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty() && !text.chars().any(char::is_control));
    let message = said.unwrap_or_else(|| {
        match code {
            ErrorCode::RequestTimeout => "the request took too long",
            ErrorCode::PayloadTooLarge => "the request body is larger than the server accepts",
            ErrorCode::NotFound => "no such route",
            ErrorCode::MethodNotAllowed => "this route does not accept this method",
            ErrorCode::Internal => "internal error",
            _ => "the request could not be handled",
        }
        .to_owned()
    });
    let (fresh, body) = ApiError::new(code, message).into_response().into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.extend(fresh.headers);
    Response::from_parts(parts, body)
}

/// Longest plain-text error body [`json_errors`] keeps as the message.
const MAX_PLAIN_ERROR: usize = 512;
