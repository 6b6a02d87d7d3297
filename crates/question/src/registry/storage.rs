//! Where a registry keeps its record and who decides its outcomes: its storage mode.
//!
//! A registry runs in one of three modes, chosen when it is made (by the hub's constructor:
//! in memory, over SQLite, over Redis). The registry's code is the same in all three; what
//! differs is asked of a [`Storage`] here, one method per difference, so no mode is a
//! branch spread through the registry:
//!
//! - **Memory** ([`Storage::Memory`]): the registry decides every outcome under its lock,
//!   and nothing is written. Nothing survives the process.
//! - **Record** ([`Storage::Record`], SQLite): the registry still decides, and the store
//!   *follows*: each registration, outcome, vote and follow-up is queued to the store under
//!   the lock, so the store applies them in the registry's order, and the [`Durable`] a
//!   caller awaits is the store's ack. Only this process writes the store, so only this
//!   registry fires a restored request's reminders and escalations.
//! - **Shared** ([`Storage::Shared`], Redis, or a `MemoryStore` shared in one process): the
//!   store *decides*. The registry proposes an outcome; the store's conditional resolve
//!   takes one proposal per request, from whichever instance; every registry changes its
//!   state only when its follower applies the store's change log (see the `follow`
//!   module). Votes and follow-ups are written, not applied: they come back through the
//!   log too, on every instance, in one order.
//!
//! ## Reading your own writes over a shared store
//!
//! A reply the store took is durable at once, but this instance shows it only once its
//! follower applied it. So the proposal's [`Durable`] completes when this instance's
//! follower has applied **the change itself**: the outcome the store took, which ends the
//! request here (the registry tells the proposal, as it tells any waiter), and a vote,
//! which this instance counts. The follower applies the log in order, so every change
//! before it is applied too. A reply answered `200` is then seen by the next `GET` to the
//! same instance, however far the follower had fallen behind; no fixed wait can promise
//! that, and no second round trip to the store (to read where its log is) is needed. A
//! follower cut off from the store (Redis down) holds nobody for longer than
//! `APPLIED_LIMIT` (10 s): the change is durable, only reading it back here is late.
//!
//! [`Durable`]: crate::Durable

use askbus_store::{Ack, SessionEvent};

use super::record::{Recorder, RequestDigest};
use super::request_type::{OutcomeOf, RequestType};
use crate::identity::Identity;

/// How a registry uses the store it records in, as its constructor is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreRole {
    /// Only this registry writes the store (SQLite): the registry decides every outcome and
    /// the store keeps the record.
    Record,
    /// Several registries share the store (Redis): the store decides every outcome and
    /// each registry follows its change log. See the module docs.
    Shared,
}

/// Whether a request read from the store fires its follow-ups here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FollowUps {
    /// Here: this registry is the only one (the store only records), so it fires those
    /// still to come (one due before it started fired then, or is let go).
    Fire,
    /// Not here: another instance registered it, and fires them.
    Elsewhere,
}

/// A registry's storage mode; see the module docs.
pub(super) enum Storage {
    /// No store.
    Memory,
    /// A store that follows this registry.
    Record(Recorder),
    /// A store that decides, shared with other registries.
    Shared {
        /// Where proposals and records go.
        recorder: Recorder,
    },
}

impl Storage {
    /// The mode of a registry recording in `recorder` in `role`, or in memory.
    pub(super) fn new(recorder: Option<(Recorder, StoreRole)>) -> Self {
        match recorder {
            None => Self::Memory,
            Some((recorder, StoreRole::Record)) => Self::Record(recorder),
            Some((recorder, StoreRole::Shared)) => Self::Shared { recorder },
        }
    }

    /// The store's side, in either mode that has a store: registrations are written, and
    /// reads go there.
    pub(super) fn recorder(&self) -> Option<&Recorder> {
        match self {
            Self::Memory => None,
            Self::Record(recorder) | Self::Shared { recorder } => Some(recorder),
        }
    }

    /// The shared store that decides this registry's outcomes, if it has one.
    pub(super) fn deciding(&self) -> Option<&Recorder> {
        match self {
            Self::Shared { recorder } => Some(recorder),
            Self::Memory | Self::Record(_) => None,
        }
    }

    /// Whether the requests this registry reads from its store fire their follow-ups here.
    pub(super) fn follow_ups_of_restored(&self) -> FollowUps {
        match self {
            Self::Shared { .. } => FollowUps::Elsewhere,
            Self::Memory | Self::Record(_) => FollowUps::Fire,
        }
    }

    /// Writes the outcome this registry decided, where the store follows it; `None` where
    /// there is nothing to write (in memory) or the store made the outcome itself (it is
    /// being applied from a shared store's log).
    pub(super) fn record_outcome<K: RequestType>(
        &self,
        request: &std::sync::Arc<K::Request>,
        digest: Option<RequestDigest>,
        outcome: &OutcomeOf<K>,
        by: Option<&Identity>,
    ) -> Option<Ack> {
        match self {
            Self::Record(recorder) => Some(recorder.resolve::<K>(request, digest, outcome, by)),
            Self::Memory | Self::Shared { .. } => None,
        }
    }

    /// Writes a vote this registry counted, where the store follows it (over a shared store
    /// a vote is written before it is counted, by `Registry::vote`).
    pub(super) fn record_vote(&self, record: SessionEvent) -> Option<Ack> {
        match self {
            Self::Record(recorder) => Some(recorder.event(record)),
            Self::Memory | Self::Shared { .. } => None,
        }
    }

    /// Writes a follow-up step's record (`event`, if it has one) to the store; returns
    /// whether this registry publishes the step itself: in memory and where the store
    /// follows, yes; over a shared store, every instance publishes it when the log brings
    /// it back.
    pub(super) fn record_follow_up(&self, event: Option<SessionEvent>) -> bool {
        if let (Some(recorder), Some(event)) = (self.recorder(), event) {
            // Nothing waits for it: a follow-up is no change of the request.
            drop(recorder.event(event));
        }
        !matches!(self, Self::Shared { .. })
    }
}
