//! The outbox in Redis: claiming due deliveries, listing and forgetting them.

use std::collections::HashMap;
use std::sync::LazyLock;

use redis::aio::MultiplexedConnection;

use super::keys::Keys;
use crate::{Delivery, DeliveryQuery, StoreError};

/// Claims up to a number of due deliveries for a lease, the longest due first (ties by
/// member name: message id, then target): each is re-scored in `outbox:due` to the lease's
/// end, so no claimer, of any instance, finds it due again before then; answers the
/// claimed deliveries' hashes, then the members found due that are no pending delivery
/// (their hash gone or damaged), which are taken out of `outbox:due`.
///
/// KEYS: `outbox:due`. ARGV: the time now, the lease's end, the most to claim, the
/// delivery key prefix.
const CLAIM_DELIVERIES: &str = include_str!("lua/claim_deliveries.lua");

/// [`CLAIM_DELIVERIES`], sent by its SHA1 (and loaded when Redis does not have it).
pub(super) static CLAIM_DELIVERIES_SCRIPT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(CLAIM_DELIVERIES));

/// Deletes up to a number of settled deliveries whose last attempt was before a time, the
/// oldest first (ties by member name); answers how many.
///
/// KEYS: `outbox:settled`, `outbox:due`, `outbox:order`. ARGV: the time, the most to
/// delete, the delivery key prefix.
const FORGET_DELIVERIES: &str = include_str!("lua/forget_deliveries.lua");

/// [`FORGET_DELIVERIES`], sent by its SHA1 (and loaded when Redis does not have it).
pub(super) static FORGET_DELIVERIES_SCRIPT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(FORGET_DELIVERIES));

/// The deliveries `query` names (see [`Store::deliveries`]): members of `outbox:order` from
/// the newest down, a batch at a time, their hashes read and filtered by state, until the
/// page is full. A member whose hash is gone (forgotten meanwhile) is skipped.
///
/// [`Store::deliveries`]: crate::Store::deliveries
pub(super) async fn deliveries(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
    query: &DeliveryQuery,
) -> Result<Vec<Delivery>, StoreError> {
    let mut page = Vec::new();
    if query.limit == 0 {
        return Ok(page);
    }
    // Without a state to match, every member read is kept: read no more than the page.
    let batch = if query.state.is_some() {
        query.limit.clamp(100, 1000)
    } else {
        query.limit.min(1000)
    };
    // A member is its message id and a tab then its target: below `before` in lexical
    // order exactly when its message id is (no message id holds a tab).
    let mut below = query
        .before
        .as_ref()
        .map_or_else(|| "+".to_owned(), |before| format!("({before}"));
    loop {
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(keys.outbox_order())
            .arg(&below)
            .arg("-")
            .arg("BYLEX")
            .arg("REV")
            .arg("LIMIT")
            .arg(0)
            .arg(batch)
            .query_async(&mut *connection)
            .await?;
        let Some(last) = members.last() else { break };
        below = format!("({last}");
        let mut reads = redis::pipe();
        for member in &members {
            reads.cmd("HGETALL").arg(keys.delivery(member));
        }
        let hashes: Vec<HashMap<String, String>> = reads.query_async(&mut *connection).await?;
        for fields in hashes.into_iter().filter(|fields| !fields.is_empty()) {
            let delivery = read_delivery(fields)?;
            if query.state.is_none_or(|state| delivery.state == state) {
                page.push(delivery);
                if page.len() == query.limit {
                    break;
                }
            }
        }
        if page.len() == query.limit || members.len() < batch {
            break;
        }
    }
    // Newest message first, a message's deliveries by target.
    page.sort_by(|a, b| {
        b.message_id
            .cmp(&a.message_id)
            .then_with(|| a.target.cmp(&b.target))
    });
    Ok(page)
}

/// A delivery's hash back as a delivery.
pub(super) fn read_delivery(mut fields: HashMap<String, String>) -> Result<Delivery, StoreError> {
    let message_id = fields.remove("message").unwrap_or_default();
    let target = fields.remove("target").unwrap_or_default();
    let what = || format!("the delivery of {message_id:?} to {target:?}");
    let mut take = |name: &str| {
        fields
            .remove(name)
            .ok_or_else(|| StoreError::Corrupt(format!("{} has no {name}", what())))
    };
    let payload = take("payload")?;
    let created = take("created")?;
    let state = take("state")?;
    let attempts = take("attempts")?;
    let next = fields.remove("next");
    let last = fields.remove("last");
    let number = |text: &str| {
        text.parse::<u64>()
            .map_err(|_| StoreError::Corrupt(format!("{}: {text:?} is not a number", what())))
    };
    if message_id.is_empty() {
        return Err(StoreError::Corrupt(format!("{} names no message", what())));
    }
    let state = state.parse()?;
    Ok(Delivery {
        payload,
        created_at_ms: number(&created)?,
        state,
        attempts: u32::try_from(number(&attempts)?)
            .map_err(|_| StoreError::Corrupt(format!("{}: too many attempts", what())))?,
        next_attempt_ms: next.as_deref().map(number).transpose()?,
        last_attempt: last
            .map(|json| {
                serde_json::from_str(&json)
                    .map_err(|error| StoreError::Corrupt(format!("{}: {error}", what())))
            })
            .transpose()?,
        message_id,
        target,
    })
}
