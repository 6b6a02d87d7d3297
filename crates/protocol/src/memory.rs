//! The histories of a hub without a store: its sessions' records, kept in memory from the
//! bus, within [`HistoryLimits`].
//!
//! The bus's order is the order of a session's steps and requests (both are published on
//! it), so the records are appended in the bus's order, each at the next position. A task
//! reads the bus as events come, so a session nobody reads loses nothing however many
//! events go by; every read catches up first too, so a read after a publish includes it.
//!
//! What is kept is the bus's event itself (shared with the bus, nothing copied), and a
//! record is built from it only when a reader asks ([`TimelineEvent`]): building an asked
//! request's record, its questions in the seeds' JSON shape, costs several times what the
//! rest of an ask does, and most records are never read.
//!
//! Memory is bounded twice, in records and in bytes (each record counted as its event's
//! JSON). Each session keeps about its newest
//! [`records_per_session`](HistoryLimits::records_per_session) records within
//! [`bytes_per_session`](HistoryLimits::bytes_per_session), trimmed a batch at a time as a
//! store trims. Past [`records_in_memory`](HistoryLimits::records_in_memory) records or
//! [`bytes_in_memory`](HistoryLimits::bytes_in_memory) bytes in all, whole sessions are
//! dropped: **first those with nothing pending, the one that recorded nothing for longest
//! first; a session with a request waiting for a human only once no other is left**, so a
//! flood of other sessions never empties the timeline beside a pending question. (Whether
//! a session waits is told by its records: a request asked and not yet ended.) A stream
//! resumed after records that were dropped is told to resync.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use askbus_bus::{Bus, Envelope, EventId, Lagged, Subscription};
use askbus_store::{HistoryLimit, HistoryPage, KeptHistory};
use futures_util::{FutureExt, StreamExt};

use crate::record::{Mark, TimelineEvent};
use crate::transcript::{Entry, HistoryLimits};

/// Every session's records, written from a bus.
pub(crate) struct MemoryHistory {
    /// Within these.
    limits: HistoryLimits,
    /// Everything mutable.
    state: Mutex<State>,
}

/// What the lock protects.
struct State {
    /// To subscribe again after a lag.
    bus: Bus,
    /// Every bus event since creation, read on demand.
    subscription: Subscription,
    /// The last event read (or the bus head at creation).
    cursor: EventId,
    /// The position of the last record appended.
    position: u64,
    /// Each session's records.
    sessions: HashMap<Arc<str>, SessionRecords>,
    /// The sessions with nothing pending, by the position of their newest record: the
    /// first is the one that recorded nothing for longest, the first dropped.
    idle: BTreeMap<u64, Arc<str>>,
    /// The sessions with a request pending, likewise: dropped only once `idle` is empty.
    waiting: BTreeMap<u64, Arc<str>>,
    /// How many records every session holds together.
    records: usize,
    /// How many bytes those records count.
    bytes: usize,
    /// Events lost to a lag the bus's history could not cover.
    lost: u64,
}

/// One session's records.
#[derive(Default)]
struct SessionRecords {
    /// Oldest first, each with its position and size: the events, whose records are built
    /// when read.
    records: KeptHistory<Envelope>,
    /// Requests its records show asked and not ended (asked before these histories began,
    /// a request's end counts for nothing).
    pending: usize,
}

impl MemoryHistory {
    /// Histories of the events published on `bus` from now on, read by a task of their own
    /// when a Tokio runtime is there to run it.
    pub(crate) fn start(bus: &Bus, limits: HistoryLimits) -> Arc<Self> {
        let subscription = bus.subscribe_all();
        let cursor = subscription.start();
        let history = Arc::new(Self {
            limits,
            state: Mutex::new(State {
                bus: bus.clone(),
                subscription,
                cursor,
                position: 0,
                sessions: HashMap::new(),
                idle: BTreeMap::new(),
                waiting: BTreeMap::new(),
                records: 0,
                bytes: 0,
                lost: 0,
            }),
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(read_as_published(
                bus.subscribe_all(),
                Arc::downgrade(&history),
            ));
        }
        history
    }

    /// A page of the session's records (see [`HistoryPage`]), at most `limit`, oldest
    /// first.
    pub(crate) fn page(&self, session_id: &str, page: HistoryPage, limit: usize) -> Vec<Entry> {
        let events = match self.caught_up().sessions.get(session_id) {
            Some(session) => session.records.page(page, limit),
            None => return Vec::new(),
        };
        // Built outside the lock: the bus's writers never wait for a reader's JSON.
        events
            .into_iter()
            .map(|(position, event)| Entry {
                position,
                record: TimelineEvent::of(&event).map(TimelineEvent::record),
            })
            .collect()
    }

    /// Events lost to a lag; see [`Transcripts::lost_events`](crate::Transcripts::lost_events).
    pub(crate) fn lost_events(&self) -> u64 {
        self.caught_up().lost
    }

    /// The state, after reading every event published so far.
    fn caught_up(&self) -> MutexGuard<'_, State> {
        // Every mutation leaves the state consistent, so a poisoned lock is still usable.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.catch_up(self.limits);
        state
    }
}

impl State {
    /// Reads every event already published. Never waits: the subscription is polled without
    /// a waker, and an event whose publish has returned is already in its buffer.
    fn catch_up(&mut self, limits: HistoryLimits) {
        while let Some(item) = self.subscription.next().now_or_never() {
            match item {
                None => return,
                Some(Ok(envelope)) => self.read(&envelope, limits),
                Some(Err(Lagged(missed))) => match self.bus.subscribe_from(self.cursor) {
                    Ok(subscription) => self.subscription = subscription,
                    Err(_) => {
                        self.lost += missed;
                        self.subscription = self.bus.subscribe_all();
                        self.cursor = self.subscription.start();
                    }
                },
            }
        }
    }

    /// Appends the record `envelope` stands for, if any, to its session; then drops whole
    /// sessions while over the memory bounds (see the module docs).
    fn read(&mut self, envelope: &Envelope, limits: HistoryLimits) {
        self.cursor = envelope.id();
        let Some(event) = TimelineEvent::of(envelope) else {
            return;
        };
        let (session_id, mark) = (Arc::clone(event.session_id), event.mark());
        self.position += 1;
        let position = self.position;
        let size = envelope.json().len();
        let session = self.sessions.entry(Arc::clone(&session_id)).or_default();
        if let Some(newest) = session.records.newest() {
            let index = if session.pending > 0 {
                &mut self.waiting
            } else {
                &mut self.idle
            };
            index.remove(&newest);
        }
        match mark {
            Mark::Asked => session.pending += 1,
            Mark::Ended => session.pending = session.pending.saturating_sub(1),
            Mark::Step => {}
        }
        let limit = HistoryLimit {
            records: limits.records_per_session.max(1),
            bytes: limits.bytes_per_session.max(1),
        };
        let (records, bytes) = session
            .records
            .push(position, envelope.clone(), size, limit);
        self.records = self.records + 1 - records;
        self.bytes = self.bytes + size - bytes;
        let index = if session.pending > 0 {
            &mut self.waiting
        } else {
            &mut self.idle
        };
        index.insert(position, session_id);
        while self.records > limits.records_in_memory || self.bytes > limits.bytes_in_memory {
            let Some((_, quietest)) = self.idle.pop_first().or_else(|| self.waiting.pop_first())
            else {
                return;
            };
            if let Some(dropped) = self.sessions.remove(&quietest) {
                self.records -= dropped.records.len();
                self.bytes -= dropped.records.bytes();
            }
        }
    }
}

/// Reads `history`'s bus as events are published, until the history is dropped (or the
/// bus): what wakes it is only a reason to catch up.
async fn read_as_published(mut news: Subscription, history: Weak<MemoryHistory>) {
    while news.next().await.is_some() {
        let Some(history) = history.upgrade() else {
            return;
        };
        drop(history.caught_up());
    }
}
