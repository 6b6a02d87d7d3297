//! How long the store takes to make writes durable, and how many it fails: measured in one
//! place, around whichever backend the server opened.
//!
//! An operator whose replies slow down asks first whether the store is the cause. Every
//! write (an ask, an outcome, an agent step, the bus's record of an event, the outbox's
//! bookkeeping) goes through [`Store::write`], so [`MeteredStore`] wraps a store (a [`StoreLayer`]) and times
//! each write from the moment it is queued until its [`Ack`] completes, then tells a
//! [`WriteMeter`] the backend, the operation ([`Write::operation`]), the time and whether
//! it failed. It measures writes nobody waits for too ([`Ack::observed`]), and reads not
//! at all (a failing store fails its writes as well, and `/ready` reads it).
//!
//! The meter is a trait so that this crate knows no metrics library: the HTTP crate's
//! `/metrics` implements it. The wrapper adds one boxed closure per write, and a task for a
//! write whose ack is dropped unfinished.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//!
//! use askbus_store::{
//!     EventRecord, MemoryStore, MeteredStore, Store, Write, WriteMeter,
//! };
//!
//! #[derive(Default)]
//! struct Seen(Mutex<Vec<(&'static str, &'static str, bool)>>);
//!
//! impl WriteMeter for Seen {
//!     fn written(&self, backend: &'static str, operation: &'static str, _: Duration, failed: bool) {
//!         self.0.lock().unwrap().push((backend, operation, failed));
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let seen = Arc::new(Seen::default());
//! let store = MeteredStore::new(Arc::new(MemoryStore::new()), "memory", seen.clone());
//! let event = EventRecord {
//!     id: "evt_01JZ6Q3V8R5M2K7D4T9WXYZABC".into(),
//!     event_type: "demo.pinged".into(),
//!     session_id: None,
//!     properties: "{}".into(),
//! };
//! store.write(Write::Append(event)).await.unwrap();
//! assert_eq!(*seen.0.lock().unwrap(), [("memory", "append", false)]);
//! # }
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{Ack, Store, StoreLayer, Write};

/// Told of every write a [`MeteredStore`] made durable or failed.
pub trait WriteMeter: Send + Sync + 'static {
    /// A write of `operation` ([`Write::operation`]) to the `backend` store took `took`
    /// from its queueing to its ack, and `failed` (the store answered an error, or none in
    /// time) or not.
    fn written(&self, backend: &'static str, operation: &'static str, took: Duration, failed: bool);
}

/// A [`Store`] that tells a [`WriteMeter`] how each of its writes went; see the module
/// docs.
pub struct MeteredStore {
    /// The store measured.
    inner: Arc<dyn Store>,
    /// Its name, as the meter is told it (`sqlite`, `redis`, `memory`).
    backend: &'static str,
    /// Told of each write.
    meter: Arc<dyn WriteMeter>,
}

impl MeteredStore {
    /// `inner`, named `backend`, telling `meter` of each write.
    pub fn new(inner: Arc<dyn Store>, backend: &'static str, meter: Arc<dyn WriteMeter>) -> Self {
        Self {
            inner,
            backend,
            meter,
        }
    }
}

impl Write {
    /// The write's name, as metrics label it: `insert`, `resolve`, `append` (the bus's
    /// record of an event), `event` (a session's agent step), `audit` (an audit entry of
    /// its own), `enqueue` or `attempted` (the outbox's).
    pub fn operation(&self) -> &'static str {
        match self {
            Self::Insert(_) => "insert",
            Self::Resolve { .. } => "resolve",
            Self::Append(_) => "append",
            Self::Event(_) => "event",
            Self::Audit(_) => "audit",
            Self::Enqueue(_) => "enqueue",
            Self::Attempted { .. } => "attempted",
        }
    }
}

impl StoreLayer for MeteredStore {
    fn inner(&self) -> &dyn Store {
        &*self.inner
    }

    fn write(&self, write: Write) -> Ack {
        let (backend, operation) = (self.backend, write.operation());
        let meter = Arc::clone(&self.meter);
        let queued = Instant::now();
        self.inner.write(write).observed(move |result| {
            meter.written(backend, operation, queued.elapsed(), result.is_err());
        })
    }
}
