//! How long resolved requests, quiet session histories and settled outbox deliveries are
//! kept: a sweep that deletes what is older than a period.
//!
//! Every request ever asked would otherwise stay in the store for good: about a kilobyte
//! each, on disk for SQLite and in memory for Redis, where that adds up to gigabytes over
//! months of a busy deployment. A resolved request is still read for a while (an agent
//! re-asking from the same tool call after a restart, a client reading the outcome, the
//! registry reloading its newest outcomes), so it is kept for a period the operator
//! chooses, then deleted by [`forget_resolved_older_than`], which [`keep_resolved_for`]
//! runs on a schedule. Pending requests are never deleted: someone may still answer them.
//!
//! The same period applies to session histories, once a session is done: a history is
//! deleted by [`forget_quiet_histories_older_than`] when its newest record is older than the
//! period and none of the session's requests is pending (a session waiting for a human
//! keeps its timeline, whatever its age). And to the outbox: a delivery that is settled
//! (delivered, or given up on) is kept for the same period after its last attempt, for
//! whoever looks into what was sent, then deleted by [`forget_deliveries_older_than`]; a
//! pending one is never deleted (someone must still send it). [`sweep`] does all three.
//!
//! Each instance sharing a store sweeps it; deleting is idempotent, so sweeps that overlap
//! only repeat each other's work.

use std::sync::Weak;
use std::time::Duration;

use crate::{BoxFuture, Store, StoreError, now_ms};

/// How often [`keep_resolved_for`] sweeps.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(600);

/// Most requests one [`Store::forget_resolved`] call of a sweep deletes; a sweep calls
/// again until fewer were left, so writes queued meanwhile wait for one batch at most.
pub const SWEEP_BATCH: usize = 1000;

/// Deletes every request `store` resolved more than `keep` ago, [`SWEEP_BATCH`] at a time;
/// answers how many.
///
/// # Errors
///
/// [`StoreError`] if the store cannot be written; the batches before it stay deleted.
pub async fn forget_resolved_older_than(
    store: &dyn Store,
    keep: Duration,
) -> Result<usize, StoreError> {
    in_batches(keep, |before, limit| store.forget_resolved(before, limit)).await
}

/// Deletes the history of every session of `store` whose newest record is older than
/// `keep` and none of whose requests is pending, [`SWEEP_BATCH`] sessions at a time;
/// answers how many.
///
/// # Errors
///
/// [`StoreError`] if the store cannot be written; the batches before it stay deleted.
pub async fn forget_quiet_histories_older_than(
    store: &dyn Store,
    keep: Duration,
) -> Result<usize, StoreError> {
    in_batches(keep, |before, limit| {
        store.forget_quiet_histories(before, limit)
    })
    .await
}

/// Deletes every delivery of `store`'s outbox settled (delivered or abandoned) by an
/// attempt more than `keep` ago, [`SWEEP_BATCH`] at a time; answers how many. Pending
/// deliveries stay.
///
/// # Errors
///
/// [`StoreError`] if the store cannot be written; the batches before it stay deleted.
pub async fn forget_deliveries_older_than(
    store: &dyn Store,
    keep: Duration,
) -> Result<usize, StoreError> {
    in_batches(keep, |before, limit| store.forget_deliveries(before, limit)).await
}

/// Calls `forget(before_ms, SWEEP_BATCH)`, `before_ms` being `keep` ago, until a call
/// deletes less than a batch; answers how many were deleted in all.
async fn in_batches<'a>(
    keep: Duration,
    forget: impl Fn(u64, usize) -> BoxFuture<'a, usize>,
) -> Result<usize, StoreError> {
    let before = now_ms().saturating_sub(u64::try_from(keep.as_millis()).unwrap_or(u64::MAX));
    let mut forgotten = 0;
    loop {
        let deleted = forget(before, SWEEP_BATCH).await?;
        forgotten += deleted;
        if deleted < SWEEP_BATCH {
            return Ok(forgotten);
        }
    }
}

/// Runs [`sweep`] every [`SWEEP_INTERVAL`], the first one interval
/// from now, until the store is dropped ([`sweep`]s: one that fails, the store being
/// down, is made again at the next).
///
/// Run it beside a store that should not grow without bound, as the server does, after a
/// first sweep of its own before the store is loaded:
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use askbus_store::{MemoryStore, Store, keep_resolved_for, sweep};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
/// let thirty_days = Duration::from_secs(30 * 24 * 3600);
/// sweep(&*store, thirty_days).await;
/// tokio::spawn(keep_resolved_for(Arc::downgrade(&store), thirty_days));
/// # }
/// ```
pub async fn keep_resolved_for(store: Weak<dyn Store>, keep: Duration) {
    let mut sweeps =
        tokio::time::interval_at(tokio::time::Instant::now() + SWEEP_INTERVAL, SWEEP_INTERVAL);
    sweeps.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        sweeps.tick().await;
        let Some(store) = store.upgrade() else {
            return;
        };
        sweep(&*store, keep).await;
    }
}

/// One sweep, housekeeping: [`forget_resolved_older_than`],
/// [`forget_quiet_histories_older_than`] and [`forget_deliveries_older_than`]. What it
/// deleted is logged, and a failure too (it leaves old records for the next sweep, nothing
/// worse).
pub async fn sweep(store: &dyn Store, keep: Duration) {
    match forget_resolved_older_than(store, keep).await {
        Ok(0) => {}
        Ok(forgotten) => {
            tracing::info!("deleted {forgotten} request(s) resolved more than {keep:?} ago");
        }
        Err(error) => tracing::warn!("could not delete old resolved requests: {error}"),
    }
    match forget_quiet_histories_older_than(store, keep).await {
        Ok(0) => {}
        Ok(forgotten) => tracing::info!(
            "deleted the history of {forgotten} session(s) quiet for more than {keep:?}, \
             with nothing pending"
        ),
        Err(error) => tracing::warn!("could not delete old session histories: {error}"),
    }
    match forget_deliveries_older_than(store, keep).await {
        Ok(0) => {}
        Ok(forgotten) => {
            tracing::info!("deleted {forgotten} outbox deliveries settled more than {keep:?} ago")
        }
        Err(error) => tracing::warn!("could not delete old outbox deliveries: {error}"),
    }
}
