//! Forgetting resolved requests and quiet histories, a batch at a time.

use std::sync::LazyLock;

use redis::aio::MultiplexedConnection;

use super::keys::{Keys, call_field};
use crate::{RequestKind, StoreError};

/// Deletes the histories of up to `limit` quiet sessions (see
/// [`Store::forget_quiet_histories`]): the candidates come from `histories` by the time of
/// their newest record, a page at a time, and one script per page deletes those still
/// quiet and not waiting; a page's waiting sessions are passed over for the next page.
///
/// [`Store::forget_quiet_histories`]: crate::Store::forget_quiet_histories
pub(super) async fn forget_quiet_histories(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
    before_ms: u64,
    limit: usize,
) -> Result<usize, StoreError> {
    let mut forgotten = 0;
    let mut skipped = 0;
    while forgotten < limit {
        let page = limit - forgotten;
        let sessions: Vec<String> = redis::cmd("ZRANGE")
            .arg(keys.histories())
            .arg("-inf")
            .arg(format!("({before_ms}"))
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(skipped)
            .arg(page)
            .query_async(&mut *connection)
            .await?;
        if sessions.is_empty() {
            break;
        }
        let mut script = FORGET_HISTORIES_SCRIPT.key(keys.histories());
        script
            .key(keys.waiting())
            .key(keys.history_bytes())
            .arg(before_ms);
        for session in &sessions {
            script.key(keys.history(session)).arg(session);
        }
        let deleted: usize = script.invoke_async(&mut *connection).await?;
        forgotten += deleted;
        skipped += sessions.len() - deleted;
        if sessions.len() < page {
            break;
        }
    }
    Ok(forgotten)
}

/// Deletes the histories of sessions still quiet (newest record before `ARGV[1]`) with no
/// pending request; answers how many.
///
/// KEYS: `histories`, `waiting`, `history_bytes`, then each session's history. ARGV: the
/// time, then each session.
const FORGET_HISTORIES: &str = include_str!("lua/forget_histories.lua");

/// [`FORGET_HISTORIES`], sent by its SHA1 (and loaded when Redis does not have it).
static FORGET_HISTORIES_SCRIPT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(FORGET_HISTORIES));

/// Deletes up to `limit` of the requests resolved before `before_ms`, the longest resolved
/// first (see [`Store::forget_resolved`]): the ids come from `resolved_at`, each request's
/// kind and tool call from its hash, and one script deletes them all.
///
/// [`Store::forget_resolved`]: crate::Store::forget_resolved
pub(super) async fn forget_resolved(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
    before_ms: u64,
    limit: usize,
) -> Result<usize, StoreError> {
    let ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(keys.resolved_at())
        .arg("-inf")
        .arg(format!("({before_ms}"))
        .arg("BYSCORE")
        .arg("LIMIT")
        .arg(0)
        .arg(i64::try_from(limit).unwrap_or(i64::MAX))
        .query_async(&mut *connection)
        .await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let mut reads = redis::pipe();
    for id in &ids {
        reads
            .cmd("HMGET")
            .arg(keys.request(id))
            .arg("kind")
            .arg("session")
            .arg("call");
    }
    let found: Vec<(Option<String>, Option<String>, Option<String>)> =
        reads.query_async(&mut *connection).await?;
    let mut script = FORGET_RESOLVED_SCRIPT.key(keys.resolved_at());
    for (id, (kind, session, call)) in ids.iter().zip(found) {
        // A request whose hash is gone is only taken out of `resolved_at`.
        let kind = kind
            .and_then(|kind| kind.parse().ok())
            .unwrap_or(RequestKind::Question);
        let field = session
            .zip(call)
            .map(|(session, call)| call_field(&session, &call))
            .unwrap_or_default();
        script
            .key(keys.request(id))
            .key(keys.resolved(kind))
            .key(keys.calls(kind))
            .arg(id)
            .arg(field);
    }
    Ok(script.invoke_async(&mut *connection).await?)
}

/// Deletes resolved requests: the hash, its place in the resolved set, its tool call's
/// entry (unless the call has asked again since), and its place in `resolved_at`; answers
/// how many it took out of `resolved_at` (a sweep running beside another finds some gone).
/// A request still pending is left alone.
///
/// KEYS: `resolved_at`, then per request its hash, resolved set and calls hash. ARGV: per
/// request its id and calls field (`''` for none).
const FORGET_RESOLVED: &str = include_str!("lua/forget_resolved.lua");

/// [`FORGET_RESOLVED`], sent by its SHA1 (and loaded when Redis does not have it).
static FORGET_RESOLVED_SCRIPT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(FORGET_RESOLVED));
