//! The schema version a Redis prefix records, and the upgrades to this build's.

use redis::aio::MultiplexedConnection;

use super::keys::Keys;
use crate::{RequestKind, StoreError};

/// The schema version this build writes; `{prefix}:schema` holds the stored one.
///
/// - 1: change log entries as hash fields (`op`, `id`, the request's fields).
/// - 2: each change log entry is one `change` field, the change's JSON. The keys of
///   requests are as in 1; a version 1 prefix is upgraded by setting its version, because
///   no reader ever reads an entry older than the log's head when it opened (followers
///   start at the head, and a reader that falls behind loads the requests again). Servers
///   of version 1 must be stopped first: their entries are unreadable to version 2.
/// - 3: every resolved request is also in `resolved_at`, by the time it was resolved, for
///   [`Store::forget_resolved`]; the upgrade adds the requests resolved before it. Servers
///   of version 2 should be stopped first: the requests they resolve are never forgotten.
/// - 4: session histories (`hist:{session}`, `histories`) and the count of each session's
///   pending requests (`waiting`), which keeps a waiting session's history from being
///   forgotten; the upgrade counts the requests pending before it. Histories start empty.
///   Servers of version 3 should be stopped first: they write no history, and their
///   followers cannot read the agent steps of version 4 in the log.
/// - 5: histories are trimmed by bytes too, counted in `history_bytes`; a history of
///   version 4 is counted whole at its next record (no upgrade step). Servers of version 4
///   should be stopped first: they neither count nor trim by bytes.
/// - 6: a request's hash names who decided its outcome (`decided_by`), and a winning
///   resolution may append an entry to the audit log (`audit`, `audit:seq`, sealed in
///   `audit:seals`); no upgrade step (the log starts empty). Servers of version 5 should be
///   stopped first: their resolutions leave no audit entry, and the scripts' arguments
///   changed.
/// - 7: the outbox (`dlv:{message}\t{target}` hashes, `outbox:due`, `outbox:settled`,
///   `outbox:order`), written by the changes script; no upgrade step (the outbox starts
///   empty). Servers of version 6 should be stopped first: their resolutions add no
///   message to the outbox, so receivers would not hear of them.
///
/// [`Store::forget_resolved`]: crate::Store::forget_resolved
const SCHEMA_VERSION: i64 = 7;

/// Sets the schema version unless a newer one is there; answers the version found (or
/// the one set, on a fresh prefix). KEYS: the schema key. ARGV: this build's version.
const CLAIM_SCHEMA: &str = include_str!("lua/claim_schema.lua");

/// Brings the keys under the prefix to [`SCHEMA_VERSION`]: runs the upgrades a stored
/// older version needs, then records this version.
///
/// # Errors
///
/// [`StoreError::Redis`] if Redis fails, [`StoreError::NewerSchema`] if a newer askbus
/// wrote the keys.
pub(super) async fn migrate(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
) -> Result<(), StoreError> {
    // The upgrades are done before the version says so, so that an upgrade cut short
    // is done again by the next opener (each is idempotent).
    let stored: Option<i64> = redis::cmd("GET")
        .arg(keys.schema())
        .query_async(&mut *connection)
        .await?;
    if stored.is_some_and(|version| version < 3) {
        add_resolved_times(connection, keys).await?;
    }
    if stored.is_some_and(|version| version < 4) {
        count_waiting_sessions(connection, keys).await?;
    }
    // A fresh or older prefix gets this version (see `SCHEMA_VERSION` for the
    // upgrades); a newer one keeps its own, and this build refuses it.
    let version: i64 = redis::Script::new(CLAIM_SCHEMA)
        .key(keys.schema())
        .arg(SCHEMA_VERSION)
        .invoke_async(&mut *connection)
        .await?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// The upgrade to schema version 3: puts every resolved request in `resolved_at`, by the
/// time it was resolved, a batch at a time.
async fn add_resolved_times(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
) -> Result<(), StoreError> {
    for kind in RequestKind::ALL {
        let resolved = keys.resolved(kind);
        each_request_field(
            connection,
            keys,
            &resolved,
            "resolved_at",
            |ids, times: Vec<Option<u64>>| {
                let mut adds = redis::pipe();
                let mut gone = 0;
                for (id, time) in ids.iter().zip(times) {
                    match time {
                        Some(time) => adds.zadd(keys.resolved_at(), id, time).ignore(),
                        // Its request was deleted by hand (or evicted): nothing to keep.
                        None => {
                            gone += 1;
                            adds.zrem(&resolved, id).ignore()
                        }
                    };
                }
                (adds, gone)
            },
        )
        .await?;
    }
    Ok(())
}

/// The upgrade to schema version 4: counts every session's pending requests into
/// `waiting`, a batch at a time (from scratch, so an upgrade cut short and done again
/// counts each request once).
async fn count_waiting_sessions(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
) -> Result<(), StoreError> {
    redis::cmd("DEL")
        .arg(keys.waiting())
        .query_async::<()>(&mut *connection)
        .await?;
    for kind in RequestKind::ALL {
        let pending = keys.pending(kind);
        each_request_field(
            connection,
            keys,
            &pending,
            "session",
            |_, sessions: Vec<Option<String>>| {
                let mut counts = redis::pipe();
                for session in sessions.into_iter().flatten() {
                    counts.hincr(keys.waiting(), session, 1).ignore();
                }
                (counts, 0)
            },
        )
        .await?;
    }
    Ok(())
}

/// Reads `field` of the request of every id in the sorted set `set`, a thousand at a time,
/// and runs the pipeline `batch` makes of each thousand; `batch` also answers how many of
/// them it takes out of `set`, so the next thousand starts where they end.
async fn each_request_field<T: redis::FromRedisValue>(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
    set: &str,
    field: &str,
    mut batch: impl FnMut(&[String], Vec<Option<T>>) -> (redis::Pipeline, isize),
) -> Result<(), StoreError> {
    const BATCH: isize = 1000;
    let mut start = 0;
    loop {
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(set)
            .arg(start)
            .arg(start + BATCH - 1)
            .query_async(&mut *connection)
            .await?;
        if ids.is_empty() {
            return Ok(());
        }
        let mut reads = redis::pipe();
        for id in &ids {
            reads.cmd("HGET").arg(keys.request(id)).arg(field);
        }
        let values: Vec<Option<T>> = reads.query_async(&mut *connection).await?;
        let (writes, removed) = batch(&ids, values);
        writes.query_async::<()>(&mut *connection).await?;
        start += BATCH - removed;
    }
}
