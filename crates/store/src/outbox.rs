//! The outbox: messages that must reach someone outside (a webhook receiver, a chat, a
//! mailbox), kept until they did.
//!
//! # Why in the store, and written with the change
//!
//! A human is told "done" (HTTP 200) once a change is durable; a receiver that is told about
//! that change later must not depend on this process living that long. So a message is
//! written **in the same atomic step** as the change it tells of: a
//! [`Write::Resolve`](crate::Write::Resolve) carries its message and appends it if and only
//! if it wins (a shared store's losing proposals tell nobody anything), and a message about
//! a change that cannot lose (an insert, a session event) is a [`Write::Enqueue`] queued
//! right after it, whose ack completes after both. A crash after the 200 therefore cannot
//! lose the message, and over a shared store exactly one instance writes each.
//!
//! One message fans out to one [`Delivery`] per target, each with its own attempts: a
//! receiver that is down holds up only its own deliveries.
//!
//! # Delivering
//!
//! Whoever sends ([`Store::claim_deliveries`](crate::Store::claim_deliveries)) claims the due
//! deliveries for a lease: another claimer (another instance) skips them until the lease
//! runs out, so a sender that dies mid-attempt is replaced after at most one lease. A store
//! only one process opens (SQLite, memory) forgets the leases of the process before it, so a
//! restarted server resends at once. Each attempt's result is a [`Write::Attempted`]: a
//! delivered or abandoned delivery is settled and is never claimed again; a failed one is
//! due again at the time the sender chose. Delivery is at least once (a sender that dies
//! after the receiver took a message but before its `Attempted` is durable sends it
//! again): receivers deduplicate by the message id.
//!
//! [`Write::Enqueue`]: crate::Write::Enqueue
//! [`Write::Attempted`]: crate::Write::Attempted

/// A message to deliver to each of its targets, written with the change it tells of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// The message's id (`msg_` + ULID, ascending in creation order): the same for every
    /// target, so a receiver that gets it twice can tell.
    pub id: String,
    /// Where it goes: the names of the senders' targets (a webhook endpoint, a channel).
    /// Each gets its own [`Delivery`].
    pub targets: Vec<String>,
    /// The message, as JSON; the store does not look inside.
    pub payload: String,
    /// When it was made, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
}

/// One message on its way to one target, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The message's id.
    pub message_id: String,
    /// The target's name.
    pub target: String,
    /// The message, as JSON.
    pub payload: String,
    /// When the message was made, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Where it stands.
    pub state: DeliveryState,
    /// How many attempts were made.
    pub attempts: u32,
    /// When it is next due, milliseconds since the Unix epoch, while pending (a claimed
    /// delivery's lease end).
    pub next_attempt_ms: Option<u64>,
    /// The newest attempt, if any was made.
    pub last_attempt: Option<Attempt>,
}

/// Where a [`Delivery`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Not delivered yet: due at its `next_attempt_ms`.
    Pending,
    /// The target took it.
    Delivered,
    /// The sender gave up (the retry window ran out, or the target refused it for good).
    Abandoned,
}

impl DeliveryState {
    /// Its stable name (`pending`, `delivered`, `abandoned`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Abandoned => "abandoned",
        }
    }
}

impl std::str::FromStr for DeliveryState {
    type Err = crate::StoreError;

    fn from_str(text: &str) -> Result<Self, crate::StoreError> {
        match text {
            "pending" => Ok(Self::Pending),
            "delivered" => Ok(Self::Delivered),
            "abandoned" => Ok(Self::Abandoned),
            other => Err(crate::StoreError::Corrupt(format!(
                "unknown delivery state {other:?}"
            ))),
        }
    }
}

/// What one attempt to deliver did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Attempt {
    /// When it ended, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The receiver's HTTP status, if it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it failed (a connection error, a timeout, the status's meaning); `None` when it
    /// was delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What becomes of the delivery.
    pub then: AfterAttempt,
}

/// What becomes of a delivery after an [`Attempt`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "then", rename_all = "snake_case")]
pub enum AfterAttempt {
    /// Delivered: settled.
    Delivered,
    /// Failed; due again at this time (milliseconds since the Unix epoch).
    RetryAt {
        /// When.
        at_ms: u64,
    },
    /// Failed, and the sender gives up: settled.
    Abandon,
}

impl Attempt {
    /// The state the delivery is in after this attempt, and when it is next due.
    pub fn outcome(&self) -> (DeliveryState, Option<u64>) {
        match self.then {
            AfterAttempt::Delivered => (DeliveryState::Delivered, None),
            AfterAttempt::RetryAt { at_ms } => (DeliveryState::Pending, Some(at_ms)),
            AfterAttempt::Abandon => (DeliveryState::Abandoned, None),
        }
    }
}

/// Which deliveries a [`Store::deliveries`](crate::Store::deliveries) read answers: newest
/// message first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryQuery {
    /// Only deliveries of messages older than this message id (the last one of the previous
    /// page); `None`: from the newest.
    pub before: Option<String>,
    /// Only deliveries in this state; `None`: every state.
    pub state: Option<DeliveryState>,
    /// At most this many.
    pub limit: usize,
}
