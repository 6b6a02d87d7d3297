//! Which request caused an event: the id an HTTP request carried (`x-request-id`), handed
//! to every event published while that request is served.
//!
//! An operator who sees `question.replied` on the event stream asks "which call did that?",
//! and the answer is in the access log under the request's id. The bus knows nothing of
//! HTTP, and the code that publishes (the registry, deep under a reply) should not pass an
//! id through every call for it, so the id travels beside the work, not through it: the
//! server runs each request's future inside [`with_request_id`], and [`Bus::publish`]
//! stamps every envelope it makes in that future with the id
//! ([`Envelope::request_id`]). Its JSON then carries `"requestID"` beside `properties`.
//!
//! The policy, in exact words: an event has a request id if and only if it was published
//! by the future run in [`with_request_id`], on its task, or by work run on the request's
//! behalf in [`with_request_id_now`] (over a shared store, the events of this server's own
//! requests, published when their changes come back through the store's log). Events
//! published elsewhere have none: by a timer (a timeout, a reminder), by a task the
//! request spawned, by another server of a shared store (it reaches this bus as a recorded
//! event), or read back from a [`Journal`](crate::Journal) after a restart (the record
//! keeps the properties only).
//!
//! [`Bus::publish`]: crate::Bus::publish
//! [`Envelope::request_id`]: crate::Envelope::request_id
//!
//! ```
//! use askbus_bus::{Bus, Event, with_request_id};
//!
//! #[derive(Clone, serde::Serialize)]
//! struct Pinged;
//! impl Event for Pinged {
//!     const TYPE: &'static str = "demo.pinged";
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let bus = Bus::new();
//! let mut events = bus.subscribe_all();
//! with_request_id("req-7".into(), async { bus.publish(Pinged) }).await;
//! bus.publish(Pinged);
//!
//! use tokio_stream::StreamExt;
//! let caused = events.next().await.unwrap().unwrap();
//! assert_eq!(caused.request_id(), Some("req-7"));
//! assert!(caused.json().ends_with(r#","requestID":"req-7"}"#));
//! let uncaused = events.next().await.unwrap().unwrap();
//! assert_eq!(uncaused.request_id(), None);
//! # }
//! ```

use std::future::Future;
use std::sync::Arc;

use tokio::task::futures::TaskLocalFuture;

tokio::task_local! {
    /// The id of the request whose future is being polled, if it runs in
    /// [`with_request_id`].
    static REQUEST_ID: Arc<str>;
}

/// Runs `future` as the work of request `id`: every event published while it is polled
/// carries `id` (see the module docs). The future is a named type, so that a tower
/// service can return it without boxing.
pub fn with_request_id<F: Future>(id: Arc<str>, future: F) -> TaskLocalFuture<Arc<str>, F> {
    REQUEST_ID.scope(id, future)
}

/// Runs `work` now as the work of request `id`, as [`with_request_id`] runs a future, or
/// as nobody's work for `None`: for what publishes on behalf of a request, later, from
/// another task (over a shared store, a request's events are published when its change
/// comes back through the store's log, on the follower's task), if a request caused it.
pub fn with_request_id_now<R>(id: Option<Arc<str>>, work: impl FnOnce() -> R) -> R {
    match id {
        Some(id) => REQUEST_ID.sync_scope(id, work),
        None => work(),
    }
}

/// The id of the request being served here, if any: the one [`with_request_id`] gave the
/// future being polled on this task. What a log format reads to name the request in every
/// line of it.
pub fn current_request_id() -> Option<Arc<str>> {
    REQUEST_ID.try_with(Arc::clone).ok()
}
