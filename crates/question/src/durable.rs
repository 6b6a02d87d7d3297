//! [`Durable`]: the future a caller awaits before telling a human their change is in.
//!
//! A change to a request (its registration, its outcome, a vote) happens in the registry
//! at once, under its lock; making it durable happens later, in the store. `Durable` joins
//! the two without holding the lock: it waits for one of three things. Without a store, or
//! for a change nothing was written for, nothing (it is ready at once). With a store only
//! this process writes (SQLite), the store's [`Ack`] of the write the registry queued under
//! its lock. With a store several instances share (Redis), the store's *verdict* on an
//! outcome the registry proposed, and then this registry's applying of it (see
//! `registry::storage`), so that this instance's next read sees what its caller just did.
//!
//! Those who wait for an outcome wait for it too: with a store that follows the registry,
//! the asker's future and every `wait` (begun before the write or during it) get the
//! outcome only once the store has it, so no agent acts on an answer a crash could still
//! lose. If the store fails to record it, they get that failure instead of the outcome:
//! an answer a restart would forget (the store still holds the request pending) is never
//! acted on.
//!
//! Dropping a `Durable` never undoes or delays the change: a plain write needs nobody, and
//! a verdict nobody waits for any more is still acted on in a task of its own (ending an
//! orphan, withdrawing a request the store did not record).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use askbus_store::{Ack, StoreError, Written};

use crate::error::{DurableError, Unrecorded};

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
/// `AskError::NotRecorded`). An outcome that could not be recorded, with a store only this
/// process writes, is not handed to its asker nor to anyone waiting for it: they get
/// this failure instead (`AskError::NotRecorded`), and the store, which still holds the
/// request pending, asks it again after a restart. With a store several instances share,
/// nothing changed anywhere.
///
/// [`DurableError::AlreadyResolved`] when, with a shared store, another instance resolved
/// the request first: this answer was not taken.
#[must_use = "a change is only durable once its Durable completes"]
pub struct Durable {
    /// What there is to wait for.
    state: DurableState,
}

/// What hands out an outcome once the store answered: the outcome to those who wait for
/// it, or the store's failure to record it.
type Deliver = Box<dyn FnOnce(Result<(), Unrecorded>) + Send>;

/// What a [`Durable`] waits for.
enum DurableState {
    /// Nothing: no store, or nothing was written.
    Done,
    /// A write to a store that follows this registry.
    Recorded(Ack),
    /// A write to a store that follows this registry, and what is done with the store's
    /// answer: handing the outcome (or the store's failure) to those who wait for it, so
    /// none of them acts on an answer a crash could still lose (`None` once done).
    Delivering(Ack, Option<Deliver>),
    /// An outcome proposed to a store that decides: its verdict, then this registry's
    /// applying of it.
    Decided(Pin<Box<dyn Future<Output = Result<(), DurableError>> + Send>>),
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

    /// Waits for `ack`, then runs `deliver` with what the store said, even if nobody waits
    /// for this (see its `Drop`): what is handed out only once it is durable.
    pub(crate) fn delivering(
        ack: Ack,
        deliver: impl FnOnce(Result<(), Unrecorded>) + Send + 'static,
    ) -> Self {
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
                let written = recorded(std::task::ready!(Pin::new(ack).poll(cx)));
                match deliver.take() {
                    Some(deliver) => {
                        let told = written.as_ref().map_err(retold).copied();
                        deliver(written.map_err(Unrecorded::from));
                        told
                    }
                    None => written,
                }
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

/// The store's failure to record an outcome, told once more: the waiters keep the error
/// itself, and the caller awaiting the write (who can only answer 503) is told the same.
fn retold(error: &DurableError) -> DurableError {
    let message = match error {
        DurableError::Store(StoreError::CommitFailed(message)) => message.clone(),
        other => other.to_string(),
    };
    StoreError::CommitFailed(message).into()
}

/// Hands out an outcome whose write nobody awaited (a timeout, a cancel, an HTTP client
/// gone), once the store answered; a failure is logged, since no caller will report it.
fn deliver_unawaited(written: Result<Written, StoreError>, deliver: Deliver) {
    let result = recorded(written).map_err(Unrecorded::from);
    if let Err(error) = &result {
        tracing::error!(
            "an outcome could not be recorded, so nobody waiting for it gets it: {error}"
        );
    }
    deliver(result);
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
                        match verdict.await {
                            // The store failed: nobody else will say so.
                            Err(error @ DurableError::Store(_)) => {
                                tracing::warn!("a change nobody waited for did not take: {error}");
                            }
                            // Another outcome came first: the usual end of a race.
                            Err(error) => {
                                tracing::debug!("a change nobody waited for did not take: {error}");
                            }
                            Ok(()) => {}
                        }
                    });
                }
            }
            DurableState::Delivering(mut ack, Some(deliver)) => {
                let answered =
                    Pin::new(&mut ack).poll(&mut Context::from_waker(std::task::Waker::noop()));
                match (answered, tokio::runtime::Handle::try_current()) {
                    (Poll::Ready(written), _) => deliver_unawaited(written, deliver),
                    (Poll::Pending, Ok(runtime)) => {
                        runtime.spawn(async move { deliver_unawaited(ack.await, deliver) });
                    }
                    // No runtime to wait on: the waiters are told it was not recorded.
                    // The safe side: a writer thread (SQLite's) may still commit it, but
                    // nobody could wait to know, and nobody acts on an answer unknown.
                    (Poll::Pending, Err(_)) => deliver_unawaited(Err(StoreError::Closed), deliver),
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
