//! [`Durable`]: the future a caller awaits before telling a human their change is in.
//!
//! A change to a request (its registration, its outcome, a vote) happens in the registry
//! at once, under its lock; making it durable happens later, in the store. `Durable` joins
//! the two without holding the lock: it waits for one of three things. Without a store, or
//! for a change nothing was written for, nothing (it is ready at once). With a store only
//! this process writes (SQLite), the store's [`Ack`] of the write the registry queued under
//! its lock. With a store several instances share (Redis), the store's *verdict* on an
//! outcome the registry proposed, and then this registry's applying of it (see
//! `registry::shared`), so that this instance's next read sees what its caller just did.
//!
//! Dropping a `Durable` never undoes or delays the change: a plain write needs nobody, and
//! a verdict nobody waits for any more is still acted on in a task of its own (ending an
//! orphan, withdrawing a request the store did not record).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use askbus_store::{Ack, StoreError, Written};

use crate::error::DurableError;

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
#[must_use = "a change is only durable once its Durable completes"]
pub struct Durable {
    /// What there is to wait for.
    state: DurableState,
}

/// What a [`Durable`] waits for.
enum DurableState {
    /// Nothing: no store, or nothing was written.
    Done,
    /// A write to a store that follows this registry.
    Recorded(Ack),
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
            DurableState::Recorded(ack) => {
                std::task::ready!(Pin::new(ack).poll(cx))
                    .map_err(DurableError::from)
                    .and_then(|written| match written {
                        Written::Inserted | Written::Resolved | Written::Appended => Ok(()),
                        // The registry decided first, under its lock: the store disagreeing
                        // means another writer touched this request, and this change was
                        // not recorded.
                        Written::AlreadyResolved(state) => Err(StoreError::Corrupt(format!(
                            "the store holds this request as already {}",
                            state.as_str()
                        ))
                        .into()),
                        Written::NotFound => Err(StoreError::Corrupt(
                            "the store does not hold this request".to_owned(),
                        )
                        .into()),
                    })
            }
            DurableState::Decided(verdict) => std::task::ready!(verdict.as_mut().poll(cx)),
        };
        self.state = DurableState::Done;
        Poll::Ready(result)
    }
}

impl Drop for Durable {
    /// A verdict nobody waits for any more is still acted on (the registry's work after
    /// it: ending an orphan, withdrawing a request the store did not record), in a task of
    /// its own when there is a runtime; a plain write needs nobody.
    fn drop(&mut self) {
        if let DurableState::Decided(verdict) =
            std::mem::replace(&mut self.state, DurableState::Done)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                if let Err(error) = verdict.await {
                    tracing::debug!("a change nobody waited for did not take: {error}");
                }
            });
        }
    }
}

impl std::fmt::Debug for Durable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waits_for = match self.state {
            DurableState::Done => "nothing",
            DurableState::Recorded(_) => "the store's record",
            DurableState::Decided(_) => "the store's verdict",
        };
        f.debug_struct("Durable")
            .field("waits_for", &waits_for)
            .finish()
    }
}
