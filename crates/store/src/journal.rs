//! The bus's record of events in a store, and the bus rebuilt from it after a restart.

use std::sync::Arc;

use askbus_bus::{Bus, BusConfig, Envelope, Journal};

use crate::{EventRecord, Store, StoreError, Write};

/// Appends every event a bus publishes to a [`Store`], in publish order.
///
/// Each append is queued ([`Store::write`]) and not awaited: the publisher never waits for
/// the disk. The history is a record for resuming streams after a restart; what must be
/// durable before a human is told "done" (requests and outcomes) is awaited by the
/// registry's callers, not here.
#[derive(Clone)]
pub struct EventJournal {
    /// Where the events go.
    store: Arc<dyn Store>,
}

impl EventJournal {
    /// A journal appending to `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }
}

impl Journal for EventJournal {
    fn record(&self, envelope: &Envelope) {
        let record = EventRecord {
            id: envelope.id().to_string(),
            event_type: envelope.event_type().to_owned(),
            session_id: envelope.session_id().map(str::to_owned),
            properties: envelope.properties_json().to_owned(),
        };
        // The append happens in its place in the queue whether or not anyone waits for it.
        drop(self.store.write(Write::Append(record)));
    }
}

/// The bus of a server that keeps its events in `store`: its history is the newest
/// recorded events (so cursors handed out before a restart still resume with no gap), its
/// ids continue above them, and everything it publishes is recorded again.
///
/// # Errors
///
/// [`StoreError`] if the events cannot be read, or a recorded one is damaged.
pub async fn resume_bus(config: BusConfig, store: Arc<dyn Store>) -> Result<Bus, StoreError> {
    // One more than the history: the oldest becomes the oldest resumable cursor.
    let records = store
        .recent_events(config.history.saturating_add(1))
        .await?;
    let recorded = records
        .iter()
        .map(|record| {
            let id = record
                .id
                .parse()
                .map_err(|error| StoreError::Corrupt(format!("event id: {error}")))?;
            Envelope::recorded(
                id,
                &record.event_type,
                record.session_id.as_deref(),
                &record.properties,
            )
            .map_err(|error| StoreError::Corrupt(format!("event {}: {error}", record.id)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Bus::resume(
        config,
        recorded,
        Arc::new(EventJournal::new(store)),
    ))
}
