//! The change log: every change to the record, in the one order every reader sees.
//!
//! Several server instances over one store each keep their own in-memory registry (it
//! holds what cannot leave a process: the asking futures, the `wait` watchers, the timer).
//! They agree because the store *decides* and then *tells*: an insert or a winning
//! resolution is appended to the store's change log in the same atomic step that makes it
//! (one Lua script in Redis, one critical section in memory), and every instance applies
//! the log in order. A resolution that loses its race changes nothing and appends nothing,
//! so the log holds at most one outcome per request, after that request's insert.
//!
//! Readers follow the log with [`ChangeLog::read_after`] from a [`LogPosition`]. A reader
//! that starts takes [`ChangeLog::head`] *before* it loads the requests, then reads after
//! that head: a change made in between is both in what it loaded and in what it reads,
//! so applying a change must be idempotent (inserting a known request, or resolving a
//! resolved one, changes nothing).
//!
//! Changes are numbered 1, 2, 3, … with no gap, so a reader can tell that it missed
//! something. The log is bounded (the newest [`LOG_RETENTION`] changes, approximately in
//! Redis), a store can be wiped (a Redis restarted without persistence numbers from the
//! start again), and it can lose part of its record (a Redis log lost while a session's
//! history was kept: the next change of that session is numbered past the history's
//! newest, a gap). A reader whose position fell out of the log, is ahead of it, or finds
//! a gap gets [`StoreError::LogTrimmed`] instead of reading on silently, and must load the
//! requests again.

use std::fmt;
use std::time::Duration;

use crate::{BoxFuture, OutcomeRecord, RequestKind, RequestRecord, SessionEvent, StoreError};

/// How many changes a change log keeps (Redis trims to about this many).
pub const LOG_RETENTION: usize = 100_000;

/// A place in a [`ChangeLog`]: the number of the change it is at (changes are numbered
/// from 1 with no gap); reading after it yields every later change.
/// [`LogPosition::START`] is before every change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LogPosition(pub u64);

/// One change as the log tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Where it is in the log.
    pub position: LogPosition,
    /// What changed.
    pub kind: ChangeKind,
}

/// What a [`Change`] did.
///
/// Its serde form (`{"op": "inserted", …}` / `{"op": "resolved", …}`) is how a log that
/// keeps changes as text (Redis) writes them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ChangeKind {
    /// A request was recorded as pending.
    Inserted(RequestRecord),
    /// A pending request reached its outcome (the one resolution that won).
    Resolved {
        /// The request's kind.
        kind: RequestKind,
        /// The request's id.
        id: String,
        /// How it ended.
        outcome: OutcomeRecord,
    },
    /// Something else a session did (an agent step), recorded in its history: readers that
    /// keep no registry of it pass it on (a server publishes it on its bus).
    Event(SessionEvent),
    /// A logged change that cannot be read back (a damaged entry), with why. No reader can
    /// apply it; each reads on past it.
    #[serde(skip)]
    Unreadable(String),
}

/// A store's log of its changes, which several registries follow to stay in step.
///
/// Offered by stores that several instances can share ([`RedisStore`](crate::RedisStore),
/// and [`MemoryStore`](crate::MemoryStore) for registries in one process); see
/// [`Store::change_log`](crate::Store::change_log) and the module docs.
pub trait ChangeLog: Send + Sync {
    /// The position of the newest change (or [`LogPosition::START`]): reading after it
    /// yields every change made after this call.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be read.
    fn head(&self) -> BoxFuture<'_, LogPosition>;

    /// The changes after `after`, oldest first, at most `limit` of them; waits up to
    /// `wait` for the first one and answers an empty list if none came.
    ///
    /// # Errors
    ///
    /// [`StoreError::LogTrimmed`] when changes after `after` are no longer kept (load the
    /// requests again, then follow from a new [`head`](Self::head)), or the backend's
    /// error.
    fn read_after(
        &self,
        after: LogPosition,
        limit: usize,
        wait: Duration,
    ) -> BoxFuture<'_, Vec<Change>>;
}

impl LogPosition {
    /// Before every change.
    pub const START: Self = Self(0);

    /// The position of the change after this one.
    pub const fn next(self) -> Self {
        Self(self.0 + 1)
    }
}

impl ChangeKind {
    /// The change a log entry's (or a history record's) JSON stands for:
    /// [`Unreadable`](Self::Unreadable), with why, if it cannot be read back.
    #[cfg(any(feature = "sqlite", feature = "redis"))]
    pub(crate) fn read(json: &str) -> Self {
        // The stores write the tag first ([`LogEntry`]): the variant's own fields are then
        // read from the same object at once, the tag passed over as a field no variant
        // has. Reading it as a tagged enum first copies every field into a buffer, which
        // was most of the cost of following a log. Any other order takes that way.
        let read =
            if json.starts_with(r#"{"op":"inserted","#) {
                serde_json::from_str(json).map(Self::Inserted)
            } else if json.starts_with(r#"{"op":"resolved","#) {
                serde_json::from_str(json)
                    .map(|ResolvedEntry { kind, id, outcome }| Self::Resolved { kind, id, outcome })
            } else if json.starts_with(r#"{"op":"event","#) {
                serde_json::from_str(json).map(Self::Event)
            } else {
                serde_json::from_str(json)
            };
        read.unwrap_or_else(|error| Self::Unreadable(format!("{error}: {json}")))
    }

    /// The kind of request that changed, unless the change is no request's (an event) or
    /// unreadable.
    pub fn request_kind(&self) -> Option<RequestKind> {
        match self {
            Self::Inserted(request) => Some(request.kind),
            Self::Resolved { kind, .. } => Some(*kind),
            Self::Event(_) | Self::Unreadable(_) => None,
        }
    }
}

/// The fields of a [`ChangeKind::Resolved`], read on their own (see [`ChangeKind::read`]).
#[cfg(any(feature = "sqlite", feature = "redis"))]
#[derive(serde::Deserialize)]
struct ResolvedEntry {
    kind: RequestKind,
    id: String,
    outcome: OutcomeRecord,
}

/// A change as the stores write it (the change log's entries, a session history's
/// records): the JSON of its [`ChangeKind`], made from the write without copying it.
#[cfg(any(feature = "sqlite", feature = "redis"))]
#[derive(serde::Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum LogEntry<'a> {
    /// See [`ChangeKind::Inserted`].
    Inserted(&'a RequestRecord),
    /// See [`ChangeKind::Resolved`].
    Resolved {
        kind: RequestKind,
        id: &'a str,
        outcome: &'a OutcomeRecord,
    },
    /// See [`ChangeKind::Event`].
    Event(&'a SessionEvent),
}

#[cfg(any(feature = "sqlite", feature = "redis"))]
impl<'a> LogEntry<'a> {
    /// What `write` logs if it takes effect; `None` for an event appended to the bus's
    /// record or the outbox's bookkeeping, which change no request.
    pub(crate) fn of(write: &'a crate::Write) -> Option<Self> {
        use crate::Write;
        match write {
            Write::Insert(request) => Some(Self::Inserted(request)),
            Write::Resolve {
                kind, id, outcome, ..
            } => Some(Self::Resolved {
                kind: *kind,
                id,
                outcome,
            }),
            Write::Event(event) => Some(Self::Event(event)),
            Write::Append(_) | Write::Audit(_) | Write::Enqueue(_) | Write::Attempted { .. } => {
                None
            }
        }
    }

    /// The entry's JSON; plain data, it always serialises.
    pub(crate) fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl fmt::Display for LogPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "change {}", self.0)
    }
}

/// Checks that `changes`, read after `after`, continue it with no gap.
///
/// # Errors
///
/// [`StoreError::LogTrimmed`] when the first change is not the one after `after`.
pub(crate) fn check_continues(after: LogPosition, changes: &[Change]) -> Result<(), StoreError> {
    match changes.first() {
        Some(first) if first.position != after.next() => Err(StoreError::LogTrimmed { after }),
        _ => Ok(()),
    }
}
