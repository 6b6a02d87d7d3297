//! Session histories: what each session did, in the order it did it, kept in the store.
//!
//! A chat UI shows a session as a timeline (the agent's steps, the questions and approvals
//! asked, their outcomes) and must show the same timeline after a reload, after a restart
//! of the server, and through any server sharing the store. So the store keeps, per
//! session, the records of that timeline, **written as they happen and in the same step
//! as the change they record**: a request's insert appends its record (the request as
//! asked), a winning resolution appends its outcome (a losing one appends nothing), and
//! [`Write::Event`](crate::Write::Event) appends an agent step. Each record is a
//! [`ChangeKind`], the JSON the change log uses too, at a **position** that ascends with
//! every record of the store, across restarts and, in Redis, across servers (it is the
//! change's number in the change log there): a reader asks for a session's records after
//! the last position it has.
//!
//! The policy, in exact words:
//!
//! - **One order.** A session's records are in the order their writes took effect, which
//!   is the order they were queued: a step recorded before a question is asked is before
//!   the question.
//! - **Bounded per session, in records and in bytes.** A session keeps its newest records,
//!   as many as fit in its [`HistoryLimit`]: at most
//!   [`with_history_limit`](crate::SqliteStore::with_history_limit) records
//!   ([`DEFAULT_HISTORY_LIMIT`] by default) and
//!   [`with_history_bytes`](crate::SqliteStore::with_history_bytes) bytes
//!   ([`DEFAULT_HISTORY_BYTES`], each record counted as the length of its JSON), but always
//!   its newest record. Older ones are deleted a batch at a time, once a session is an
//!   eighth over either limit ([`history_slack`]), until it is within both. So a history
//!   read costs at most about that much, whatever an agent posts.
//! - **Read a page at a time.** [`Store::history`](crate::Store::history) answers a
//!   [`HistoryPage`] of at most as many records as asked, so that no read holds the store
//!   for long.
//! - **Kept while the session is alive.** A session's history is deleted by
//!   [`Store::forget_quiet_histories`](crate::Store::forget_quiet_histories) once its newest
//!   record is older than the retention period *and* none of its requests is pending;
//!   [`sweep`](crate::sweep) does that beside deleting old resolved requests
//!   ([`forget_quiet_histories_older_than`](crate::forget_quiet_histories_older_than)). A session
//!   with a pending request keeps its history whatever its age.

use std::collections::VecDeque;
#[cfg(any(feature = "sqlite", feature = "redis"))]
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::ChangeKind;

/// How many records a session's history keeps by default (see the module docs).
pub const DEFAULT_HISTORY_LIMIT: usize = 1000;

/// How many bytes of records (their JSON) a session's history keeps by default (see the
/// module docs): 16 MiB.
pub const DEFAULT_HISTORY_BYTES: usize = 16 * 1024 * 1024;

/// Something a session did that is not a request change (an agent step), as its history
/// and the change log keep it: an event type and its JSON properties, which the store does
/// not look inside.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionEvent {
    /// The session it belongs to.
    pub session_id: String,
    /// The event's stable type name (`agent.step`).
    pub event_type: String,
    /// The event's properties, as JSON.
    pub properties: String,
}

/// Which records of a session's history one [`Store::history`](crate::Store::history)
/// read answers: a page of them, so that no read holds a store (SQLite's one writer thread,
/// Redis's one thread) for long, whatever a history holds.
///
/// A reader going forward asks [`From`](Self::From) the last record it has: if that record
/// comes back first, nothing after it was trimmed meanwhile (trimming deletes a history's
/// oldest records, never others), and the page continues it without a gap. A reader going
/// backward, [`Before`](Self::Before) the oldest record it has, never has a gap: a page
/// ends early where trimming left off.
///
/// # Examples
///
/// ```
/// use askbus_store::{HistoryPage, MemoryStore, SessionEvent, Store, Write};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store = MemoryStore::new();
/// for n in 0..5 {
///     let step = SessionEvent {
///         session_id: "s".into(),
///         event_type: "agent.step".into(),
///         properties: format!(r#"{{"n":{n}}}"#),
///     };
///     store.write(Write::Event(step)).await.unwrap();
/// }
/// let newest = store.history("s", HistoryPage::Before(u64::MAX), 2).await.unwrap();
/// let older = store.history("s", HistoryPage::Before(newest[0].position), 2).await.unwrap();
/// assert_eq!(older.len(), 2);
/// assert!(older[1].position < newest[0].position);
/// let on = store.history("s", HistoryPage::From(older[1].position), 10).await.unwrap();
/// assert_eq!(on[0], older[1]);
/// assert_eq!(on[1..], newest);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryPage {
    /// The oldest records at or after this position (`0`: from the first one).
    From(u64),
    /// The newest records before this position (`u64::MAX`: the newest of all).
    Before(u64),
}

/// One record of a session's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRecord {
    /// Where it is: ascending with every record of the store (see the module docs).
    pub position: u64,
    /// What happened: a request inserted, its winning outcome, or an event.
    pub entry: ChangeKind,
}

/// How much of each session's history is kept: about its newest `records` records, and of
/// those no more than about `bytes` bytes (see the module docs).
///
/// # Examples
///
/// ```
/// use askbus_store::HistoryLimit;
///
/// let limit = HistoryLimit { records: 200, ..HistoryLimit::default() };
/// assert_eq!(limit.bytes, 16 * 1024 * 1024);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimit {
    /// Records kept. Default: [`DEFAULT_HISTORY_LIMIT`].
    pub records: usize,
    /// Bytes kept, counting each record as the length of its JSON. Default:
    /// [`DEFAULT_HISTORY_BYTES`].
    pub bytes: usize,
}

/// How many records past its `limit` a history may grow before it is trimmed back to the
/// limit (and how many bytes past its byte limit): trimming a batch at a time costs one
/// trim per batch, and moves the start of the history (which every resumed reader checks)
/// once per batch, not at every record.
pub fn history_slack(limit: usize) -> usize {
    (limit / 8).max(1)
}

impl Default for HistoryLimit {
    fn default() -> Self {
        Self {
            records: DEFAULT_HISTORY_LIMIT,
            bytes: DEFAULT_HISTORY_BYTES,
        }
    }
}

impl HistoryLimit {
    /// How many records, and how many bytes, a history may hold before it is trimmed: a
    /// batch over its limit ([`history_slack`]).
    pub fn trimmed_past(&self) -> (usize, usize) {
        (
            self.records.saturating_add(history_slack(self.records)),
            self.bytes.saturating_add(history_slack(self.bytes)),
        )
    }

    /// Whether a history of `records` records and `bytes` bytes is a batch over its limit:
    /// time to trim it.
    pub fn exceeded_by(&self, records: usize, bytes: usize) -> bool {
        let (most_records, most_bytes) = self.trimmed_past();
        records > most_records || bytes > most_bytes
    }

    /// Whether a history of `records` records and `bytes` bytes is to lose its oldest
    /// record as it is trimmed: it is over either limit, and that is not its only record
    /// (a history keeps its newest record, whatever its size).
    pub fn over(&self, records: usize, bytes: usize) -> bool {
        records > 1 && (records > self.records || bytes > self.bytes)
    }
}

/// A session's history kept in memory (a [`MemoryStore`](crate::MemoryStore)'s, and that of
/// a hub without a store): its records oldest first, each at its position and with its
/// size, trimmed as a store trims.
#[derive(Debug, Clone)]
pub struct KeptHistory<T> {
    /// Position, record and size, ascending by position.
    records: VecDeque<(u64, T, usize)>,
    /// The sum of the sizes.
    bytes: usize,
}

impl<T> Default for KeptHistory<T> {
    fn default() -> Self {
        Self {
            records: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<T: Clone> KeptHistory<T> {
    /// Appends `record` at `position` (above every position kept), `size` bytes; once the
    /// history is a batch over `limit`, drops its oldest records until it is within.
    /// Answers how many records, and how many bytes, it dropped.
    pub fn push(
        &mut self,
        position: u64,
        record: T,
        size: usize,
        limit: HistoryLimit,
    ) -> (usize, usize) {
        self.records.push_back((position, record, size));
        self.bytes += size;
        if !limit.exceeded_by(self.records.len(), self.bytes) {
            return (0, 0);
        }
        let (mut records, mut bytes) = (0, 0);
        while limit.over(self.records.len(), self.bytes)
            && let Some((_, _, size)) = self.records.pop_front()
        {
            self.bytes -= size;
            records += 1;
            bytes += size;
        }
        (records, bytes)
    }

    /// The records `page` names, at most `limit`, oldest first, each with its position.
    pub fn page(&self, page: HistoryPage, limit: usize) -> Vec<(u64, T)> {
        let range = match page {
            HistoryPage::From(from) => {
                let start = self
                    .records
                    .partition_point(|(position, ..)| *position < from);
                start..self.records.len().min(start.saturating_add(limit))
            }
            HistoryPage::Before(before) => {
                let end = self
                    .records
                    .partition_point(|(position, ..)| *position < before);
                end.saturating_sub(limit)..end
            }
        };
        self.records
            .range(range)
            .map(|(position, record, _)| (*position, record.clone()))
            .collect()
    }

    /// How many records it keeps.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// How many bytes its records take.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The position of its newest record.
    pub fn newest(&self) -> Option<u64> {
        self.records.back().map(|(position, ..)| *position)
    }
}

/// A [`HistoryLimit`] the store's writer reads while its opener may still set it (the
/// stores' `with_history_limit` and `with_history_bytes`): it applies to the records
/// written from then on.
#[cfg(any(feature = "sqlite", feature = "redis"))]
#[derive(Debug)]
pub(crate) struct SharedHistoryLimit {
    /// [`HistoryLimit::records`].
    records: AtomicUsize,
    /// [`HistoryLimit::bytes`].
    bytes: AtomicUsize,
}

#[cfg(any(feature = "sqlite", feature = "redis"))]
impl Default for SharedHistoryLimit {
    fn default() -> Self {
        let limit = HistoryLimit::default();
        Self {
            records: AtomicUsize::new(limit.records),
            bytes: AtomicUsize::new(limit.bytes),
        }
    }
}

#[cfg(any(feature = "sqlite", feature = "redis"))]
impl SharedHistoryLimit {
    /// The limit now.
    pub(crate) fn load(&self) -> HistoryLimit {
        HistoryLimit {
            records: self.records.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }

    /// Keeps about `records` records per session, at least one.
    pub(crate) fn set_records(&self, records: usize) {
        self.records.store(records.max(1), Ordering::Relaxed);
    }

    /// Keeps about `bytes` bytes per session, at least one.
    pub(crate) fn set_bytes(&self, bytes: usize) {
        self.bytes.store(bytes.max(1), Ordering::Relaxed);
    }
}
