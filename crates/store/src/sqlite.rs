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
use crate::{
    Ack, BoxFuture, ChangeKind, EventRecord, HistoryLimit, HistoryPage, HistoryRecord, Loaded,
    OutcomeRecord, RequestKind, RequestRecord, Store, StoreError, StoredRequest, Write, Written,
    now_ms,
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
    /// How much a session's history keeps; read by the writer thread.
    history_limit: Arc<SharedHistoryLimit>,
    /// The writer thread, joined on drop so the file's lock is released when drop returns.
    writer: Option<JoinHandle<()>>,
}

/// Work for the writer thread.
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
];

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
                history_limit,
                writer: Some(writer),
            }),
        })
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
        let (sender, ack) = Ack::channel();
        match self.shared.jobs.send(Job::Write(write, sender)) {
            Ok(()) => ack,
            Err(_) => Ack::ready(Err(StoreError::Closed)),
        }
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
            Ok(Loaded { pending, resolved })
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
    // A failing statement rolls back only itself, so one bad write does not sink the group.
    let results: Vec<_> = group
        .iter()
        .map(|(write, _)| apply(&transaction, write, history_limit))
        .collect();
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
        Write::Resolve { kind, id, outcome } => {
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
    }
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
