//! The SQLite store: one embedded file, one writer thread, group commit.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, TransactionBehavior, params};
use tokio::sync::oneshot;

use crate::ack::AckSender;
use crate::history::SharedHistoryLimit;
use crate::log::LogEntry;
use crate::write_room::WriteRoom;
use crate::{
    Ack, Attempt, AuditRecord, BoxFuture, ChangeKind, Delivery, DeliveryQuery, DeliveryState,
    EventRecord, HistoryLimit, HistoryPage, HistoryRecord, Loaded, OutboxMessage, OutcomeRecord,
    RequestKind, RequestRecord, Store, StoreError, StoredRequest, Write, Written, now_ms,
};

/// A [`Store`] in one SQLite file (WAL, `synchronous = FULL`), for a single server process.
///
/// One thread owns the connection. [`Store::write`] queues; the thread takes every write
/// queued so far (up to [`SqliteStore::MAX_GROUP`]), applies them in one transaction,
/// commits, and only then completes their [`Ack`]s: each acknowledged write is on disk, and
/// one commit serves a whole group. Reads run on the same thread, after the group that was
/// being collected when they were queued is committed, so they see every write queued
/// before them and never split a group in two. Since writers wait for them, a read does
/// the least it can there: a read whose future was dropped before its turn is skipped, and
/// a history page's records are read back (parsed) by the reader, not by this thread.
///
/// The file is opened with an exclusive lock, held until the store is dropped: a second
/// process (or a second `SqliteStore` in this one) is refused with [`StoreError::Locked`]
/// rather than racing the first. The lock dies with the process, so a crashed server's
/// file opens again at once.
///
/// The outbox's deliveries are rows of their own table, written in the group's transaction
/// like every other change (a winning resolution's with it, in its savepoint). Claiming
/// them ([`Store::claim_deliveries`]) writes their leases, so it runs on the writer thread
/// in its turn, like the sweeps. Since no other process can have the file open, the leases
/// found in it on open are those of a process that is gone: opening forgets them, and a
/// pending delivery is due again when its sender said (its creation, or the retry time of
/// its last attempt), not when a dead sender's lease would have run out.
///
/// # Examples
///
/// ```
/// use askbus_store::{SqliteStore, Store};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let dir = tempfile::tempdir().unwrap();
/// let store = SqliteStore::open(dir.path().join("askbus.db")).unwrap();
/// assert!(store.recent_events(10).await.unwrap().is_empty());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// Shared by every clone; the writer stops when the last clone drops.
    shared: Arc<Shared>,
}

/// The writer's queue and thread.
#[derive(Debug)]
struct Shared {
    /// Jobs for the writer thread, in queue order.
    jobs: mpsc::Sender<Job>,
    /// What the queue may still take of writes (reads are small).
    room: WriteRoom,
    /// How much a session's history keeps; read by the writer thread.
    history_limit: Arc<SharedHistoryLimit>,
    /// The writer thread, joined on drop so the file's lock is released when drop returns.
    writer: Option<JoinHandle<()>>,
}

/// Work for the writer thread.
#[expect(
    clippy::large_enum_variant,
    reason = "most jobs are writes: boxing them would allocate once a write to save a read's slot"
)]
enum Job {
    /// A write and the ack to complete once it is committed.
    Write(Write, AckSender),
    /// A query, run after the group it came in; it sends its own result.
    Read(Query),
    /// Commit what is queued and stop.
    Close,
}

/// A query of a [`Job::Read`].
type Query = Box<dyn FnOnce(&Connection) + Send>;

/// The schema, one entry per version: entry `n` migrates version `n` to `n + 1`
/// (`PRAGMA user_version` holds the version). Never edit an entry; append a new one.
const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE requests (
        id             TEXT PRIMARY KEY NOT NULL,
        kind           TEXT NOT NULL,
        session_id     TEXT NOT NULL,
        call_id        TEXT,
        created_at_ms  INTEGER NOT NULL,
        expires_at_ms  INTEGER,
        body           TEXT NOT NULL,
        state          TEXT NOT NULL DEFAULT 'pending',
        outcome        TEXT,
        resolved_at_ms INTEGER
    ) WITHOUT ROWID;
    CREATE INDEX requests_pending ON requests (kind, id) WHERE state = 'pending';
    CREATE INDEX requests_resolved ON requests (kind, id) WHERE state <> 'pending';
    CREATE INDEX requests_call ON requests (kind, session_id, call_id, id)
        WHERE call_id IS NOT NULL;
    CREATE TABLE events (
        id          TEXT PRIMARY KEY NOT NULL,
        event_type  TEXT NOT NULL,
        session_id  TEXT,
        properties  TEXT NOT NULL
    ) WITHOUT ROWID;
",
    "
    CREATE INDEX requests_resolved_at ON requests (resolved_at_ms) WHERE state <> 'pending';
",
    "
    CREATE TABLE history (
        position    INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id  TEXT NOT NULL,
        entry       TEXT NOT NULL
    );
    CREATE INDEX history_session ON history (session_id, position);
    CREATE TABLE histories (
        session_id    TEXT PRIMARY KEY NOT NULL,
        newest_at_ms  INTEGER NOT NULL,
        records       INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX histories_quiet ON histories (newest_at_ms);
",
    "
    ALTER TABLE histories ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
    UPDATE histories SET bytes = (
        SELECT coalesce(sum(length(CAST(entry AS BLOB))), 0) FROM history
        WHERE history.session_id = histories.session_id);
",
    "
    ALTER TABLE requests ADD COLUMN decided_by TEXT;
",
    "
    CREATE TABLE audit (
        seq    INTEGER PRIMARY KEY NOT NULL,
        draft  TEXT NOT NULL,
        seal   TEXT
    );
",
    // The outbox: one row per delivery. `due_ms` is when the sender wants it tried (its
    // creation, then the retry time of its last attempt), `next_attempt_ms` the same or,
    // once claimed, the lease's end; both NULL once settled. `last_attempt` is the
    // attempt's JSON, `last_at_ms` its time, by which settled rows are forgotten.
    "
    CREATE TABLE deliveries (
        message_id       TEXT NOT NULL,
        target           TEXT NOT NULL,
        payload          TEXT NOT NULL,
        created_at_ms    INTEGER NOT NULL,
        state            TEXT NOT NULL DEFAULT 'pending',
        attempts         INTEGER NOT NULL DEFAULT 0,
        due_ms           INTEGER,
        next_attempt_ms  INTEGER,
        last_attempt     TEXT,
        last_at_ms       INTEGER,
        PRIMARY KEY (message_id, target)
    );
    CREATE INDEX deliveries_due ON deliveries (next_attempt_ms, message_id, target)
        WHERE state = 'pending';
    CREATE INDEX deliveries_settled ON deliveries (last_at_ms, message_id, target)
        WHERE state <> 'pending';
",
];

/// The columns [`read_delivery`] expects, in order.
const DELIVERY_COLUMNS: &str = "message_id, target, payload, created_at_ms, state, attempts, \
                                next_attempt_ms, last_attempt";

/// The columns [`read_request`] expects, in order.
const REQUEST_COLUMNS: &str = "id, kind, session_id, call_id, created_at_ms, expires_at_ms, \
                               body, state, outcome, resolved_at_ms, decided_by";

impl SqliteStore {
    /// Most writes committed in one transaction.
    pub const MAX_GROUP: usize = 4096;

    /// How many events the bus's record keeps; older ones are deleted as new ones arrive.
    /// (Session histories are kept apart, by their own rules: see the `history` module.)
    pub const EVENT_RETENTION: usize = 100_000;

    /// Opens (creating if needed) the store at `path`, migrates its schema, locks it and
    /// starts its writer thread.
    ///
    /// # Errors
    ///
    /// [`StoreError::Locked`] if another process has it open, [`StoreError::NewerSchema`]
    /// if a newer askbus wrote it, [`StoreError::Sqlite`] if it cannot be opened.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let connection = connect(path).map_err(|error| match error {
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(failure, _))
                if matches!(
                    failure.code,
                    ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked
                ) =>
            {
                StoreError::Locked {
                    path: path.display().to_string(),
                }
            }
            other => other,
        })?;
        let (jobs, queue) = mpsc::channel();
        let history_limit = Arc::new(SharedHistoryLimit::default());
        let limit = Arc::clone(&history_limit);
        let writer = std::thread::Builder::new()
            .name("askbus-sqlite".into())
            .spawn(move || run_writer(connection, &queue, &limit))
            .map_err(|error| StoreError::Corrupt(format!("cannot start writer: {error}")))?;
        Ok(Self {
            shared: Arc::new(Shared {
                jobs,
                room: WriteRoom::new(),
                history_limit,
                writer: Some(writer),
            }),
        })
    }

    /// Holds at most `mib` MiB of writes queued for the writer thread and uncommitted (at
    /// least one; [`DEFAULT_QUEUED_WRITES_MIB`](crate::DEFAULT_QUEUED_WRITES_MIB)
    /// otherwise): past it a write fails at once with [`StoreError::Overloaded`]. Bounds
    /// what clients that hang up make the server hold while the disk does not answer.
    #[must_use]
    pub fn with_queued_writes_mib(self, mib: u32) -> Self {
        self.shared.room.set_limit_mib(mib);
        self
    }

    /// Keeps about the newest `limit` records of each session's history (at least one);
    /// see the `history` module docs. Applies to the records written from now on.
    #[must_use]
    pub fn with_history_limit(self, limit: usize) -> Self {
        self.shared.history_limit.set_records(limit);
        self
    }

    /// Keeps about `bytes` bytes of each session's history at most, each record counted as
    /// the length of its JSON (but always the newest record); see the `history` module
    /// docs. Applies to the records written from now on.
    #[must_use]
    pub fn with_history_bytes(self, bytes: usize) -> Self {
        self.shared.history_limit.set_bytes(bytes);
        self
    }

    /// Runs `query` on the writer thread after every write queued before it (it may write
    /// too: it has the connection to itself), unless its future was dropped by then.
    fn read<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> BoxFuture<'static, T> {
        let (sender, receiver) = oneshot::channel();
        let job = Job::Read(Box::new(move |connection| {
            // A reader that stopped waiting (an HTTP client gone) costs the writers nothing.
            if !sender.is_closed() {
                let _ = sender.send(query(connection));
            }
        }));
        let queued = self.shared.jobs.send(job).is_ok();
        Box::pin(async move {
            if !queued {
                return Err(StoreError::Closed);
            }
            receiver.await.unwrap_or(Err(StoreError::Closed))
        })
    }
}

impl Store for SqliteStore {
    fn write(&self, write: Write) -> Ack {
        self.shared.room.queue(write, |write, sender| {
            self.shared.jobs.send(Job::Write(write, sender)).is_ok()
        })
    }

    fn requests(&self, kind: RequestKind, retain_resolved: usize) -> BoxFuture<'_, Loaded> {
        self.read(move |connection| {
            let pending = query_requests(
                connection,
                &format!(
                    "SELECT {REQUEST_COLUMNS} FROM requests
                     WHERE kind = ?1 AND state = 'pending' ORDER BY id"
                ),
                params![kind.as_str()],
            )?;
            let mut resolved = query_requests(
                connection,
                &format!(
                    "SELECT {REQUEST_COLUMNS} FROM requests
                     WHERE kind = ?1 AND state <> 'pending' ORDER BY id DESC LIMIT ?2"
                ),
                params![kind.as_str(), to_sql_count(retain_resolved)],
            )?;
            resolved.reverse();
            // Every insert writes a history entry, whose AUTOINCREMENT position never goes
            // back, whatever is forgotten since; requests kept from before histories
            // existed (schema 3) are counted as they are.
            let requests_ever: i64 = connection.query_row(
                "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'history'), 0),
                            (SELECT count(*) FROM requests))",
                [],
                |row| row.get(0),
            )?;
            Ok(Loaded {
                pending,
                resolved,
                requests_ever: u64::try_from(requests_ever).unwrap_or(0),
            })
        })
    }

    fn find_by_call<'a>(
        &'a self,
        kind: RequestKind,
        session_id: &'a str,
        call_id: &'a str,
    ) -> BoxFuture<'a, Option<StoredRequest>> {
        let (session_id, call_id) = (session_id.to_owned(), call_id.to_owned());
        self.read(move |connection| {
            let found = query_requests(
                connection,
                &format!(
                    "SELECT {REQUEST_COLUMNS} FROM requests
                     WHERE kind = ?1 AND session_id = ?2 AND call_id = ?3
                     ORDER BY id DESC LIMIT 1"
                ),
                params![kind.as_str(), session_id, call_id],
            )?;
            Ok(found.into_iter().next())
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<StoredRequest>> {
        let id = id.to_owned();
        self.read(move |connection| {
            let found = query_requests(
                connection,
                &format!("SELECT {REQUEST_COLUMNS} FROM requests WHERE id = ?1"),
                params![id],
            )?;
            Ok(found.into_iter().next())
        })
    }

    fn forget_resolved(&self, resolved_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        self.read(move |connection| {
            // The tool-call index is an index of the table: its entries go with the rows.
            let deleted = connection
                .prepare_cached(
                    "DELETE FROM requests WHERE id IN (
                         SELECT id FROM requests
                         WHERE state <> 'pending' AND resolved_at_ms < ?1
                         ORDER BY resolved_at_ms LIMIT ?2)",
                )?
                .execute(params![to_sql_u64(resolved_before_ms), to_sql_count(limit)])?;
            Ok(deleted)
        })
    }

    fn history<'a>(
        &'a self,
        session_id: &'a str,
        page: HistoryPage,
        limit: usize,
    ) -> BoxFuture<'a, Vec<HistoryRecord>> {
        let session_id = session_id.to_owned();
        let rows = self.read(move |connection| {
            let (sql, position) = match page {
                HistoryPage::From(from) => (
                    "SELECT position, entry FROM history
                     WHERE session_id = ?1 AND position >= ?2 ORDER BY position LIMIT ?3",
                    from,
                ),
                HistoryPage::Before(before) => (
                    "SELECT position, entry FROM history
                     WHERE session_id = ?1 AND position < ?2 ORDER BY position DESC LIMIT ?3",
                    before,
                ),
            };
            let mut rows = connection
                .prepare_cached(sql)?
                .query_map(
                    params![session_id, to_sql_u64(position), to_sql_count(limit)],
                    |row| Ok((from_sql_u64(row.get(0)?), row.get::<_, String>(1)?)),
                )?
                .collect::<Result<Vec<_>, _>>()?;
            if let HistoryPage::Before(_) = page {
                rows.reverse();
            }
            Ok(rows)
        });
        // Read back by the reader, not on the writer thread: the writers wait for the
        // query alone.
        Box::pin(async move {
            Ok(rows
                .await?
                .into_iter()
                .map(|(position, entry)| HistoryRecord {
                    position,
                    entry: ChangeKind::read(&entry),
                })
                .collect())
        })
    }

    fn forget_quiet_histories(&self, quiet_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        self.read(move |connection| {
            // One transaction for the batch: one commit (one fsync) instead of two per
            // session, and a session's history and its count go together or not at all.
            let transaction = connection.unchecked_transaction()?;
            let quiet: Vec<String> = transaction
                .prepare_cached(
                    "SELECT session_id FROM histories
                     WHERE newest_at_ms < ?1 AND session_id NOT IN (
                         SELECT session_id FROM requests WHERE state = 'pending')
                     ORDER BY newest_at_ms LIMIT ?2",
                )?
                .query_map(
                    params![to_sql_u64(quiet_before_ms), to_sql_count(limit)],
                    |row| row.get(0),
                )?
                .collect::<Result<_, _>>()?;
            for session_id in &quiet {
                transaction
                    .prepare_cached("DELETE FROM history WHERE session_id = ?1")?
                    .execute(params![session_id])?;
                transaction
                    .prepare_cached("DELETE FROM histories WHERE session_id = ?1")?
                    .execute(params![session_id])?;
            }
            transaction.commit()?;
            Ok(quiet.len())
        })
    }

    fn audit_entries(&self, after_seq: u64, limit: usize) -> BoxFuture<'_, Vec<AuditRecord>> {
        self.read(move |connection| {
            let entries = connection
                .prepare_cached(
                    "SELECT seq, draft, seal FROM audit WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                )?
                .query_map(params![to_sql_u64(after_seq), to_sql_count(limit)], |row| {
                    Ok(AuditRecord {
                        seq: from_sql_u64(row.get(0)?),
                        draft: row.get(1)?,
                        seal: row.get(2)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(entries)
        })
    }

    fn seal_audit(&self, seals: Vec<(u64, String)>) -> BoxFuture<'_, ()> {
        self.read(move |connection| {
            // One transaction: one commit (one fsync) for the batch.
            let transaction = connection.unchecked_transaction()?;
            for (seq, seal) in &seals {
                transaction
                    .prepare_cached("UPDATE audit SET seal = ?2 WHERE seq = ?1 AND seal IS NULL")?
                    .execute(params![to_sql_u64(*seq), seal])?;
            }
            transaction.commit()?;
            Ok(())
        })
    }

    fn claim_deliveries(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Vec<Delivery>> {
        self.read(move |connection| {
            let lease_end = now_ms.saturating_add(lease_ms);
            // One transaction: the leases are set together (one commit), and nothing runs
            // between the choice and the leases on this thread.
            let transaction = connection.unchecked_transaction()?;
            let due = transaction
                .prepare_cached(&format!(
                    "SELECT {DELIVERY_COLUMNS} FROM deliveries
                     WHERE state = 'pending' AND next_attempt_ms <= ?1
                     ORDER BY next_attempt_ms, message_id, target LIMIT ?2"
                ))?
                .query_map(params![to_sql_u64(now_ms), to_sql_count(limit)], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        read_delivery(row),
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let mut claimed = Vec::with_capacity(due.len());
            for (message_id, target, delivery) in due {
                transaction
                    .prepare_cached(
                        "UPDATE deliveries SET next_attempt_ms = ?3
                         WHERE message_id = ?1 AND target = ?2",
                    )?
                    .execute(params![message_id, target, to_sql_u64(lease_end)])?;
                match delivery {
                    Ok(delivery) => claimed.push(Delivery {
                        next_attempt_ms: Some(lease_end),
                        ..delivery
                    }),
                    // Leased all the same, so it does not hold up the ones behind it: it
                    // is passed over once a lease, with its reason, until it is repaired.
                    Err(error) => tracing::warn!(
                        "cannot read the delivery of {message_id:?} to {target:?}, \
                         passed over: {error}"
                    ),
                }
            }
            transaction.commit()?;
            Ok(claimed)
        })
    }

    fn deliveries(&self, query: DeliveryQuery) -> BoxFuture<'_, Vec<Delivery>> {
        self.read(move |connection| {
            // Newest message first; within a message the page is cut among the last
            // targets, as the memory store does, and then read by target.
            let condition = match (query.before.is_some(), query.state.is_some()) {
                (false, false) => "",
                (true, false) => "WHERE message_id < ?1",
                (false, true) => "WHERE state = ?2",
                (true, true) => "WHERE message_id < ?1 AND state = ?2",
            };
            let mut statement = connection.prepare_cached(&format!(
                "SELECT {DELIVERY_COLUMNS} FROM deliveries {condition}
                 ORDER BY message_id DESC, target DESC LIMIT ?3"
            ))?;
            let before = query.before.as_deref();
            let state = query.state.map(DeliveryState::as_str);
            let limit = to_sql_count(query.limit);
            let mut page = Vec::new();
            for (index, value) in [(1, before), (2, state)] {
                if let Some(value) = value {
                    statement.raw_bind_parameter(index, value)?;
                }
            }
            statement.raw_bind_parameter(3, limit)?;
            let mut rows = statement.raw_query();
            while let Some(row) = rows.next()? {
                page.push(read_delivery(row)?);
            }
            page.sort_by(|a, b| {
                b.message_id
                    .cmp(&a.message_id)
                    .then_with(|| a.target.cmp(&b.target))
            });
            Ok(page)
        })
    }

    fn pending_deliveries(&self) -> BoxFuture<'_, u64> {
        self.read(|connection| {
            let pending: i64 = connection
                .prepare_cached("SELECT count(*) FROM deliveries WHERE state = 'pending'")?
                .query_row([], |row| row.get(0))?;
            Ok(from_sql_u64(pending))
        })
    }

    fn forget_deliveries(&self, settled_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        self.read(move |connection| {
            let deleted = connection
                .prepare_cached(
                    "DELETE FROM deliveries WHERE rowid IN (
                         SELECT rowid FROM deliveries
                         WHERE state <> 'pending' AND last_at_ms < ?1
                         ORDER BY last_at_ms, message_id, target LIMIT ?2)",
                )?
                .execute(params![to_sql_u64(settled_before_ms), to_sql_count(limit)])?;
            Ok(deleted)
        })
    }

    fn recent_events(&self, limit: usize) -> BoxFuture<'_, Vec<EventRecord>> {
        self.read(move |connection| {
            let mut statement = connection.prepare_cached(
                "SELECT id, event_type, session_id, properties FROM events
                 ORDER BY id DESC LIMIT ?1",
            )?;
            let mut events = statement
                .query_map(params![to_sql_count(limit)], |row| {
                    Ok(EventRecord {
                        id: row.get(0)?,
                        event_type: row.get(1)?,
                        session_id: row.get(2)?,
                        properties: row.get(3)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            events.reverse();
            Ok(events)
        })
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Commit what is queued, then wait, so the file is unlocked when the store is gone.
        let _ = self.jobs.send(Job::Close);
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Opens the file, sets it up for one durable writer, and migrates the schema.
fn connect(path: &Path) -> Result<Connection, StoreError> {
    let mut connection = Connection::open(path)?;
    // Fail at once on a file another process holds, instead of waiting for it.
    connection.busy_timeout(Duration::ZERO)?;
    connection.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
    connection
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
    connection.pragma_update(None, "synchronous", "FULL")?;
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Exclusive)?;
    let version: i64 = transaction.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let supported = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    if version > supported {
        return Err(StoreError::NewerSchema {
            found: version,
            supported,
        });
    }
    for migration in MIGRATIONS
        .iter()
        .skip(usize::try_from(version).unwrap_or(0))
    {
        transaction.execute_batch(migration)?;
    }
    transaction.pragma_update(None, "user_version", supported)?;
    // The leases in the file are a process's that is gone (the lock says no other has it
    // open): each pending delivery is due when its sender said, not at a dead lease's end.
    transaction.execute(
        "UPDATE deliveries SET next_attempt_ms = due_ms
         WHERE state = 'pending' AND next_attempt_ms IS NOT due_ms",
        [],
    )?;
    transaction.commit()?;
    Ok(connection)
}

/// The writer thread: group, commit, acknowledge; reads after the group they came in.
fn run_writer(
    mut connection: Connection,
    queue: &mpsc::Receiver<Job>,
    history_limit: &SharedHistoryLimit,
) {
    let mut group = Vec::new();
    let mut reads = Vec::new();
    let mut appended_since_prune = 0;
    while let Ok(first) = queue.recv() {
        let limit = history_limit.load();
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Write(write, ack) => {
                    appended_since_prune += usize::from(matches!(write, Write::Append(_)));
                    group.push((write, ack));
                    if group.len() == SqliteStore::MAX_GROUP {
                        commit_group(&mut connection, &mut group, limit);
                        run_reads(&connection, &mut reads);
                    }
                }
                // Run once the group it came in is committed: it sees every write queued
                // before it, and a reader does not cost the writers a commit of their own.
                Job::Read(query) => reads.push(query),
                Job::Close => {
                    commit_group(&mut connection, &mut group, limit);
                    run_reads(&connection, &mut reads);
                    return;
                }
            }
            next = queue.try_recv().ok();
        }
        commit_group(&mut connection, &mut group, limit);
        run_reads(&connection, &mut reads);
        if appended_since_prune >= PRUNE_EVERY {
            appended_since_prune = 0;
            // Pruning is housekeeping: a failure leaves extra history, nothing worse.
            let _ = prune_events(&connection);
        }
    }
}

/// Runs the queued reads, in queue order.
fn run_reads(connection: &Connection, reads: &mut Vec<Query>) {
    for query in reads.drain(..) {
        query(connection);
    }
}

/// How many appended events between two prunings of the history.
const PRUNE_EVERY: usize = 4096;

/// Applies `group` in one transaction, commits, then completes every ack; histories keep
/// about `history_limit` records.
fn commit_group(
    connection: &mut Connection,
    group: &mut Vec<(Write, AckSender)>,
    history_limit: HistoryLimit,
) {
    if group.is_empty() {
        return;
    }
    let transaction = match connection.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(transaction) => transaction,
        Err(error) => {
            let message = error.to_string();
            for (_, ack) in group.drain(..) {
                let _ = ack.send(Err(StoreError::CommitFailed(message.clone())));
            }
            return;
        }
    };
    // A failing write rolls back only itself, so one bad write does not sink the group.
    let mut results = Vec::with_capacity(group.len());
    for (write, _) in group.iter() {
        results.push(apply_whole(&transaction, write, history_limit));
        if transaction.is_autocommit() {
            // SQLite rolled the whole transaction back on its own (a trigger's
            // `RAISE(ROLLBACK)`, a full disk, an I/O error): nothing of the group happened,
            // and a write after this would commit alone, outside any group.
            let message = results
                .iter()
                .rev()
                .find_map(|result| result.as_ref().err())
                .map_or_else(
                    || "SQLite rolled the transaction back".to_owned(),
                    ToString::to_string,
                );
            for (_, ack) in group.drain(..) {
                let _ = ack.send(Err(StoreError::CommitFailed(message.clone())));
            }
            return;
        }
    }
    match transaction.commit() {
        Ok(()) => {
            for ((_, ack), result) in group.drain(..).zip(results) {
                // A caller that stopped waiting is not an error: the write is committed.
                let _ = ack.send(result);
            }
        }
        Err(error) => {
            let message = error.to_string();
            for (_, ack) in group.drain(..) {
                let _ = ack.send(Err(StoreError::CommitFailed(message.clone())));
            }
        }
    }
}

/// [`apply`]s `write` whole or not at all: in a savepoint, rolled back if any of its
/// statements fails, so a resolution is never committed without its history record or its
/// audit entry (the write's ack then fails, and nothing of it happened).
fn apply_whole(
    connection: &Connection,
    write: &Write,
    history_limit: HistoryLimit,
) -> Result<Written, StoreError> {
    connection.prepare_cached("SAVEPOINT write")?.execute([])?;
    let result = apply(connection, write, history_limit);
    if result.is_err() {
        if connection.is_autocommit() {
            // SQLite rolled the whole transaction back: no savepoint is left (the group
            // fails, see `commit_group`), and the error is this write's.
            return result;
        }
        connection
            .prepare_cached("ROLLBACK TO write")?
            .execute([])?;
    }
    connection.prepare_cached("RELEASE write")?.execute([])?;
    result
}

/// One write inside the group's transaction; a change that takes effect also goes into
/// its session's history, which keeps about `history_limit` records.
fn apply(
    connection: &Connection,
    write: &Write,
    history_limit: HistoryLimit,
) -> Result<Written, StoreError> {
    let entry = || {
        LogEntry::of(write)
            .map(|entry| entry.json())
            .unwrap_or_default()
    };
    match write {
        Write::Insert(request) => {
            connection
                .prepare_cached(
                    "INSERT INTO requests (id, kind, session_id, call_id, created_at_ms,
                                           expires_at_ms, body)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?
                .execute(params![
                    request.id,
                    request.kind.as_str(),
                    request.session_id,
                    request.call_id,
                    to_sql_u64(request.created_at_ms),
                    request.expires_at_ms.map(to_sql_u64),
                    request.body,
                ])?;
            remember(connection, &request.session_id, &entry(), history_limit)?;
            Ok(Written::Inserted)
        }
        Write::Resolve {
            kind,
            id,
            outcome,
            audit,
            outbox,
        } => {
            // The exactly-once transition: only a pending row changes.
            let won: Option<String> = connection
                .prepare_cached(
                    "UPDATE requests
                     SET state = ?3, outcome = ?4, resolved_at_ms = ?5, decided_by = ?6
                     WHERE id = ?1 AND kind = ?2 AND state = 'pending'
                     RETURNING session_id",
                )?
                .query_row(
                    params![
                        id,
                        kind.as_str(),
                        outcome.state.as_str(),
                        outcome.body,
                        to_sql_u64(outcome.resolved_at_ms),
                        outcome.decided_by,
                    ],
                    |row| row.get(0),
                )
                .optional()?;
            if let Some(session_id) = won {
                remember(connection, &session_id, &entry(), history_limit)?;
                if let Some(draft) = audit {
                    append_audit(connection, draft)?;
                }
                if let Some(message) = outbox {
                    enqueue(connection, message)?;
                }
                return Ok(Written::Resolved);
            }
            let state: Option<String> = connection
                .prepare_cached("SELECT state FROM requests WHERE id = ?1 AND kind = ?2")?
                .query_row(params![id, kind.as_str()], |row| row.get(0))
                .optional()?;
            match state {
                Some(state) => Ok(Written::AlreadyResolved(state.parse()?)),
                None => Ok(Written::NotFound),
            }
        }
        Write::Audit(draft) => {
            append_audit(connection, draft)?;
            Ok(Written::Appended)
        }
        Write::Append(event) => {
            connection
                .prepare_cached(
                    "INSERT INTO events (id, event_type, session_id, properties)
                     VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![
                    event.id,
                    event.event_type,
                    event.session_id,
                    event.properties
                ])?;
            Ok(Written::Appended)
        }
        Write::Event(event) => {
            remember(connection, &event.session_id, &entry(), history_limit)?;
            Ok(Written::Appended)
        }
        Write::Enqueue(message) => {
            enqueue(connection, message)?;
            Ok(Written::Appended)
        }
        Write::Attempted {
            message_id,
            target,
            attempt,
        } => attempted(connection, message_id, target, attempt),
    }
}

/// Adds `message` to the outbox: one pending delivery per target, due at its creation (at
/// once). A delivery that is there already stays as it is.
/// Appends `draft` as the audit log's next entry. Numbered here, in the writer's one
/// transaction at a time: no gap.
fn append_audit(connection: &Connection, draft: &str) -> rusqlite::Result<()> {
    connection
        .prepare_cached(
            "INSERT INTO audit (seq, draft)
             VALUES ((SELECT coalesce(max(seq), 0) + 1 FROM audit), ?1)",
        )?
        .execute(params![draft])?;
    Ok(())
}

fn enqueue(connection: &Connection, message: &OutboxMessage) -> Result<(), StoreError> {
    let mut insert = connection.prepare_cached(
        "INSERT INTO deliveries (message_id, target, payload, created_at_ms, due_ms,
                                 next_attempt_ms)
         VALUES (?1, ?2, ?3, ?4, ?4, ?4)
         ON CONFLICT (message_id, target) DO NOTHING",
    )?;
    for target in &message.targets {
        insert.execute(params![
            message.id,
            target,
            message.payload,
            to_sql_u64(message.created_at_ms)
        ])?;
    }
    Ok(())
}

/// Records `attempt` on a pending delivery: its state and next due time are the attempt's
/// outcome. A settled delivery stays as it is (a sender whose lease ran out, late).
fn attempted(
    connection: &Connection,
    message_id: &str,
    target: &str,
    attempt: &Attempt,
) -> Result<Written, StoreError> {
    let (state, next) = attempt.outcome();
    let last = serde_json::to_string(attempt)
        .map_err(|error| StoreError::Corrupt(format!("attempt not written: {error}")))?;
    let changed = connection
        .prepare_cached(
            "UPDATE deliveries
             SET state = ?3, attempts = attempts + 1, due_ms = ?4, next_attempt_ms = ?4,
                 last_attempt = ?5, last_at_ms = ?6
             WHERE message_id = ?1 AND target = ?2 AND state = 'pending'",
        )?
        .execute(params![
            message_id,
            target,
            state.as_str(),
            next.map(to_sql_u64),
            last,
            to_sql_u64(attempt.at_ms),
        ])?;
    if changed > 0 {
        return Ok(Written::Appended);
    }
    let found = connection
        .prepare_cached("SELECT 1 FROM deliveries WHERE message_id = ?1 AND target = ?2")?
        .query_row(params![message_id, target], |_| Ok(()))
        .optional()?;
    Ok(match found {
        Some(()) => Written::Appended,
        None => Written::NotFound,
    })
}

/// Appends `entry` to `session_id`'s history; once the history is a batch over
/// `history_limit`, deletes its oldest records until it is within.
fn remember(
    connection: &Connection,
    session_id: &str,
    entry: &str,
    history_limit: HistoryLimit,
) -> Result<(), StoreError> {
    connection
        .prepare_cached("INSERT INTO history (session_id, entry) VALUES (?1, ?2)")?
        .execute(params![session_id, entry])?;
    let (records, bytes): (i64, i64) = connection
        .prepare_cached(
            "INSERT INTO histories (session_id, newest_at_ms, records, bytes)
             VALUES (?1, ?2, 1, ?3)
             ON CONFLICT (session_id) DO UPDATE
             SET newest_at_ms = excluded.newest_at_ms, records = records + 1,
                 bytes = bytes + excluded.bytes
             RETURNING records, bytes",
        )?
        .query_row(
            params![session_id, to_sql_u64(now_ms()), to_sql_count(entry.len())],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
    let (mut records, mut bytes) = (from_sql_count(records), from_sql_count(bytes));
    if !history_limit.exceeded_by(records, bytes) {
        return Ok(());
    }
    while history_limit.over(records, bytes) {
        let size: i64 = connection
            .prepare_cached(
                "DELETE FROM history WHERE position = (
                     SELECT position FROM history WHERE session_id = ?1
                     ORDER BY position LIMIT 1)
                 RETURNING length(CAST(entry AS BLOB))",
            )?
            .query_row(params![session_id], |row| row.get(0))?;
        records -= 1;
        bytes = bytes.saturating_sub(from_sql_count(size));
    }
    connection
        .prepare_cached("UPDATE histories SET records = ?2, bytes = ?3 WHERE session_id = ?1")?
        .execute(params![
            session_id,
            to_sql_count(records),
            to_sql_count(bytes)
        ])?;
    Ok(())
}

/// Deletes all but the newest [`SqliteStore::EVENT_RETENTION`] events.
fn prune_events(connection: &Connection) -> rusqlite::Result<usize> {
    connection.execute(
        "DELETE FROM events WHERE id < (
             SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?1)",
        params![to_sql_count(SqliteStore::EVENT_RETENTION - 1)],
    )
}

/// Runs a request query whose columns are [`REQUEST_COLUMNS`].
fn query_requests(
    connection: &Connection,
    sql: &str,
    parameters: impl rusqlite::Params,
) -> Result<Vec<StoredRequest>, StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    let mut rows = statement.query(parameters)?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        found.push(read_request(row)?);
    }
    Ok(found)
}

/// One row of [`REQUEST_COLUMNS`].
fn read_request(row: &Row<'_>) -> Result<StoredRequest, StoreError> {
    let kind: String = row.get(1)?;
    let state: String = row.get(7)?;
    let outcome = match state.as_str() {
        "pending" => None,
        _ => Some(OutcomeRecord {
            state: state.parse()?,
            body: row.get::<_, Option<String>>(8)?.unwrap_or_default(),
            resolved_at_ms: from_sql_u64(row.get::<_, Option<i64>>(9)?.unwrap_or(0)),
            decided_by: row.get(10)?,
        }),
    };
    Ok(StoredRequest {
        request: RequestRecord {
            id: row.get(0)?,
            kind: kind.parse()?,
            session_id: row.get(2)?,
            call_id: row.get(3)?,
            created_at_ms: from_sql_u64(row.get(4)?),
            expires_at_ms: row.get::<_, Option<i64>>(5)?.map(from_sql_u64),
            body: row.get(6)?,
        },
        outcome,
    })
}

/// One row of [`DELIVERY_COLUMNS`].
fn read_delivery(row: &Row<'_>) -> Result<Delivery, StoreError> {
    let message_id: String = row.get(0)?;
    let target: String = row.get(1)?;
    let state: DeliveryState = row.get::<_, String>(4)?.parse()?;
    let attempts = u32::try_from(row.get::<_, i64>(5)?).map_err(|_| {
        StoreError::Corrupt(format!(
            "the delivery of {message_id} to {target:?} counts no number of attempts"
        ))
    })?;
    let last_attempt = row
        .get::<_, Option<String>>(7)?
        .map(|json| {
            serde_json::from_str::<Attempt>(&json).map_err(|error| {
                StoreError::Corrupt(format!(
                    "the last attempt of {message_id} to {target:?}: {error}"
                ))
            })
        })
        .transpose()?;
    Ok(Delivery {
        payload: row.get(2)?,
        created_at_ms: from_sql_u64(row.get(3)?),
        state,
        attempts,
        next_attempt_ms: row.get::<_, Option<i64>>(6)?.map(from_sql_u64),
        last_attempt,
        message_id,
        target,
    })
}

/// SQLite integers are `i64`; millisecond timestamps fit for 292 million years, history
/// positions and counts for good.
fn to_sql_u64(number: u64) -> i64 {
    i64::try_from(number).unwrap_or(i64::MAX)
}

fn from_sql_u64(number: i64) -> u64 {
    u64::try_from(number).unwrap_or(0)
}

fn from_sql_count(count: i64) -> usize {
    usize::try_from(count).unwrap_or(0)
}

/// A `LIMIT` from a count; anything above `i64::MAX` means "all".
fn to_sql_count(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}
