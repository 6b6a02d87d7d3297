//! [`StoreLayer`]: a store in front of another, changing how it writes or how its change
//! log reads, and passing every other call on.
//!
//! A wrapper that measures writes ([`MeteredStore`](crate::MeteredStore)), or a test's store
//! that holds acknowledgements or the change log back, changes one or two of the [`Store`]
//! methods. Implementing [`StoreLayer`] gives it the rest: every [`Store`] method forwards
//! to [`inner`](StoreLayer::inner) unless the layer overrides [`write`](StoreLayer::write)
//! or [`change_log`](StoreLayer::change_log), so a method added to [`Store`] is forwarded
//! by every layer at once instead of being written again in each.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! use askbus_store::{Ack, EventRecord, MemoryStore, Store, StoreLayer, Write};
//!
//! /// Counts writes, and stores them in memory.
//! struct Counted(MemoryStore, AtomicUsize);
//!
//! impl StoreLayer for Counted {
//!     fn inner(&self) -> &dyn Store {
//!         &self.0
//!     }
//!     fn write(&self, write: Write) -> Ack {
//!         self.1.fetch_add(1, Ordering::Relaxed);
//!         self.0.write(write)
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let counted = Arc::new(Counted(MemoryStore::new(), AtomicUsize::new(0)));
//! // Used as any store is: behind `dyn Store`.
//! let store: Arc<dyn Store> = counted.clone();
//! let event = EventRecord { id: "evt_1".into(), event_type: "x".into(), session_id: None, properties: "{}".into() };
//! store.write(Write::Append(event)).await.unwrap();
//! assert_eq!(counted.1.load(Ordering::Relaxed), 1);
//! assert_eq!(store.recent_events(10).await.unwrap().len(), 1);
//! # }
//! ```

use crate::{
    Ack, AuditRecord, BoxFuture, ChangeLog, Delivery, DeliveryQuery, EventRecord, HistoryPage,
    HistoryRecord, Loaded, RequestKind, Store, StoredRequest, Write,
};

/// A store in front of [`inner`](Self::inner): see the module docs. Every [`Store`] method
/// it does not override here goes to the inner store.
pub trait StoreLayer: Send + Sync + 'static {
    /// The store behind this one.
    fn inner(&self) -> &dyn Store;

    /// Queues `write` (see [`Store::write`]); by default on the inner store.
    fn write(&self, write: Write) -> Ack {
        self.inner().write(write)
    }

    /// The change log (see [`Store::change_log`]); by default the inner store's.
    fn change_log(&self) -> Option<&dyn ChangeLog> {
        self.inner().change_log()
    }
}

impl<L: StoreLayer> Store for L {
    fn write(&self, write: Write) -> Ack {
        StoreLayer::write(self, write)
    }

    fn requests(&self, kind: RequestKind, retain_resolved: usize) -> BoxFuture<'_, Loaded> {
        self.inner().requests(kind, retain_resolved)
    }

    fn find_by_call<'a>(
        &'a self,
        kind: RequestKind,
        session_id: &'a str,
        call_id: &'a str,
    ) -> BoxFuture<'a, Option<StoredRequest>> {
        self.inner().find_by_call(kind, session_id, call_id)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<StoredRequest>> {
        self.inner().get(id)
    }

    fn recent_events(&self, limit: usize) -> BoxFuture<'_, Vec<EventRecord>> {
        self.inner().recent_events(limit)
    }

    fn forget_resolved(&self, resolved_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        self.inner().forget_resolved(resolved_before_ms, limit)
    }

    fn history<'a>(
        &'a self,
        session_id: &'a str,
        page: HistoryPage,
        limit: usize,
    ) -> BoxFuture<'a, Vec<HistoryRecord>> {
        self.inner().history(session_id, page, limit)
    }

    fn forget_quiet_histories(&self, quiet_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        self.inner().forget_quiet_histories(quiet_before_ms, limit)
    }

    fn audit_entries(&self, after_seq: u64, limit: usize) -> BoxFuture<'_, Vec<AuditRecord>> {
        self.inner().audit_entries(after_seq, limit)
    }

    fn seal_audit(&self, seals: Vec<(u64, String)>) -> BoxFuture<'_, ()> {
        self.inner().seal_audit(seals)
    }

    fn claim_deliveries(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Vec<Delivery>> {
        self.inner().claim_deliveries(now_ms, lease_ms, limit)
    }

    fn deliveries(&self, query: DeliveryQuery) -> BoxFuture<'_, Vec<Delivery>> {
        self.inner().deliveries(query)
    }

    fn pending_deliveries(&self) -> BoxFuture<'_, u64> {
        self.inner().pending_deliveries()
    }

    fn forget_deliveries(&self, settled_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        self.inner().forget_deliveries(settled_before_ms, limit)
    }

    fn change_log(&self) -> Option<&dyn ChangeLog> {
        StoreLayer::change_log(self)
    }
}
