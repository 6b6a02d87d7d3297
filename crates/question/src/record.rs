//! The registry's record in a [`Store`]: what is written, when, and how it is read back.
//!
//! The registry stays the in-process authority (it holds the askers' channels and the
//! timer), and a store is its record. Every registration is written as a
//! [`Write::Insert`] and every outcome as a [`Write::Resolve`], **queued under the registry
//! lock**, so the store applies them in the order the registry decided them. Queueing never
//! blocks; the [`Durable`] a caller gets back completes once the write is on disk (or in
//! Redis), which is when an HTTP handler may answer `200`.
//!
//! Bodies are the wire JSON of the request and of the outcome's data, so a record is
//! readable by anyone, and a restarted registry rebuilds the same requests from it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use askbus_store::{
    Ack, OutcomeRecord, OutcomeState, RequestRecord, Store, StoreError, StoredRequest, Written,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::registry::{Kind, Outcome};

/// Completes when a change to a request (its registration or its outcome) is durable in the
/// service's store; at once when the service has no store.
///
/// Await it before telling a human their answer is in: a crash after that point cannot lose
/// it. Dropping it does not undo or delay the change, it only stops waiting.
///
/// # Errors
///
/// [`StoreError`] when the store could not record the change. The change has still
/// happened in this process (the asker may already have the answer); it will not survive a
/// restart.
#[derive(Debug)]
pub struct Durable {
    /// The store's acknowledgement, if there is a store.
    ack: Option<Ack>,
}

/// How the store and the registry's kinds meet.
pub(crate) struct Recorder {
    /// Where requests and outcomes are recorded.
    pub(crate) store: Arc<dyn Store>,
}

impl Durable {
    /// Nothing to wait for.
    pub(crate) fn done() -> Self {
        Self { ack: None }
    }

    pub(crate) fn waiting(ack: Option<Ack>) -> Self {
        Self { ack }
    }
}

impl Future for Durable {
    type Output = Result<(), StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(ack) = self.ack.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let written = std::task::ready!(Pin::new(ack).poll(cx));
        self.ack = None;
        Poll::Ready(match written? {
            Written::Inserted | Written::Resolved | Written::Appended => Ok(()),
            // The registry decided first, under its lock: the store disagreeing means
            // another writer touched this request, and this change was not recorded.
            Written::AlreadyResolved(state) => Err(StoreError::Corrupt(format!(
                "the store holds this request as already {}",
                state.as_str()
            ))),
            Written::NotFound => Err(StoreError::Corrupt(
                "the store does not hold this request".to_owned(),
            )),
        })
    }
}

impl Recorder {
    /// Queues the registration of `request`.
    pub(crate) fn insert<K: Kind>(&self, request: &K::Request) -> Ack {
        let id = K::id(request);
        let record = RequestRecord {
            id: id.to_string(),
            kind: K::RECORD_KIND,
            session_id: K::session_id(request).to_owned(),
            call_id: K::call_id(request).map(str::to_owned),
            created_at_ms: id.timestamp_ms(),
            expires_at_ms: K::expires_at(request),
            body: to_json(request),
        };
        self.store.write(askbus_store::Write::Insert(record))
    }

    /// Queues the outcome of `request`.
    pub(crate) fn resolve<K: Kind>(
        &self,
        request: &K::Request,
        outcome: &Outcome<K::Reply>,
    ) -> Ack {
        let (state, body) = match outcome {
            Outcome::Replied(reply) => (OutcomeState::Replied, to_json(reply)),
            Outcome::Rejected { reason } => (
                OutcomeState::Rejected,
                to_json(&serde_json::json!({ "reason": reason })),
            ),
            Outcome::TimedOut => (OutcomeState::TimedOut, "null".to_owned()),
            Outcome::Cancelled => (OutcomeState::Cancelled, "null".to_owned()),
        };
        self.store.write(askbus_store::Write::Resolve {
            kind: K::RECORD_KIND,
            id: K::id(request).to_string(),
            outcome: OutcomeRecord::new(state, body, now_ms()),
        })
    }
}

/// A request and its outcome (`None` while pending), as read back from a store.
pub(crate) type ReadBack<K> = (<K as Kind>::Request, Option<Outcome<<K as Kind>::Reply>>);

/// A request and its outcome read back from the store.
pub(crate) fn read_back<K: Kind>(stored: &StoredRequest) -> Result<ReadBack<K>, StoreError>
where
    K::Request: DeserializeOwned,
    K::Reply: DeserializeOwned,
{
    let request: K::Request = from_json(&stored.request.id, &stored.request.body)?;
    let outcome = match &stored.outcome {
        None => None,
        Some(outcome) => Some(match outcome.state {
            OutcomeState::Replied => {
                Outcome::Replied(from_json(&stored.request.id, &outcome.body)?)
            }
            OutcomeState::Rejected => {
                #[derive(serde::Deserialize)]
                struct Rejection {
                    reason: Option<String>,
                }
                let rejection: Rejection = from_json(&stored.request.id, &outcome.body)?;
                Outcome::Rejected {
                    reason: rejection.reason,
                }
            }
            OutcomeState::TimedOut => Outcome::TimedOut,
            OutcomeState::Cancelled => Outcome::Cancelled,
        }),
    };
    Ok((request, outcome))
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

/// Wire JSON of a value the registry owns; those are plain data and always serialise.
fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

fn from_json<T: DeserializeOwned>(id: &str, body: &str) -> Result<T, StoreError> {
    serde_json::from_str(body)
        .map_err(|error| StoreError::Corrupt(format!("request {id}: {error}")))
}
