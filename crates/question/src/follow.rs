//! Following a shared store's change log: how every instance ends up with the same requests.
//!
//! A hub over a shared store ([`HubBuilder::shared`](crate::HubBuilder::shared)) runs one
//! follower task. It reads the store's [`ChangeLog`](askbus_store::ChangeLog) from the head
//! it had when the hub loaded the store, and applies each change to the registry of its
//! kind, in log order; that is where each instance's registries change and where its bus
//! gets the request events (see the `registry` module docs). A change that is no request's
//! (an agent step some instance recorded in its session's history) is published on the bus
//! as it was recorded (a JSON event, which typed subscribers do not see), so every
//! instance's event and session streams hear of it, in the log's order. One task for both kinds keeps
//! their events in one order, so "the oldest pending request of a session" means the same
//! on every instance.
//!
//! The policy, in exact words:
//!
//! - **Nothing is skipped silently.** A change this instance cannot read is logged and
//!   passed over (it cannot be applied later either); a gap in the log (the reader fell
//!   behind the log's trimming, or the store lost its data) is *resynced*: the requests are
//!   loaded again, what is new is applied as if inserted, what ended meanwhile as if
//!   resolved, and following resumes from the new head.
//! - **A store that is down is waited for**, with a growing pause between attempts (up to
//!   [`MAX_BACKOFF`]); changes made meanwhile are read once it is back.
//! - **The task ends with the hub**: it holds its registries weakly and stops within one
//!   read ([`READ_WAIT`]) of the last hub handle being dropped.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use askbus_store::{ChangeKind, LogPosition, RequestKind, Store, StoreError};
use tokio::sync::watch;

use askbus_bus::Event;

use crate::approval::Approvals;
use crate::approval_model::ApprovalDecided;
use crate::registry::{Registry, RequestType, WeakRegistry};
use crate::service::Questions;

/// How many changes one read takes at most.
const READ_BATCH: usize = 1024;

/// How long one read waits for a change before the task checks that its hub still exists.
pub(crate) const READ_WAIT: Duration = Duration::from_secs(1);

/// The first pause after a failed read; it doubles with each failure in a row.
const MIN_BACKOFF: Duration = Duration::from_millis(50);

/// The longest pause between attempts to read a store that is down.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The registries a follower applies changes to.
pub(crate) struct Followed {
    /// The questions' registry.
    pub(crate) questions: WeakRegistry<Questions>,
    /// The approvals' registry.
    pub(crate) approvals: WeakRegistry<Approvals>,
}

/// Strong handles on both registries, for the span of one batch.
struct Registries {
    questions: Registry<Questions>,
    approvals: Registry<Approvals>,
}

/// What a follower met that it could not simply apply, counted since its hub started (a
/// server's metrics read them).
#[derive(Debug, Default)]
pub struct FollowerStats {
    resyncs: AtomicU64,
    skipped: AtomicU64,
}

impl FollowerStats {
    /// How many times the follower found a gap in the log and loaded the requests again.
    pub fn resyncs(&self) -> u64 {
        self.resyncs.load(Ordering::Relaxed)
    }

    /// How many changes it could not read or apply, and passed over.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }
}

/// Applies `store`'s change log after `position` to `followed` until the registries are
/// gone; `applied` carries the position of the last change applied (back to 0 while a
/// resync is under way: nothing is caught up until it is done), `stats` what it passed
/// over.
pub(crate) async fn follow(
    followed: Followed,
    store: Arc<dyn Store>,
    mut position: LogPosition,
    applied: watch::Sender<LogPosition>,
    stats: Arc<FollowerStats>,
) {
    let mut backoff = MIN_BACKOFF;
    loop {
        let Some(log) = store.change_log() else {
            return;
        };
        let read = log.read_after(position, READ_BATCH, READ_WAIT).await;
        let Some(registries) = followed.upgrade() else {
            return;
        };
        let outcome = match read {
            Ok(changes) => {
                for change in changes {
                    if let Err(error) = registries.apply(&change.kind) {
                        stats.skipped.fetch_add(1, Ordering::Relaxed);
                        tracing::error!("skipped {} of the shared store: {error}", change.position);
                    }
                    position = change.position;
                }
                Ok(())
            }
            Err(StoreError::LogTrimmed { after }) => {
                tracing::warn!(
                    "the shared store's change log no longer has every change after {after}: \
                     loading its requests again"
                );
                // Not caught up until the resync is done (`/ready` says so meanwhile), and
                // a store that rewound (it lost its data) is behind what was applied.
                applied.send_replace(LogPosition(0));
                resync(&registries, &*store).await.map(|head| {
                    stats.resyncs.fetch_add(1, Ordering::Relaxed);
                    position = head;
                })
            }
            Err(error) => Err(error),
        };
        drop(registries);
        match outcome {
            Ok(()) => {
                backoff = MIN_BACKOFF;
                applied.send_replace(position);
            }
            Err(error) => {
                tracing::warn!(
                    "cannot follow the shared store ({error}); trying again in {backoff:?}"
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

impl Followed {
    fn upgrade(&self) -> Option<Registries> {
        Some(Registries {
            questions: self.questions.upgrade()?,
            approvals: self.approvals.upgrade()?,
        })
    }
}

impl Registries {
    fn apply(&self, change: &ChangeKind) -> Result<(), StoreError> {
        if let ChangeKind::Event(event) = change {
            if event.event_type == ApprovalDecided::TYPE {
                // A reviewer's vote, which the approvals' registry counts and announces.
                return self.approvals.apply_vote(event);
            }
            // No registry keeps it: it is passed on, for this instance's streams.
            return self
                .questions
                .bus()
                .publish_recorded(
                    &event.event_type,
                    Some(&event.session_id),
                    &event.properties,
                )
                .map(drop)
                .map_err(|error| StoreError::Corrupt(format!("{}: {error}", event.event_type)));
        }
        match change.request_kind() {
            Some(RequestKind::Question) => self.questions.apply(change),
            Some(RequestKind::Approval) => self.approvals.apply(change),
            None => Err(StoreError::Corrupt(format!("{change:?}"))),
        }
    }
}

/// Brings both registries level with the store after a gap in the log; returns the head to
/// follow from.
async fn resync(registries: &Registries, store: &dyn Store) -> Result<LogPosition, StoreError> {
    let Some(log) = store.change_log() else {
        return Err(StoreError::Closed);
    };
    // Read first, as at start: whatever changes after it is read again, harmlessly.
    let head = log.head().await?;
    resync_kind(&registries.questions, store).await?;
    resync_kind(&registries.approvals, store).await?;
    // Votes cast in the gap are in their sessions' histories.
    registries.approvals.recount_votes().await?;
    Ok(head)
}

/// Applies to `registry` what it missed: requests now pending in the store as inserted, and
/// the outcome of each request pending here that the store has resolved.
async fn resync_kind<K: RequestType>(
    registry: &Registry<K>,
    store: &dyn Store,
) -> Result<(), StoreError> {
    let loaded = store
        .requests(K::RECORD_KIND, registry.retain_resolved())
        .await?;
    // Keys given by other instances in the gap, to requests resolved and forgotten in it,
    // are below this: no key here repeats one.
    registry.ids().raise_key_floor(loaded.requests_ever);
    let pending_in_store: HashSet<&str> = loaded
        .pending
        .iter()
        .map(|stored| stored.request.id.as_str())
        .collect();
    for stored in &loaded.pending {
        registry.apply(&ChangeKind::Inserted(stored.request.clone()))?;
    }
    for id in registry.pending_ids() {
        let id = id.to_string();
        if pending_in_store.contains(id.as_str()) {
            continue;
        }
        // Ended meanwhile; a request the store does not know is left to its timer.
        if let Some(stored) = store.get(&id).await?
            && let Some(outcome) = stored.outcome
        {
            registry.apply(&ChangeKind::Resolved {
                kind: K::RECORD_KIND,
                id,
                outcome,
            })?;
        }
    }
    Ok(())
}
