//! The histories of a hub without a store: its sessions' records, kept in memory from the
//! bus, within [`HistoryLimits`].
//!
//! The bus's order is the order of a session's steps and requests (both are published on
//! it), so the records are appended in the bus's order, each at the next position. The
//! history is an [`Observer`] of the bus: it is told of each event as it is published,
//! under the bus's publish lock, so it misses none however many go by, a read after a
//! publish includes it, and no task is woken for each event (a task subscribed to the bus
//! did this before, and could fall behind). Locks nest bus -> history; a reader takes the
//! history's alone.
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
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use askbus_bus::{Bus, Envelope, Observer};
use askbus_store::{HistoryLimit, HistoryPage, KeptHistory};

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
    /// Histories of the events published on `bus` from now on, for as long as they live.
    pub(crate) fn start(bus: &Bus, limits: HistoryLimits) -> Arc<Self> {
        let history = Arc::new(Self {
            limits,
            state: Mutex::new(State {
                position: 0,
                sessions: HashMap::new(),
                idle: BTreeMap::new(),
                waiting: BTreeMap::new(),
                records: 0,
                bytes: 0,
            }),
        });
        bus.observe(&(Arc::clone(&history) as Arc<dyn Observer>));
        history
    }

    /// A page of the session's records (see [`HistoryPage`]), at most `limit`, oldest
    /// first.
    pub(crate) fn page(&self, session_id: &str, page: HistoryPage, limit: usize) -> Vec<Entry> {
        let events = match self.state().sessions.get(session_id) {
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

    fn state(&self) -> MutexGuard<'_, State> {
        // Every mutation leaves the state consistent, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Records each event as it is published.
impl Observer for MemoryHistory {
    fn observe(&self, envelope: &Envelope) {
        self.state().read(envelope, self.limits);
    }
}

impl State {
    /// Appends the record `envelope` stands for, if any, to its session; then drops whole
    /// sessions while over the memory bounds (see the module docs).
    fn read(&mut self, envelope: &Envelope, limits: HistoryLimits) {
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
