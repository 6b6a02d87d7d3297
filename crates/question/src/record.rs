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

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use askbus_audit::{AuditDraft, RequestShown, request_digest};
use askbus_store::{
    Ack, ChangeKind, OutboxMessage, OutcomeRecord, OutcomeState, RequestKind, RequestRecord,
    SessionEvent, Store, StoreError, StoredRequest, Write, Written, now_ms,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::approval::{ApprovalOutcome, ApprovalRegistryKind};
use crate::approval_model::{ApprovalId, ApprovalRequest};
use crate::follow_up::OnTimeout;
use crate::identity::{Identity, NotAllowed};
use crate::interrupt::RequestId;
use crate::model::{QuestionId, QuestionRequest};
use crate::notify::{Notice, Notifier};
use crate::registry::{Kind, Outcome, OutcomeKind};
use crate::service::{QuestionOutcome, QuestionRegistryKind};

/// Completes when a change to a request (its registration or its outcome) is durable in the
/// service's store; at once when the service has no store.
///
/// Await it before telling a human their answer is in: a crash after that point cannot lose
/// it. Dropping it does not undo or delay the change, it only stops waiting; what the
/// registry does once the store answered still happens.
///
/// # Errors
///
/// [`DurableError::Store`] when the store could not record the change. A registration
/// that could not be recorded is withdrawn: the request is cancelled (see
/// `AskError::NotRecorded`). An outcome that could not be recorded has still happened in
/// this process, with a store only this process writes (the asker may already have the
/// answer), but will not survive a restart; with a store several instances share, nothing
/// changed anywhere.
///
/// [`DurableError::AlreadyResolved`] when, with a shared store, another instance resolved
/// the request first: this answer was not taken.
pub struct Durable {
    /// What there is to wait for.
    state: DurableState,
}

/// Why a change is not durable.
#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// Another instance sharing the store resolved the request first; this change was not
    /// made (an HTTP client hears `409`, as for a request already resolved here).
    #[error("request {request} was already {outcome}")]
    AlreadyResolved {
        /// The request.
        request: RequestId,
        /// How it ended.
        outcome: OutcomeKind,
    },
    /// The store could not record the change.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A vote was recorded but does not count: over a shared store, another vote of the
    /// same reviewer, cast through another instance, was counted first (an HTTP client
    /// hears `403`).
    #[error("the vote does not count: {0}")]
    NotCounted(NotAllowed),
}

/// What a [`Durable`] waits for.
enum DurableState {
    /// Nothing: no store, or nothing was written.
    Done,
    /// A write to a store that follows this registry.
    Recorded(Ack),
    /// A write to a store that follows this registry, and what is done once the store
    /// answered: handing the outcome to those who wait for it, so none of them acts on an
    /// answer a crash could still lose (`None` once done).
    Delivering(Ack, Option<Box<dyn FnOnce() + Send>>),
    /// An outcome proposed to a store that decides: its verdict, then this registry's
    /// applying of it.
    Decided(Pin<Box<dyn Future<Output = Result<(), DurableError>> + Send>>),
}

/// A request change of a store's record (a record of a session's history, an entry of the
/// change log) read back as the request, or the outcome, it stands for: what a reader of
/// the record needs to show it, without a registry.
///
/// # Examples
///
/// ```
/// use askbus_question::RecordedChange;
/// use askbus_store::{ChangeKind, OutcomeRecord, OutcomeState, RequestKind};
///
/// let ended = ChangeKind::Resolved {
///     kind: RequestKind::Question,
///     id: "que_01JZ6Q3V8R5M2K7D4T9WXYZABC".into(),
///     outcome: OutcomeRecord::new(OutcomeState::Replied, r#"[["Yes"]]"#, 1_700_000_000_000),
/// };
/// let Some(RecordedChange::QuestionEnded { outcome, .. }) = RecordedChange::read(&ended).unwrap()
/// else {
///     panic!("a question's outcome");
/// };
/// assert_eq!(outcome, askbus_question::Outcome::Replied(vec![vec!["Yes".to_owned()]].into()));
/// ```
#[derive(Debug, Clone)]
pub enum RecordedChange {
    /// A question was asked.
    QuestionAsked(QuestionRequest),
    /// A question ended.
    QuestionEnded {
        /// The question.
        id: QuestionId,
        /// How.
        outcome: QuestionOutcome,
        /// Who decided it, if the record says.
        decided_by: Option<Identity>,
    },
    /// An approval was asked.
    ApprovalAsked(ApprovalRequest),
    /// An approval ended.
    ApprovalEnded {
        /// The approval.
        id: ApprovalId,
        /// How.
        outcome: ApprovalOutcome,
        /// Who decided it, if the record says.
        decided_by: Option<Identity>,
    },
}

impl RecordedChange {
    /// What `change` stands for; `None` for a change that is no request's (an event).
    ///
    /// # Errors
    ///
    /// [`StoreError::Corrupt`] for a change whose request or outcome cannot be read back
    /// (or an unreadable change).
    pub fn read(change: &ChangeKind) -> Result<Option<Self>, StoreError> {
        Ok(Some(match change {
            ChangeKind::Inserted(record) => match record.kind {
                RequestKind::Question => {
                    Self::QuestionAsked(request_from::<QuestionRegistryKind>(record)?)
                }
                RequestKind::Approval => {
                    Self::ApprovalAsked(request_from::<ApprovalRegistryKind>(record)?)
                }
            },
            ChangeKind::Resolved { kind, id, outcome } => match kind {
                RequestKind::Question => Self::QuestionEnded {
                    id: parse_id(id)?,
                    outcome: outcome_from::<QuestionRegistryKind>(id, outcome)?,
                    decided_by: decided_by(outcome),
                },
                RequestKind::Approval => Self::ApprovalEnded {
                    id: parse_id(id)?,
                    outcome: outcome_from::<ApprovalRegistryKind>(id, outcome)?,
                    decided_by: decided_by(outcome),
                },
            },
            ChangeKind::Event(_) => return Ok(None),
            ChangeKind::Unreadable(why) => return Err(StoreError::Corrupt(why.clone())),
        }))
    }
}

/// How the store and the registry's kinds meet.
pub(crate) struct Recorder {
    /// Where requests and outcomes are recorded.
    pub(crate) store: Arc<dyn Store>,
    /// What makes the outbox message of each change, once one is set (see the `notify`
    /// module).
    pub(crate) notifier: OnceLock<Arc<dyn Notifier>>,
}

impl Durable {
    /// Nothing to wait for.
    pub(crate) fn done() -> Self {
        Self {
            state: DurableState::Done,
        }
    }

    /// Waits for `ack`, if there is one, of a store that follows this registry.
    pub(crate) fn waiting(ack: Option<Ack>) -> Self {
        Self {
            state: ack.map_or(DurableState::Done, DurableState::Recorded),
        }
    }

    /// Waits for `ack`, then runs `deliver`, even if nobody waits for this (see its
    /// `Drop`): what is handed out only once it is durable.
    pub(crate) fn delivering(ack: Ack, deliver: impl FnOnce() + Send + 'static) -> Self {
        Self {
            state: DurableState::Delivering(ack, Some(Box::new(deliver))),
        }
    }

    /// Waits for a shared store's verdict on a proposed outcome: `verdict` answers it.
    pub(crate) fn decided(
        verdict: impl Future<Output = Result<(), DurableError>> + Send + 'static,
    ) -> Self {
        Self {
            state: DurableState::Decided(Box::pin(verdict)),
        }
    }

    /// Lets the change complete without anyone waiting for it: the same as dropping it
    /// (see its `Drop`), said where that is the intent.
    pub(crate) fn in_background(self) {
        drop(self);
    }
}

impl Future for Durable {
    type Output = Result<(), DurableError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let result = match &mut self.state {
            DurableState::Done => return Poll::Ready(Ok(())),
            DurableState::Recorded(ack) => recorded(std::task::ready!(Pin::new(ack).poll(cx))),
            DurableState::Delivering(ack, deliver) => {
                let written = std::task::ready!(Pin::new(ack).poll(cx));
                if let Some(deliver) = deliver.take() {
                    deliver();
                }
                recorded(written)
            }
            DurableState::Decided(verdict) => std::task::ready!(verdict.as_mut().poll(cx)),
        };
        self.state = DurableState::Done;
        Poll::Ready(result)
    }
}

/// What a store's answer to a write that follows the registry means for the change.
fn recorded(written: Result<Written, StoreError>) -> Result<(), DurableError> {
    written
        .map_err(DurableError::from)
        .and_then(|written| match written {
            Written::Inserted | Written::Resolved | Written::Appended => Ok(()),
            // The registry decided first, under its lock: the store disagreeing means
            // another writer touched this request, and this change was not recorded.
            Written::AlreadyResolved(state) => Err(StoreError::Corrupt(format!(
                "the store holds this request as already {}",
                state.as_str()
            ))
            .into()),
            Written::NotFound => {
                Err(StoreError::Corrupt("the store does not hold this request".to_owned()).into())
            }
        })
}

impl Drop for Durable {
    /// A verdict or a delivery nobody waits for any more still happens (the registry's
    /// work after a verdict: ending an orphan, withdrawing a request the store did not
    /// record; handing out an outcome once it is recorded), in a task of its own when
    /// there is a runtime; a plain write needs nobody. A delivery whose store already
    /// answered, or with no runtime to wait on, is made at once.
    fn drop(&mut self) {
        match std::mem::replace(&mut self.state, DurableState::Done) {
            DurableState::Decided(verdict) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        if let Err(error) = verdict.await {
                            tracing::debug!("a change nobody waited for did not take: {error}");
                        }
                    });
                }
            }
            DurableState::Delivering(mut ack, Some(deliver)) => {
                let answered = Pin::new(&mut ack)
                    .poll(&mut Context::from_waker(std::task::Waker::noop()))
                    .is_ready();
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) if !answered => {
                        runtime.spawn(async move {
                            let _ = ack.await;
                            deliver();
                        });
                    }
                    _ => deliver(),
                }
            }
            DurableState::Done | DurableState::Recorded(_) | DurableState::Delivering(..) => {}
        }
    }
}

impl std::fmt::Debug for Durable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waits_for = match self.state {
            DurableState::Done => "nothing",
            DurableState::Recorded(_) => "the store's record",
            DurableState::Delivering(..) => "the store's record, then handing out the outcome",
            DurableState::Decided(_) => "the store's verdict",
        };
        f.debug_struct("Durable")
            .field("waits_for", &waits_for)
            .finish()
    }
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
    pub(crate) fn insert<K: Kind>(&self, request: &Arc<K::Request>) -> (Ack, RequestDigest) {
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
    pub(crate) fn resolve<K: Kind>(
        &self,
        request: &Arc<K::Request>,
        digest: Option<RequestDigest>,
        outcome: &Outcome<K::Reply>,
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
            session_id: K::session_id(request).to_owned(),
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
fn request_record<K: Kind>(request: &K::Request) -> RequestRecord {
    let id = K::id(request);
    RequestRecord {
        id: id.to_string(),
        kind: K::RECORD_KIND,
        session_id: K::session_id(request).to_owned(),
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
pub(crate) type ReadBack<K> = (<K as Kind>::Request, Option<Outcome<<K as Kind>::Reply>>);

/// A request and its outcome read back from the store.
pub(crate) fn read_back<K: Kind>(stored: &StoredRequest) -> Result<ReadBack<K>, StoreError> {
    let request = request_from::<K>(&stored.request)?;
    let outcome = stored
        .outcome
        .as_ref()
        .map(|outcome| outcome_from::<K>(&stored.request.id, outcome))
        .transpose()?;
    Ok((request, outcome))
}

/// A request read back from its record.
pub(crate) fn request_from<K: Kind>(record: &RequestRecord) -> Result<K::Request, StoreError> {
    from_json(&record.id, &record.body)
}

/// The outcome of request `id` read back from its record.
pub(crate) fn outcome_from<K: Kind>(
    id: &str,
    outcome: &OutcomeRecord,
) -> Result<Outcome<K::Reply>, StoreError> {
    Ok(match outcome.state {
        OutcomeState::Replied => Outcome::Replied(from_json(id, &outcome.body)?),
        OutcomeState::Rejected => {
            #[derive(serde::Deserialize)]
            struct Rejection {
                reason: Option<String>,
            }
            let rejection: Rejection = from_json(id, &outcome.body)?;
            Outcome::Rejected {
                reason: rejection.reason,
            }
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
