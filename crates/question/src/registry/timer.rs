//! The registry's timer: one task per registry serves every deadline and follow-up step.
//!
//! Timeouts cost no task and no timer per request: deadlines live in one ordered index,
//! `(at, id, what)` in the registry's state, and one driver task per registry sleeps until
//! the earliest of them. A request's follow-ups (its reminder and escalation: see the
//! `follow_up` module) are entries of the same index, served by the same task. The task
//! holds its registry weakly, so it never keeps a dropped registry alive, and expires at
//! most [`EXPIRY_BATCH`] requests per lock acquisition, so a mass expiry never holds the
//! lock for long.
//!
//! Over a shared store every instance runs the timer of every request it knows: each
//! expiry is proposed like any outcome, the first the store takes wins, and the others
//! lose harmlessly. A store that cannot be reached makes the request due again after
//! [`EXPIRY_RETRY`]. Follow-ups fire only on the instance that registered the request
//! (see `storage`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use askbus_bus::Id;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{Inner, Registry, RequestType, State, session_event};
use crate::durable::Durable;
use crate::error::DurableError;
use crate::follow_up::Due;

/// Most requests timed out per registry-lock acquisition.
const EXPIRY_BATCH: usize = 1024;

/// How long after a failed attempt (the shared store unreachable) an expiry is tried again.
pub(super) const EXPIRY_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

impl<K: RequestType> Registry<K> {
    /// Times out requests whose deadline is at or before `now`, at most [`EXPIRY_BATCH`]
    /// of them, so that a mass expiry never holds the lock for long; returns the next
    /// deadline (which is `<= now` if more are already due).
    ///
    /// Over a shared store each expiry is proposed like any outcome; an instance that
    /// loses the race to another's expiry (or reply) loses nothing.
    pub(super) fn expire_due(&self, now: Instant) -> Option<Instant> {
        let mut state = self.inner.lock();
        let mut deliveries = Vec::new();
        let mut proposals = Vec::new();
        let mut steps = 0;
        while steps < EXPIRY_BATCH
            && let Some(&(at, id, due)) = state.deadlines.first()
            && at <= now
        {
            state.deadlines.pop_first();
            steps += 1;
            let Some(request) = state
                .pending
                .get(&id)
                .map(|entry| Arc::clone(&entry.request))
            else {
                continue;
            };
            if due != Due::Expire {
                self.follow_up(&mut state, &request, due);
                continue;
            }
            let outcome = K::timeout_outcome(&request);
            match self.inner.deciding_store() {
                None => {
                    deliveries.extend(self.inner.finish(&mut state, id, outcome, None));
                }
                Some(store) => {
                    let proposal = self.propose(store, &mut state, &request, outcome, None);
                    proposals.push((id, proposal));
                }
            }
        }
        let next = state.deadlines.first().map(|&(at, _, _)| at);
        drop(state);
        for delivery in deliveries {
            // Nobody is told of an expiry but the asker: nothing waits for the record.
            drop(delivery.send());
        }
        for (id, proposal) in proposals {
            self.expire_in_background(id, proposal);
        }
        next
    }

    /// Fires the follow-up step `due` (a reminder or an escalation) of pending `request`:
    /// recorded in its session's history with its outbox message, then published (over a
    /// shared store, by every instance's follower when the log brings it back: see the
    /// module docs). Nothing waits for the record: a follow-up is no change of the request.
    pub(super) fn follow_up(&self, state: &mut State<K>, request: &Arc<K::Request>, due: Due) {
        let announced = state
            .pending
            .get(&K::id(request))
            .is_some_and(|entry| entry.announced);
        let record = self.inner.storage.recorder().and_then(|_| {
            let mut notice = None;
            K::announce_follow_up(&mut notice, request, due);
            notice.and_then(session_event)
        });
        let publish_here = self.inner.storage.record_follow_up(record);
        if publish_here && announced {
            K::announce_follow_up(&mut &self.inner.bus, request, due);
        }
    }

    /// Waits for the store's verdict on an expiry in a task of its own. A store that could
    /// not be reached makes the request due again after [`EXPIRY_RETRY`], so it still
    /// times out once the store is back.
    pub(super) fn expire_in_background(&self, id: Id<K::IdPrefix>, proposal: Durable) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let registry = self.clone();
        runtime.spawn(async move {
            if let Err(DurableError::Store(error)) = proposal.await {
                tracing::warn!("{} could not be timed out: {error}", K::request_id(id));
                let mut state = registry.inner.lock();
                let retry = Instant::now() + EXPIRY_RETRY;
                if let Some(entry) = state.pending.get_mut(&id) {
                    entry.deadline = Some(retry);
                    if state.add_due(retry, id, Due::Expire) {
                        registry.inner.timer_wakeup.notify_one();
                    }
                }
            }
        });
    }

    /// Starts the timer driver once, if a Tokio runtime is available. Without one the
    /// deadlines are kept and honoured once any later registration finds a runtime.
    pub(super) fn ensure_timer_driver(&self) {
        if self.inner.timer_started.load(Ordering::Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self.inner.timer_started.swap(true, Ordering::AcqRel) {
            runtime.spawn(run_timer(
                Arc::downgrade(&self.inner),
                Arc::clone(&self.inner.timer_wakeup),
            ));
        }
    }
}

/// The one timer task of a registry: sleeps until the earliest deadline, expires what is
/// due, repeats. Holds only a weak reference so it never keeps a dropped registry alive.
async fn run_timer<K: RequestType>(registry: Weak<Inner<K>>, wakeup: Arc<Notify>) {
    loop {
        let now = Instant::now();
        let next = match registry.upgrade() {
            Some(inner) => Registry { inner }.expire_due(now),
            None => return,
        };
        match next {
            // More were due than one batch: let other tasks in before the next batch.
            Some(at) if at <= now => tokio::task::yield_now().await,
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = wakeup.notified() => {}
                }
            }
            None => wakeup.notified().await,
        }
    }
}
