//! [`Ticket`]: the asker's handle on one registered request.
//!
//! It receives the request's outcome, and cancels the request if dropped before that (a
//! future dropped is an asker gone: drop-to-cancel is how "no leak" holds without a task
//! per request). The services' public pending futures wrap it. A ticket that joined a
//! request asked before by the same tool call only watches it: dropping it cancels
//! nothing. A registration the store could not record withdraws the request, whether the
//! ticket is polled for its outcome or only for its record.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use super::{Ended, Handed, OutcomeOf, Registry, RequestType};
use crate::durable::Durable;
use crate::error::Unrecorded;
use crate::outcome::Outcome;

/// The asker's handle on one registered request: receives its outcome, and cancels the
/// request if dropped before that (unless detached). The public pending futures wrap it.
pub(crate) struct Ticket<K: RequestType> {
    /// The request as registered.
    pub(super) request: Arc<K::Request>,
    /// Where the outcome arrives.
    pub(super) outcome: oneshot::Receiver<Handed<K>>,
    /// Used to cancel on drop.
    pub(super) registry: Registry<K>,
    /// Set once the outcome was taken or the request detached: nothing to cancel then.
    pub(super) settled: bool,
    /// Whether this ticket is the request's asker, whose drop cancels it; a ticket that
    /// joined a request asked before (by the same tool call) only watches it.
    pub(super) owns: bool,
    /// The store's acknowledgement of the registration, until it came or someone asked
    /// for it.
    pub(super) recorded: Option<Durable>,
}

impl<K: RequestType> Ticket<K> {
    /// The request as registered.
    pub(crate) fn request(&self) -> &Arc<K::Request> {
        &self.request
    }

    /// Completes once the registration is durable in the store (at once without a store,
    /// or for a ticket that joined an earlier request). Only the first call waits. If the
    /// store failed to record it, the request is withdrawn (see [`Registry::withdraw`]),
    /// even if the returned future is dropped unawaited (an HTTP client that went away).
    pub(crate) fn recorded(&mut self) -> Durable {
        let Some(recorded) = self.recorded.take() else {
            return Durable::done();
        };
        let (registry, id) = (self.registry.clone(), K::id(&self.request));
        Durable::decided(async move {
            let result = recorded.await;
            if result.is_err() {
                registry.withdraw(id);
            }
            result
        })
    }

    /// Leaves the request pending without an in-process asker.
    pub(crate) fn detach(mut self) -> Arc<K::Request> {
        self.settled = true;
        Arc::clone(&self.request)
    }

    /// Polls for the outcome; once it is taken, dropping the ticket cancels nothing. Fails
    /// if the store could not record the request, which is then withdrawn (see
    /// [`Registry::withdraw`]), unless an outcome came first; or if it could not record the
    /// outcome, which must then not be acted on.
    pub(crate) fn poll_outcome(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<OutcomeOf<K>, Unrecorded>> {
        if let Poll::Ready(received) = Pin::new(&mut self.outcome).poll(cx) {
            self.settled = true;
            // The sender is only dropped unsent when the registry itself is gone.
            return Poll::Ready(received.unwrap_or(Ok(Outcome::Cancelled)));
        }
        if let Some(recorded) = &mut self.recorded
            && let Poll::Ready(result) = Pin::new(recorded).poll(cx)
        {
            self.recorded = None;
            if let Err(error) = result
                && let Ended::Now = self.registry.withdraw(K::id(&self.request))
            {
                self.settled = true;
                return Poll::Ready(Err(error.into()));
            }
            // Ended otherwise meanwhile: its outcome is on its way (the receiver is
            // polled above, so its arrival wakes this task).
        }
        Poll::Pending
    }
}

impl<K: RequestType> Drop for Ticket<K> {
    fn drop(&mut self) {
        if !self.settled && self.owns {
            // Already resolved (the outcome is waiting unread) is fine: nothing to cancel.
            if let Ok(cancelled) =
                self.registry
                    .resolve::<Infallible>(K::id(&self.request), None, |_| Ok(Outcome::Cancelled))
            {
                cancelled.in_background();
            }
        }
    }
}
