//! A typed, non-blocking broadcast bus with a replayable history: the event backbone of
//! askbus.
//!
//! Publishers announce what happened (`question.asked`, `question.replied`, …); any number
//! of subscribers (UIs, SSE streams, loggers) watch. The bus knows nothing about questions
//! or HTTP; it only moves [`Event`]s. Its policy, in exact words:
//!
//! - [`Bus::publish`] never blocks and never fails the caller. Having no subscriber is not
//!   an error.
//! - A slow subscriber never slows a publisher. When it falls too far behind it receives
//!   [`Lagged(n)`](Lagged), with `n` the number of events it missed, and then continues
//!   with the oldest event still buffered. It is never silently skipped ahead.
//! - Every event gets an ascending [`EventId`] (`evt_` + ULID). The bus keeps a bounded
//!   history of recent events, so [`Bus::subscribe_from`] can resume after a cursor with
//!   exactly the events that followed it: no gap, no duplicate, even while others publish.
//!   A cursor older than the history is an error ([`ReplayError`]), never a partial replay.
//! - An [`Envelope`] is allocated once per event and shared by every subscriber; its JSON
//!   form is serialised at most once.
//! - A bus may be given a [`Journal`] that records every event in publish order (a durable
//!   store); [`Bus::resume`] rebuilds the history from that record after a restart, so
//!   cursors issued before it still resume with no gap, and new ids continue above old ones.
//! - An [`Observer`] sees every event as it is published, in order, none missed, without
//!   a task or a channel of its own: what counts events (metrics) uses it.
//! - An event published while a request is served ([`with_request_id`]) carries that
//!   request's id ([`Envelope::request_id`]), so a client can tell which call caused it.
//!
//! ```
//! use askbus_bus::{Bus, Event};
//! use tokio_stream::StreamExt;
//!
//! #[derive(Clone, serde::Serialize)]
//! struct Deployed {
//!     service: String,
//! }
//! impl Event for Deployed {
//!     const TYPE: &'static str = "demo.deployed";
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let bus = Bus::new();
//! let first = bus.publish(Deployed { service: "api".into() });
//! bus.publish(Deployed { service: "web".into() });
//!
//! // A client that saw `first` resumes right after it.
//! let mut resumed = bus.subscribe_from(first).unwrap();
//! let next = resumed.next().await.unwrap().unwrap();
//! assert_eq!(next.json().contains(r#""service":"web""#), true);
//! assert_eq!(next.event_type(), "demo.deployed");
//! # }
//! ```

mod bus;
mod cause;
mod event;
mod id;

pub use bus::{
    Bus, BusConfig, Journal, Lagged, Observer, ReplayError, Subscription, TypedSubscription,
};
pub use cause::{current_request_id, with_request_id, with_request_id_now};
pub use event::{Envelope, Event};
pub use id::{EventId, EventKind, Id, IdGenerator, IdKind, ParseIdError};
