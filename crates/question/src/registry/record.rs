//! The registry's record in a [`Store`]: what is written, when, and how it is read back.
//!
//! The registry holds what cannot leave the process (the askers' channels, the watchers,
//! the timer), and a store is its record. Every registration is written as a
//! [`Write::Insert`] and every outcome as a [`Write::Resolve`], **queued under the registry
//! lock**, so the store applies them in the order the registry made them. Queueing never
//! blocks; the [`Durable`] a caller gets back completes once the write is on disk (or in
//! Redis), which is when an HTTP handler may answer `200`.
//!
//! Who decides an outcome depends on the store's role. A store only this registry writes
//! (SQLite) follows the registry: the registry resolves under its lock and the store
//! records it. A store several registries share (Redis) decides: the registry only
//! *proposes* an outcome, the store's conditional resolve picks one winner among every
//! instance's proposals, and each registry changes its state when it reads the winner in
//! the store's change log. Then the [`Durable`] of a proposal that lost fails with
//! [`DurableError::AlreadyResolved`].
//!
//! Bodies are the wire JSON of the request and of the outcome's data, so a record is
//! readable by anyone, and a restarted registry (or another instance) rebuilds the same
//! requests from it.

use std::sync::{Arc, OnceLock};

use askbus_audit::{AuditDraft, RequestShown, request_digest};
use askbus_store::{
    Ack, OutboxMessage, OutcomeRecord, OutcomeState, RequestRecord, SessionEvent, Store,
    StoreError, StoredRequest, Write, now_ms,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::identity::Identity;
use crate::model::OnTimeout;
use crate::notify::{Notice, Notifier};
use crate::outcome::{Outcome, OutcomeKind};
use crate::registry::request_type::{OutcomeOf, RequestType};

/// How the store and the registry's kinds meet.
pub(crate) struct Recorder {
    /// Where requests and outcomes are recorded.
    pub(crate) store: Arc<dyn Store>,
    /// What makes the outbox message of each change, once one is set (see the `notify`
    /// module).
    pub(crate) notifier: OnceLock<Arc<dyn Notifier>>,
}

impl Recorder {
    /// A recorder writing to `store`, telling nobody outside until a notifier is set.
    pub(crate) fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            notifier: OnceLock::new(),
        }
    }

    /// Queues the registration of `request`, and the message telling of it; with the
    /// digest of the JSON stored, which its outcome's receipt names (keep it with the
    /// pending request: see [`resolve`](Self::resolve)). The ack covers both.
    pub(crate) fn insert<K: RequestType>(&self, request: &Arc<K::Request>) -> (Ack, RequestDigest) {
        let record = request_record::<K>(request);
        let digest = request_digest(&record.body);
        let inserted = self.store.write(Write::Insert(record));
        let ack = match self.message(|sink| K::announce_asked(sink, request)) {
            Some(message) => inserted.followed_by(self.store.write(Write::Enqueue(message))),
            None => inserted,
        };
        (ack, digest)
    }

    /// Queues an audit entry of its own: `draft`, the receipt of a decision that ends no
    /// request (a grant revoked).
    pub(crate) fn audit(&self, draft: &AuditDraft) -> Ack {
        self.store.write(Write::Audit(draft.to_json()))
    }

    /// Queues `event` (a vote's record) to its session's history, and the message telling
    /// of it; the ack covers both.
    pub(crate) fn event(&self, event: SessionEvent) -> Ack {
        let message = self
            .notifier
            .get()
            .and_then(|notifier| notifier.message(Notice::of_session_event(&event)));
        let written = self.store.write(Write::Event(event));
        match message {
            Some(message) => written.followed_by(self.store.write(Write::Enqueue(message))),
            None => written,
        }
    }

    /// The outbox message of the event `announce` announces, if a notifier is set and
    /// wants it told (the event is not even made otherwise).
    fn message(&self, announce: impl FnOnce(&mut Option<Notice>)) -> Option<OutboxMessage> {
        let notifier = self.notifier.get()?;
        let mut notice = None;
        announce(&mut notice);
        notifier.message(notice?)
    }

    /// Queues the outcome of `request`, decided `by` someone (if anyone), with its audit
    /// receipt and the message telling of it: the store appends both (to its audit log,
    /// to its outbox) if (and only if) this outcome wins, in the same step.
    ///
    /// `digest` is the one [`insert`](Self::insert) (or [`stored_digest`]) gave: the
    /// request's JSON is then not written again, under the registry lock, on every
    /// outcome. Without one (a request withdrawn, no longer pending) it is made here.
    pub(crate) fn resolve<K: RequestType>(
        &self,
        request: &Arc<K::Request>,
        digest: Option<RequestDigest>,
        outcome: &OutcomeOf<K>,
        by: Option<&Identity>,
    ) -> Ack {
        let message = self.message(|sink| K::announce_outcome(sink, request, outcome, by));
        let (state, body) = match outcome {
            Outcome::Replied(reply) => (OutcomeState::Replied, to_json(reply)),
            Outcome::Rejected { reason } => (
                OutcomeState::Rejected,
                to_json(&serde_json::json!({ "reason": reason })),
            ),
            // A fallback is named in the body, so the audit receipt says what applied.
            Outcome::TimedOut => match K::on_timeout(request) {
                Some(fallback @ OnTimeout::Escalate) => (
                    OutcomeState::TimedOut,
                    to_json(&serde_json::json!({ "fallback": fallback.as_str() })),
                ),
                _ => (OutcomeState::TimedOut, "null".to_owned()),
            },
            Outcome::Defaulted(reply) => (
                OutcomeState::TimedOut,
                to_json(&Fallback {
                    fallback: DEFAULT_ANSWER.to_owned(),
                    answers: Some(reply),
                }),
            ),
            Outcome::Cancelled => (OutcomeState::Cancelled, "null".to_owned()),
        };
        let shown = RequestShown {
            id: K::id(request).to_string(),
            kind: K::RECORD_KIND,
            session_id: String::from(&**K::session_id(request)),
            digest: digest.unwrap_or_else(|| request_digest(&request_record::<K>(request).body)),
        };
        let outcome = OutcomeRecord::new(state, body, now_ms()).decided_by(by.map(to_json));
        let asked_by = K::asked_by(request).and_then(|who| serde_json::to_value(who).ok());
        let id = shown.id.clone();
        let audit = AuditDraft::of_digest(shown, &outcome, asked_by).to_json();
        self.store.write(Write::Resolve {
            kind: K::RECORD_KIND,
            id,
            outcome,
            audit: Some(audit),
            outbox: message,
        })
    }
}

/// The record of `request`, as inserted: its body is the JSON the audit receipt hashes,
/// made the same way at insert and at resolve.
fn request_record<K: RequestType>(request: &K::Request) -> RequestRecord {
    let id = K::id(request);
    RequestRecord {
        id: id.to_string(),
        kind: K::RECORD_KIND,
        session_id: String::from(&**K::session_id(request)),
        call_id: K::call_id(request).map(str::to_owned),
        created_at_ms: id.timestamp_ms(),
        expires_at_ms: K::expires_at(request),
        body: to_json(request),
    }
}

/// The SHA-256 of a request's stored JSON, which its receipt names.
pub(crate) type RequestDigest = [u8; 32];

/// The digest of a request read back from the store: of the bytes stored, whichever
/// version wrote them.
pub(crate) fn stored_digest(record: &RequestRecord) -> RequestDigest {
    request_digest(&record.body)
}

/// A request and its outcome (`None` while pending), as read back from a store.
pub(crate) type ReadBack<K> = (<K as RequestType>::Request, Option<OutcomeOf<K>>);

/// A request and its outcome read back from the store.
pub(crate) fn read_back<K: RequestType>(stored: &StoredRequest) -> Result<ReadBack<K>, StoreError> {
    let request = request_from::<K>(&stored.request)?;
    let outcome = stored
        .outcome
        .as_ref()
        .map(|outcome| outcome_from::<K>(&stored.request.id, outcome))
        .transpose()?;
    Ok((request, outcome))
}

/// A request read back from its record.
pub(crate) fn request_from<K: RequestType>(
    record: &RequestRecord,
) -> Result<K::Request, StoreError> {
    from_json(&record.id, &record.body)
}

/// The outcome of request `id` read back from its record.
pub(crate) fn outcome_from<K: RequestType>(
    id: &str,
    outcome: &OutcomeRecord,
) -> Result<OutcomeOf<K>, StoreError> {
    Ok(match outcome.state {
        OutcomeState::Replied => Outcome::Replied(from_json(id, &outcome.body)?),
        OutcomeState::Rejected => {
            #[derive(serde::Deserialize)]
            struct Rejection {
                reason: Option<String>,
            }
            let rejection: Rejection = from_json(id, &outcome.body)?;
            K::read_rejection(rejection.reason)
        }
        OutcomeState::TimedOut => match serde_json::from_str::<Fallback<K::Reply>>(&outcome.body) {
            Ok(Fallback {
                fallback,
                answers: Some(answers),
            }) if fallback == DEFAULT_ANSWER => Outcome::Defaulted(answers),
            // `null` (rejected, as before fallbacks), or `{"fallback": "escalate"}`.
            _ => Outcome::TimedOut,
        },
        OutcomeState::Cancelled => Outcome::Cancelled,
    })
}

/// The body of an outcome on expiry whose fallback was not a plain rejection.
#[derive(serde::Serialize, serde::Deserialize)]
struct Fallback<R> {
    /// Which fallback applied ([`OnTimeout::as_str`]).
    fallback: String,
    /// With `default_answer`: the answer that applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    answers: Option<R>,
}

/// [`OnTimeout::as_str`] of a default answer.
const DEFAULT_ANSWER: &str = "default_answer";

/// Who decided a stored outcome, if it says (outcomes recorded before identities were do
/// not; an unreadable name is treated the same, the outcome itself being what matters).
pub(crate) fn decided_by(outcome: &OutcomeRecord) -> Option<Identity> {
    serde_json::from_str(outcome.decided_by.as_deref()?).ok()
}

/// A request id read from a store.
pub(crate) fn parse_id<K: askbus_bus::IdKind>(id: &str) -> Result<askbus_bus::Id<K>, StoreError> {
    id.parse()
        .map_err(|error| StoreError::Corrupt(format!("request id: {error}")))
}

/// The registry's name for a stored outcome state.
pub(crate) fn outcome_kind(state: OutcomeState) -> OutcomeKind {
    match state {
        OutcomeState::Replied => OutcomeKind::Replied,
        OutcomeState::Rejected => OutcomeKind::Rejected,
        OutcomeState::TimedOut => OutcomeKind::TimedOut,
        OutcomeState::Cancelled => OutcomeKind::Cancelled,
    }
}

/// Wire JSON of a value the registry owns; those are plain data and always serialise.
fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

fn from_json<T: DeserializeOwned>(id: &str, body: &str) -> Result<T, StoreError> {
    serde_json::from_str(body)
        .map_err(|error| StoreError::Corrupt(format!("request {id}: {error}")))
}
