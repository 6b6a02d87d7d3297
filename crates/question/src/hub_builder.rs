//! [`HubBuilder`]: the one way to make a [`RequestHub`] that is more than the in-memory
//! default.
//!
//! A hub over a store needs three steps in a fixed order: a bus resumed from the store's
//! event journal (so event cursors handed out before a restart still resume), then the
//! services loaded from the store's requests, then, for several instances, the follower of
//! the store's change log. Left to the caller, the first step was the one forgotten: the
//! hub kept its requests across a restart and its event stream did not. The builder takes
//! what differs (store, sharing, settings) and does the steps itself.

use std::sync::Arc;

use askbus_bus::{Bus, BusConfig};
use askbus_store::{Store, StoreError};

use crate::approval::ApprovalConfig;
use crate::hub::RequestHub;
use crate::service::QuestionConfig;

/// How to make a [`RequestHub`]: [`RequestHub::builder`], its settings, then
/// [`build`](Self::build).
///
/// Without a store the hub keeps everything in memory (as [`RequestHub::new`]). With one
/// ([`store`](Self::store): memory, SQLite or Redis, from `askbus_store`) it records every
/// request and outcome there and starts with what the store holds, its bus included;
/// [`shared`](Self::shared) makes it one of several instances over that store.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
///
/// use askbus_question::{QuestionConfig, RequestHub};
/// use askbus_store::MemoryStore;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store = Arc::new(MemoryStore::new());
/// let hub = RequestHub::builder()
///     .store(store)
///     .questions(QuestionConfig { retain_resolved: 100, ..QuestionConfig::default() })
///     .build()
///     .await
///     .expect("the store reads");
/// assert_eq!(hub.questions().pending_count(), 0);
/// # }
/// ```
#[derive(Default)]
#[must_use = "a builder makes nothing until `build` is awaited"]
pub struct HubBuilder {
    /// A bus to publish on, instead of one made from `bus_config` (or resumed from the
    /// store's journal).
    bus: Option<Bus>,
    /// The buffers of the bus the builder makes.
    bus_config: BusConfig,
    /// The question service's settings.
    questions: QuestionConfig,
    /// The approval service's settings.
    approvals: ApprovalConfig,
    /// Where requests are recorded; none keeps them in memory.
    store: Option<Arc<dyn Store>>,
    /// Whether other instances share `store`.
    shared: bool,
}

impl RequestHub {
    /// How to make a hub over a store, shared or not, with settings: see [`HubBuilder`].
    /// The one way beside [`new`](Self::new) (memory, default settings). Defined here,
    /// beside what it returns, so that `hub` does not import this module, which imports it.
    pub fn builder() -> HubBuilder {
        HubBuilder::default()
    }
}

impl std::fmt::Debug for HubBuilder {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("HubBuilder")
            .field("bus_config", &self.bus_config)
            .field("questions", &self.questions)
            .field("approvals", &self.approvals)
            .field("store", &self.store.is_some())
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

impl HubBuilder {
    /// Publish on `bus` instead of a bus the builder makes. With a store, the bus is then
    /// not resumed from the store's journal: give it one made with `askbus_store::resume_bus`
    /// if its events should survive a restart.
    pub fn bus(mut self, bus: Bus) -> Self {
        self.bus = Some(bus);
        self
    }

    /// Settings of the bus the builder makes (its history, its subscribers' capacity).
    pub fn bus_config(mut self, config: BusConfig) -> Self {
        self.bus_config = config;
        self
    }

    /// Settings of the question service.
    pub fn questions(mut self, config: QuestionConfig) -> Self {
        self.questions = config;
        self
    }

    /// Settings of the approval service.
    pub fn approvals(mut self, config: ApprovalConfig) -> Self {
        self.approvals = config;
        self
    }

    /// Record every request and outcome in `store`, and start with what it holds: pending
    /// requests are pending again, recent outcomes remembered, and the bus resumes from the
    /// store's event journal.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Be one of several instances sharing the [store](Self::store) (Redis; or a
    /// `MemoryStore` shared by hubs in one process): a request asked through any instance
    /// is listed, answered and cancelled through any other, its asker's future resolves
    /// wherever it waits, and every instance's bus carries the same request events in the
    /// same order, each request's outcome once.
    ///
    /// The hub starts with what the store holds, and a task of its own applies the
    /// store's change log from then on. The store decides every outcome: a reply that
    /// another instance beat completes its [`Durable`](crate::Durable) with
    /// [`DurableError::AlreadyResolved`](crate::DurableError::AlreadyResolved). A request
    /// shows on the bus once its insert came back through the log (within a round trip to
    /// the store), on this instance as on the others. Event ids are each bus's own, so an
    /// event stream cursor resumes on the instance that issued it: give each instance a
    /// [bus](Self::bus) of its own (`Bus::new()`) rather than one resumed from the store.
    pub fn shared(mut self) -> Self {
        self.shared = true;
        self
    }

    /// The hub.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the store cannot be read; [`StoreError::NotShared`] for
    /// [`shared`](Self::shared) without a store, or over a store without a change log
    /// (SQLite: one process per file).
    ///
    /// # Panics
    ///
    /// [`shared`](Self::shared), outside a Tokio runtime (its follower is spawned on it).
    pub async fn build(self) -> Result<RequestHub, StoreError> {
        let Some(store) = self.store else {
            if self.shared {
                return Err(StoreError::NotShared);
            }
            let bus = self
                .bus
                .unwrap_or_else(|| Bus::with_config(self.bus_config));
            return Ok(RequestHub::with_config(bus, self.questions, self.approvals));
        };
        let bus = match self.bus {
            Some(bus) => bus,
            None => askbus_store::resume_bus(self.bus_config, Arc::clone(&store)).await?,
        };
        if self.shared {
            RequestHub::shared(bus, self.questions, self.approvals, store).await
        } else {
            RequestHub::with_store(bus, self.questions, self.approvals, store).await
        }
    }
}
