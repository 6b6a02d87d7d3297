//! Where askbus keeps pending requests, their outcomes and the event history: in memory,
//! in an embedded SQLite file, or in Redis shared by several server instances.
//!
//! # Why a store, and what stays in memory
//!
//! The pending-request registry (`askbus-question`) is, and stays, the in-process authority
//! for everything that cannot leave the process: the oneshot channel an asking future
//! awaits, the `wait` watchers, the deadline index and its one timer task. A [`Store`] is
//! the *record* behind it: every request as asked, its single outcome, and every published
//! event. The library default is no store at all (the registry's own maps), so embedding
//! askbus pays nothing for durability it did not ask for. The server's default is
//! [`SqliteStore`]; several servers sharing requests use [`RedisStore`]; [`MemoryStore`] is
//! the reference implementation the others are tested against, and lets one process run
//! several registries over one shared record.
//!
//! # The policy, in exact words
//!
//! - **Writes are ordered and acknowledged.** [`Store::write`] never blocks: it queues the
//!   write and returns an [`Ack`], a future that completes once the write is *durable*
//!   (committed to the SQLite file, or executed by Redis). Writes take effect in the order
//!   they were queued, across all callers, so a caller that queues under a lock gets the
//!   lock's order in the store. Acknowledge a human (HTTP 200) only after the ack.
//! - **Exactly one outcome.** [`Write::Resolve`] is a conditional transition, `pending` →
//!   terminal, decided inside the store (SQLite `UPDATE … WHERE state = 'pending'`, one Lua
//!   script in Redis). Of any number of concurrent attempts, from any number of processes,
//!   exactly one gets [`Written::Resolved`]; every other gets
//!   [`Written::AlreadyResolved`] with the winner's state.
//! - **Idempotent ask.** A request may carry the `call_id` of the tool call that asked.
//!   [`Store::find_by_call`] returns the newest request of a `(kind, session, call_id)`, so
//!   an agent that re-asks after a restart is handed the stored outcome (or the request
//!   still pending) instead of prompting the human twice.
//! - **Event ids ascend across restarts.** Events are appended in publish order with their
//!   `evt_` ULID ids; [`Store::recent_events`] returns the newest of them, oldest first, so
//!   a restarted bus refills its history and continues with ids above the last one, and a
//!   client resuming with `Last-Event-ID` gets a gap-free replay.
//! - **Shared stores tell every reader the same story.** A store that several registries
//!   share ([`RedisStore`]; [`MemoryStore`] within one process) keeps a [`ChangeLog`]:
//!   each insert and each *winning* resolution is appended to it in the same atomic step
//!   that makes it, and registries follow it in order ([`Store::change_log`]; see the
//!   `log` module docs for how a reader starts without a gap).
//! - **Resolved requests are kept for a time, pending ones for good.** A resolved request
//!   stays (for [`Store::get`], the idempotent ask, reloading) until
//!   [`Store::forget_resolved`] deletes it; [`forget_resolved_older_than`], [`sweep`] and
//!   [`keep_resolved_for`] do that by age (the server keeps them 30 days by default).
//!   Pending requests are never deleted. The outbox's settled deliveries are kept as long
//!   after their last attempt ([`Store::forget_deliveries`], in the same sweep); pending
//!   ones are never deleted.
//! - **Every session has a history.** A request's insert, its winning outcome, and every
//!   [`Write::Event`] (an agent step) append a record to their session's history in the
//!   same atomic step, so the history is never behind or ahead of the requests;
//!   [`Store::history`] reads it, a page at a time. A history is bounded per session, in
//!   records and in bytes, and deleted once its session has been quiet for the retention
//!   period with nothing pending (see the `history` module docs).
//! - **Reads cost the writers little.** A read sees every write queued before it. A history
//!   is read a page at a time, as many records as the reader asks for, so the writes
//!   behind a history read wait for one page's query at most: SQLite skips the reads whose
//!   reader is gone and parses pages off its writer thread; Redis reads pages on a
//!   connection its writer never waits for. A write whose answer does not come in time
//!   fails with [`StoreError::Unresponsive`]: it may have been done.
//! - **Every winning resolution can leave an audit entry.** A [`Write::Resolve`] may carry
//!   the draft of an audit entry; when (and only when) it wins, the draft is appended to
//!   the audit log as its next entry (numbered 1, 2, 3, … with no gap, one sequence for
//!   every instance of a shared store) in the same atomic step, so an acknowledged answer
//!   is never without its entry. [`Store::audit_entries`] reads the log,
//!   [`Store::seal_audit`] sets an entry's seal once (the `askbus-audit` crate makes the
//!   drafts and the seals: the store does not look inside). Retention never deletes an
//!   entry.
//! - **Versioned schema.** Each backend records its schema version (SQLite
//!   `PRAGMA user_version`, Redis `{prefix}:schema`) and migrates forward on open; a store
//!   written by a newer askbus is refused, never guessed at.
//!
//! # The event record
//!
//! [`EventJournal`] is the bus's [`Journal`](askbus_bus::Journal): it appends every
//! published event to the store in publish order, and [`resume_bus`] builds the bus of
//! the next run from that record. It is kept apart from the session histories: it is a
//! bounded window of the newest events of every session, for resuming event streams,
//! while a history is one session's whole timeline, kept as long as the session lives.
//!
//! # Backends
//!
//! - [`SqliteStore`]: one writer thread owns the connection and commits **groups** of
//!   queued writes in one transaction (WAL, `synchronous = FULL`): every ack waits for an
//!   fsync, but one fsync serves every write that queued while the previous one ran, so
//!   throughput grows with load instead of being capped by the disk's sync latency. The
//!   file is locked exclusively: a second process opening it is refused.
//! - [`RedisStore`]: one writer task sends queued writes as one pipeline of Lua scripts,
//!   which also append the changes to the log stream `{prefix}:log`; a reader follows it
//!   with blocking `XREAD`s on a connection of its own. Durability is Redis's own
//!   (`appendonly`, `appendfsync`).
//! - [`MemoryStore`]: maps and the change log under a mutex; every ack is ready at once.
//!
//! [`MeteredStore`] wraps any of them to time its writes and count its failures, for
//! metrics ([`WriteMeter`]).
//!
//! ```
//! use askbus_store::{
//!     MemoryStore, OutcomeRecord, OutcomeState, RequestKind, RequestRecord, Store, Write,
//!     Written,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let store = MemoryStore::new();
//! let request = RequestRecord {
//!     id: "que_01JZ6Q3V8R5M2K7D4T9WXYZABC".into(),
//!     kind: RequestKind::Question,
//!     session_id: "session-1".into(),
//!     call_id: Some("call-7".into()),
//!     created_at_ms: 1_700_000_000_000,
//!     expires_at_ms: None,
//!     body: r#"{"questions":[]}"#.into(),
//! };
//! store.write(Write::Insert(request.clone())).await.unwrap();
//!
//! let answer = OutcomeRecord::new(OutcomeState::Replied, r#"[["Yes"]]"#, 1_700_000_001_000);
//! let resolve = || Write::Resolve {
//!     kind: RequestKind::Question,
//!     id: request.id.clone(),
//!     outcome: answer.clone(),
//!     audit: None,
//!     outbox: None,
//! };
//! assert_eq!(store.write(resolve()).await.unwrap(), Written::Resolved);
//! assert_eq!(
//!     store.write(resolve()).await.unwrap(),
//!     Written::AlreadyResolved(OutcomeState::Replied)
//! );
//!
//! // The agent asks again with the same tool call: the answer is already there.
//! let again = store.find_by_call(RequestKind::Question, "session-1", "call-7").await.unwrap();
//! assert_eq!(again.unwrap().outcome.unwrap().body, r#"[["Yes"]]"#);
//! # }
//! ```

mod ack;
mod history;
mod journal;
mod layer;
mod log;
mod memory;
mod metered;
mod outbox;
#[cfg(feature = "redis")]
mod redis;
mod retention;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(any(feature = "sqlite", feature = "redis"))]
mod write_room;

use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

pub use ack::{Ack, AckSender};
pub use history::{
    DEFAULT_HISTORY_BYTES, DEFAULT_HISTORY_LIMIT, HistoryLimit, HistoryPage, HistoryRecord,
    KeptHistory, SessionEvent, history_slack,
};
pub use journal::{EventJournal, resume_bus};
pub use layer::StoreLayer;
pub use log::{Change, ChangeKind, ChangeLog, LOG_RETENTION, LogPosition};
pub use memory::MemoryStore;
pub use metered::{MeteredStore, WriteMeter};
pub use outbox::{AfterAttempt, Attempt, Delivery, DeliveryQuery, DeliveryState, OutboxMessage};
#[cfg(feature = "redis")]
pub use redis::{RedisLocation, RedisStore};
pub use retention::{
    SWEEP_BATCH, SWEEP_INTERVAL, forget_deliveries_older_than, forget_quiet_histories_older_than,
    forget_resolved_older_than, keep_resolved_for, sweep,
};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
#[cfg(any(feature = "sqlite", feature = "redis"))]
pub use write_room::DEFAULT_QUEUED_WRITES_MIB;

/// The record behind the pending-request registry: requests, outcomes and events.
///
/// Implemented by [`MemoryStore`], [`SqliteStore`] and [`RedisStore`]; see the crate docs
/// for the ordering, durability and exactly-once guarantees every implementation keeps.
pub trait Store: Send + Sync + 'static {
    /// Queues `write` behind every write queued before it and returns at once; the [`Ack`]
    /// completes when the write is durable.
    ///
    /// # Cancel safety
    ///
    /// Dropping the [`Ack`] does not withdraw the write: it still happens, in order.
    fn write(&self, write: Write) -> Ack;

    /// Every pending request of `kind`, ascending by id, then the `retain_resolved` newest
    /// resolved ones, ascending by id.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be read.
    fn requests(&self, kind: RequestKind, retain_resolved: usize) -> BoxFuture<'_, Loaded>;

    /// The newest request of `kind` that `session_id` asked from the tool call `call_id`,
    /// pending or resolved.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be read.
    fn find_by_call<'a>(
        &'a self,
        kind: RequestKind,
        session_id: &'a str,
        call_id: &'a str,
    ) -> BoxFuture<'a, Option<StoredRequest>>;

    /// One request by id, pending or resolved.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be read.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<StoredRequest>>;

    /// The newest `limit` events, oldest first.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be read.
    fn recent_events(&self, limit: usize) -> BoxFuture<'_, Vec<EventRecord>>;

    /// Deletes up to `limit` requests (of either kind) resolved before `resolved_before_ms`
    /// (milliseconds since the Unix epoch), the longest resolved first, with their entries
    /// of the tool-call index; answers how many it deleted. Pending requests are never
    /// deleted. A caller with more to delete calls again while the answer is `limit`, so no
    /// one call holds the store up for long; [`forget_resolved_older_than`] does that.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be written.
    fn forget_resolved(&self, resolved_before_ms: u64, limit: usize) -> BoxFuture<'_, usize>;

    /// Up to `limit` records of `session_id`'s history, the ones `page` names, oldest
    /// first. A page shorter than `limit` holds every record there is on its side. Like
    /// every read, it sees every write queued before it.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be read. A record that cannot be read back is
    /// [`ChangeKind::Unreadable`] in its place, not an error.
    fn history<'a>(
        &'a self,
        session_id: &'a str,
        page: HistoryPage,
        limit: usize,
    ) -> BoxFuture<'a, Vec<HistoryRecord>>;

    /// Deletes the histories of up to `limit` sessions whose newest record is older than
    /// `quiet_before_ms` (milliseconds since the Unix epoch) and none of whose requests is
    /// pending, the longest quiet first; answers how many it deleted. A caller with more to
    /// delete calls again while the answer is `limit`;
    /// [`forget_quiet_histories_older_than`] does that.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be written.
    fn forget_quiet_histories(&self, quiet_before_ms: u64, limit: usize) -> BoxFuture<'_, usize>;

    /// Up to `limit` entries of the audit log after the one numbered `after_seq` (0: from
    /// the first), ascending by number. Entries are numbered 1, 2, 3, … with no gap, and
    /// never deleted. Like every read, it sees every write queued before it.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be read.
    fn audit_entries(&self, after_seq: u64, limit: usize) -> BoxFuture<'_, Vec<AuditRecord>>;

    /// Sets the seal of each entry `(seq, seal)` names, unless that entry has one already
    /// (the first seal stays: sealers compute the same seal for the same entry, so which
    /// one wins does not matter). Seal only entries read with
    /// [`audit_entries`](Self::audit_entries): a seal for a number no entry has yet is
    /// dropped by some backends and kept by others.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be written.
    fn seal_audit(&self, seals: Vec<(u64, String)>) -> BoxFuture<'_, ()>;

    /// Claims up to `limit` deliveries due at `now_ms` (pending, next attempt at or before
    /// it), the longest due first, for `lease_ms`: they are not due again, to anyone, until
    /// `now_ms + lease_ms` unless an [`Write::Attempted`] says otherwise. A store only one
    /// process opens (SQLite) ignores the leases of the process that opened it before; see
    /// the `outbox` module docs.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be written.
    fn claim_deliveries(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Vec<Delivery>>;

    /// The deliveries `query` names, newest message first (a message's deliveries by
    /// target name).
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be read.
    fn deliveries(&self, query: DeliveryQuery) -> BoxFuture<'_, Vec<Delivery>>;

    /// How many deliveries are pending.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be read.
    fn pending_deliveries(&self) -> BoxFuture<'_, u64>;

    /// Deletes up to `limit` settled deliveries (delivered or abandoned) whose last attempt
    /// ended before `settled_before_ms`, the oldest first; answers how many it deleted.
    /// Pending deliveries are never deleted.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the backend cannot be written.
    fn forget_deliveries(&self, settled_before_ms: u64, limit: usize) -> BoxFuture<'_, usize>;

    /// The log of this store's changes, if several registries can share the store by
    /// following it; `None` (the default) for a store only one registry uses (SQLite).
    fn change_log(&self) -> Option<&dyn ChangeLog> {
        None
    }
}

/// Milliseconds since the Unix epoch, now: the unit of every time a store records
/// (`created_at_ms`, `resolved_at_ms`, ...).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

/// The future a [`Store`] read returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// One change to the record, queued with [`Store::write`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Records a new pending request. Its id must be new.
    Insert(RequestRecord),
    /// Moves a pending request to its terminal outcome, if it is still pending.
    Resolve {
        /// The request's kind.
        kind: RequestKind,
        /// The request's id.
        id: String,
        /// How it ended.
        outcome: OutcomeRecord,
        /// The draft of the audit entry that records this outcome (JSON; the store does not
        /// look inside), appended to the audit log as its next entry in the same atomic
        /// step as the resolution, if and only if this resolution wins.
        audit: Option<String>,
        /// The message telling of this outcome, added to the outbox in the same atomic step
        /// as the resolution, if and only if this resolution wins (see the `outbox` module).
        outbox: Option<OutboxMessage>,
    },
    /// Appends a published event to the bus's record.
    Append(EventRecord),
    /// Appends an event (an agent step) to its session's history, and to the change log of
    /// a shared store, so every instance hears of it.
    Event(SessionEvent),
    /// Appends an audit entry (an `AuditDraft`'s JSON) for a decision that ends no request:
    /// a standing grant revoked. It is the log's next entry, numbered as a resolution's;
    /// answers [`Written::Appended`].
    Audit(String),
    /// Adds a message to the outbox, one pending delivery per target, due at once. Queue
    /// it right after the change it tells of: its ack then completes after both.
    Enqueue(OutboxMessage),
    /// Records one attempt to deliver a message to a target, and what becomes of the
    /// delivery ([`Attempt::then`]). Answers [`Written::NotFound`] if there is no such
    /// delivery (forgotten), [`Written::Appended`] otherwise.
    Attempted {
        /// The message's id.
        message_id: String,
        /// The target's name.
        target: String,
        /// What the attempt did.
        attempt: Attempt,
    },
}

/// What a durable [`Write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The request was recorded as pending.
    Inserted,
    /// This write won: the request moved from pending to its outcome.
    Resolved,
    /// The request had already reached this outcome; nothing changed.
    AlreadyResolved(OutcomeState),
    /// No request has that id; nothing changed.
    NotFound,
    /// The event was appended (to the bus's record, or to its session's history), the
    /// message to the outbox, or the attempt to its delivery.
    Appended,
}

/// The two kinds of human-input request.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A structured question (`que_` ids).
    Question,
    /// A review of tool calls (`apr_` ids).
    Approval,
}

/// A request as it was asked; immutable once inserted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestRecord {
    /// The request's id, with its kind prefix (`que_…`); ascending in creation order.
    pub id: String,
    /// Question or approval.
    pub kind: RequestKind,
    /// The session that asked.
    pub session_id: String,
    /// The tool call that asked, the key of an idempotent re-ask.
    pub call_id: Option<String>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When the request times out, milliseconds since the Unix epoch; `None`: never.
    pub expires_at_ms: Option<u64>,
    /// The request itself, as JSON; the store does not look inside.
    pub body: String,
}

/// The terminal states of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeState {
    /// A human answered.
    Replied,
    /// A human refused.
    Rejected,
    /// Nobody answered in time.
    TimedOut,
    /// The asker went away or the session was cancelled.
    Cancelled,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutcomeRecord {
    /// Which terminal state.
    pub state: OutcomeState,
    /// The outcome's data (answers, decisions, a reason) as JSON; the store does not look
    /// inside.
    pub body: String,
    /// When it ended, milliseconds since the Unix epoch.
    pub resolved_at_ms: u64,
    /// Who decided it, as JSON (a person and their role, say); the store does not look
    /// inside. `None` when nobody is named: a timeout, an asker gone, or a record written
    /// before outcomes named their decider (so it is left out of the JSON when `None`,
    /// and older change-log entries and history records read back as `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

/// A request with its outcome, `None` while pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRequest {
    /// The request as asked.
    pub request: RequestRecord,
    /// How it ended, if it has.
    pub outcome: Option<OutcomeRecord>,
}

/// What [`Store::requests`] found for one kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Every pending request, ascending by id.
    pub pending: Vec<StoredRequest>,
    /// The newest resolved requests, ascending by id.
    pub resolved: Vec<StoredRequest>,
    /// A count that never goes down and is at least how many requests, of either kind,
    /// were ever inserted, forgotten ones included (SQLite gives its history's last
    /// position, one entry each insert; a store with a change log its count of changes).
    /// A reader numbering something per request (the seeds' `{session}_{n}` keys)
    /// continues above it, so that no number is given twice across restarts.
    pub requests_ever: u64,
}

/// One published event as the history keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    /// The event id (`evt_` + ULID), ascending in publish order.
    pub id: String,
    /// The stable event name (`question.asked`).
    pub event_type: String,
    /// The session the event concerns, if any.
    pub session_id: Option<String>,
    /// The event's properties, as JSON.
    pub properties: String,
}

/// One entry of the audit log, as [`Store::audit_entries`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// Its number: 1 for the first entry, then one more for each, with no gap.
    pub seq: u64,
    /// The draft the winning [`Write::Resolve`] carried, byte for byte.
    pub draft: String,
    /// Its seal, once one was set ([`Store::seal_audit`]); the store does not look inside.
    pub seal: Option<String>,
}

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store URL is not one of `memory`, `sqlite:PATH`, `redis://…`.
    #[error(
        "unsupported store {0:?}: use `memory`, `sqlite:PATH` or `redis://HOST:PORT[/DB][?prefix=NAME]`"
    )]
    UnsupportedUrl(String),
    /// The store URL names a backend this build leaves out: it needs the crate feature
    /// `feature` of `askbus-store` (`sqlite` or `redis`).
    #[error(
        "the store {url:?} needs askbus-store's `{feature}` feature, which this build leaves out"
    )]
    NotBuilt {
        /// The URL.
        url: String,
        /// The feature that builds its backend in.
        feature: &'static str,
    },
    /// Another process has the SQLite file open.
    #[error("the store {path} is in use by another process (only one server may open it)")]
    Locked {
        /// The file.
        path: String,
    },
    /// The store was written by a newer askbus.
    #[error("the store has schema version {found}; this askbus knows up to {supported}")]
    NewerSchema {
        /// The version found.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// SQLite failed.
    #[cfg(feature = "sqlite")]
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Redis failed (or cannot be reached).
    #[cfg(feature = "redis")]
    #[error("Redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    /// A group of writes could not be committed; none of them happened.
    #[error("the store could not commit: {0}")]
    CommitFailed(String),
    /// A stored value cannot be read back (a damaged or foreign record).
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// Several instances were to share a store that only one process can use (SQLite).
    #[error("this store cannot be shared by several instances: use Redis")]
    NotShared,
    /// The store did not answer in time (a broken connection, or an overloaded server).
    /// What was asked may have been done all the same: a write's outcome is unknown until
    /// it is read back (a resolution tried again is refused if the first one took).
    #[error("the store did not answer in time (what was asked may have been done)")]
    Unresponsive,
    /// The store's writer stopped (the store was closed, or its runtime shut down).
    #[error("the store is closed")]
    Closed,
    /// The store's writer has `limit_mib` MiB of writes queued and unanswered (the store
    /// stopped answering): this one was refused rather than queued behind them.
    #[error(
        "the store has {limit_mib} MiB of writes waiting for it (it is not answering): refused rather than queued"
    )]
    Overloaded {
        /// The queue's bound (`DEFAULT_QUEUED_WRITES_MIB` unless the store was told).
        limit_mib: u32,
    },
    /// The changes after a reader's position are no longer all in the change log: the
    /// reader fell too far behind (or its position is from before a wipe). Load the
    /// requests again and follow from a new head.
    #[error("the change log no longer holds every change after {after}")]
    LogTrimmed {
        /// The position the reader asked to read after.
        after: LogPosition,
    },
}

/// Opens the store a URL names: `memory`, `sqlite:PATH` or a [`RedisLocation`]
/// (`redis://HOST:PORT[/DB][?prefix=NAME]`).
///
/// # Errors
///
/// [`StoreError::UnsupportedUrl`] for any other URL, [`StoreError::NotBuilt`] for a backend
/// this build leaves out (see the crate features), or the backend's error on open.
pub async fn open(url: &str) -> Result<std::sync::Arc<dyn Store>, StoreError> {
    let url = url.trim();
    if url == "memory" {
        return Ok(std::sync::Arc::new(MemoryStore::new()));
    }
    if let Some(path) = url.strip_prefix("sqlite:") {
        return open_sqlite(path);
    }
    if url.starts_with("redis://") || url.starts_with("rediss://") {
        return open_redis(url).await;
    }
    Err(StoreError::UnsupportedUrl(without_credentials(url)))
}

/// `url` with its credentials (`user:password@`) hidden, as errors and logs show it: a
/// store URL's password must not reach a log line, whatever is wrong with the URL.
pub(crate) fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            // Up to the last `@` anywhere: a password may hold a `/`, `?` or `#` of its
            // own, and hiding too much is the safe side.
            match rest.rfind('@') {
                Some(at) => format!("{scheme}://***{}", &rest[at..]),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    }
}

impl OutcomeRecord {
    /// An outcome in `state` with its JSON `body`, reached at `resolved_at_ms`, naming
    /// nobody as its decider (see [`decided_by`](Self::decided_by)).
    pub fn new(state: OutcomeState, body: impl Into<String>, resolved_at_ms: u64) -> Self {
        Self {
            state,
            body: body.into(),
            resolved_at_ms,
            decided_by: None,
        }
    }

    /// The same outcome, decided by `by` (JSON the store keeps as it is; `None`: nobody
    /// named).
    ///
    /// # Examples
    ///
    /// ```
    /// use askbus_store::{OutcomeRecord, OutcomeState};
    ///
    /// let by = r#"{"name":"alice","role":"reviewer"}"#;
    /// let outcome = OutcomeRecord::new(OutcomeState::Replied, "[]", 1)
    ///     .decided_by(Some(by.to_owned()));
    /// assert_eq!(outcome.decided_by.as_deref(), Some(by));
    /// ```
    #[must_use]
    pub fn decided_by(mut self, by: Option<String>) -> Self {
        self.decided_by = by;
        self
    }
}

impl RequestKind {
    /// Both kinds.
    pub const ALL: [Self; 2] = [Self::Question, Self::Approval];

    /// The stored name: `question` or `approval`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Question => "question",
            Self::Approval => "approval",
        }
    }
}

impl FromStr for RequestKind {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Self, StoreError> {
        match text {
            "question" => Ok(Self::Question),
            "approval" => Ok(Self::Approval),
            other => Err(StoreError::Corrupt(format!(
                "unknown request kind {other:?}"
            ))),
        }
    }
}

impl OutcomeState {
    /// The stored name: `replied`, `rejected`, `timed_out` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replied => "replied",
            Self::Rejected => "rejected",
            Self::TimedOut => "timed_out",
            Self::Cancelled => "cancelled",
        }
    }
}

impl FromStr for OutcomeState {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Self, StoreError> {
        match text {
            "replied" => Ok(Self::Replied),
            "rejected" => Ok(Self::Rejected),
            "timed_out" => Ok(Self::TimedOut),
            "cancelled" => Ok(Self::Cancelled),
            other => Err(StoreError::Corrupt(format!("unknown outcome {other:?}"))),
        }
    }
}

/// The [`SqliteStore`] at `path`.
#[cfg(feature = "sqlite")]
fn open_sqlite(path: &str) -> Result<std::sync::Arc<dyn Store>, StoreError> {
    Ok(std::sync::Arc::new(SqliteStore::open(path)?))
}

/// No SQLite in this build: [`StoreError::NotBuilt`].
#[cfg(not(feature = "sqlite"))]
fn open_sqlite(path: &str) -> Result<std::sync::Arc<dyn Store>, StoreError> {
    Err(StoreError::NotBuilt {
        url: format!("sqlite:{path}"),
        feature: "sqlite",
    })
}

/// The [`RedisStore`] at `url`.
#[cfg(feature = "redis")]
async fn open_redis(url: &str) -> Result<std::sync::Arc<dyn Store>, StoreError> {
    Ok(std::sync::Arc::new(
        RedisStore::open_at(&url.parse()?).await?,
    ))
}

/// No Redis in this build: [`StoreError::NotBuilt`].
#[cfg(not(feature = "redis"))]
async fn open_redis(url: &str) -> Result<std::sync::Arc<dyn Store>, StoreError> {
    Err(StoreError::NotBuilt {
        url: url.to_owned(),
        feature: "redis",
    })
}
