//! Paging of the pending lists, `GET /question` and `GET /approval`.
//!
//! Policy, in exact words: without `limit` a list is every pending request, as before
//! paging existed (OpenCode's `question.list` reads the whole list, so that stays the
//! default). With `limit` it is at most that many requests (1 to [`MAX_PAGE`]; a larger
//! `limit` is lowered to it), ascending by id, after the request id `after` if given: the
//! last id of the previous page. When more follow, the answer says where the next page
//! starts without changing the body, which stays the plain array OpenCode reads:
//! `Link: <…>; rel="next"` holds the next page's URL and `x-next-cursor` its `after`. No
//! such header: this page is the last. Ids ascend in creation order, so a client that
//! follows the cursor sees every request that stays pending meanwhile exactly once; new
//! requests come after it (on one server: over a shared store, a request another instance
//! asks meanwhile is ordered by that instance's clock, and may fall before the cursor). The
//! session filter keeps working with paging.
//!
//! Questions and approvals draw their ids from one ascending order, so either kind's id is
//! a cursor for both lists (a client merging both can page them from one position).

use std::sync::Arc;

use askbus_question::RequestId;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// The largest page a list answers, whatever `limit` asks.
pub(crate) const MAX_PAGE: usize = 1000;

/// The header naming the next page's cursor.
pub(crate) const NEXT_CURSOR: HeaderName = HeaderName::from_static("x-next-cursor");

/// The paging parameters of a list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// At most this many requests, 1 to 1000 (a larger value is lowered to 1000). Absent:
    /// every pending request, in one answer. When more follow, the answer has a
    /// `Link: <…>; rel="next"` and an `x-next-cursor` header.
    #[param(minimum = 1)]
    limit: Option<usize>,
    /// Only requests with a larger id: the last id of the previous page (its
    /// `x-next-cursor`). A question or an approval id: both kinds share one order.
    after: Option<String>,
}

/// A checked [`PageQuery`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Page {
    /// Most requests to answer; `usize::MAX` for all.
    limit: usize,
    /// Only ids above this one.
    after: Option<RequestId>,
}

/// A list answer: the requests as a JSON array, and where the next page starts, if one does.
pub(crate) struct Paged<T> {
    /// The page.
    items: Vec<Arc<T>>,
    /// The `Link` and `x-next-cursor` headers, when more follow.
    next: HeaderMap,
}

impl PageQuery {
    /// The page asked for.
    ///
    /// # Errors
    ///
    /// 400 for a `limit` of 0 or an `after` that is no request id.
    pub(crate) fn page(&self) -> Result<Page, ApiError> {
        let limit = match self.limit {
            None => usize::MAX,
            Some(0) => return Err(ApiError::bad_request("`limit` must be at least 1")),
            Some(limit) => limit.min(MAX_PAGE),
        };
        let after = self
            .after
            .as_deref()
            .map(|after| {
                after.parse::<RequestId>().map_err(|_| {
                    ApiError::bad_request(
                        "`after` must be a request id (`que_…` or `apr_…`): the last id of the previous page",
                    )
                })
            })
            .transpose()?;
        Ok(Page { limit, after })
    }
}

impl Page {
    /// Only ids above this one.
    pub(crate) fn after(self) -> Option<RequestId> {
        self.after
    }

    /// How many requests to read: one more than the page, to know whether another follows.
    pub(crate) fn read(self) -> usize {
        self.limit.saturating_add(1)
    }

    /// The answer for `items`, read with [`read`](Self::read) from the list at `path`
    /// filtered by `session` (sent as the query parameter `session_param`).
    pub(crate) fn answer<T>(
        self,
        mut items: Vec<Arc<T>>,
        id: impl Fn(&T) -> RequestId,
        path: &str,
        session: Option<(&str, &str)>,
    ) -> Paged<T> {
        let mut next = HeaderMap::new();
        if items.len() > self.limit {
            items.truncate(self.limit);
            if let Some(last) = items.last() {
                let cursor = id(last).to_string();
                let limit = self.limit.to_string();
                let mut query = Vec::with_capacity(3);
                query.extend(session);
                query.extend([("limit", limit.as_str()), ("after", cursor.as_str())]);
                next = next_page(path, &query, &cursor);
            }
        }
        Paged { items, next }
    }
}

/// The headers of a page that another follows: `Link: <{path}?{query}>; rel="next"` (the
/// query URL-encoded) and `x-next-cursor: {cursor}`; none if the cursor cannot be a header
/// value.
pub(crate) fn next_page(path: &str, query: &[(&str, &str)], cursor: &str) -> HeaderMap {
    let mut next = HeaderMap::new();
    if let (Ok(query), Ok(cursor)) = (
        serde_urlencoded::to_string(query),
        HeaderValue::try_from(cursor),
    ) && let Ok(link) = HeaderValue::try_from(format!("<{path}?{query}>; rel=\"next\""))
    {
        next.insert(header::LINK, link);
        next.insert(NEXT_CURSOR, cursor);
    }
    next
}

/// The size a piece of a list's body grows to before it is sent (a piece holds at least
/// one request).
const CHUNK_BYTES: usize = 64 * 1024;

impl<T: Serialize + Send + Sync + 'static> IntoResponse for Paged<T> {
    /// The array, written a piece at a time as the client reads: a whole list (the
    /// default, for OpenCode) is never one buffer in memory, however many requests are
    /// pending or however slowly the client reads (it holds the requests, which are in
    /// memory anyway, and one piece of their JSON).
    fn into_response(self) -> Response {
        let Self { items, next } = self;
        // The next request to write, or `None` once the array is closed.
        let chunks = futures_util::stream::unfold(Some(0), move |from| {
            let piece = from.map(|from| {
                let mut chunk = Vec::with_capacity(CHUNK_BYTES);
                chunk.push(if from == 0 { b'[' } else { b',' });
                let mut next = from;
                while next < items.len() && (next == from || chunk.len() < CHUNK_BYTES) {
                    if next > from {
                        chunk.push(b',');
                    }
                    if let Err(error) = serde_json::to_writer(&mut chunk, &items[next]) {
                        return (Err(std::io::Error::other(error)), None);
                    }
                    next += 1;
                }
                if next == items.len() {
                    chunk.push(b']');
                    (Ok(chunk), None)
                } else {
                    (Ok(chunk), Some(next))
                }
            });
            std::future::ready(piece)
        });
        let mut response = Body::from_stream(chunks).into_response();
        response.headers_mut().extend(next);
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}
