//! The acknowledgement of a queued write.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use crate::{StoreError, Written};

/// Completes when a queued [`Write`](crate::Write) is durable, with what it did.
///
/// # Cancel safety
///
/// Dropping an `Ack` only stops waiting: the write still happens, in its place in the
/// queue.
#[must_use = "a write is only durable once its Ack completes"]
#[derive(Debug)]
pub struct Ack {
    /// Where the outcome is, or will be.
    state: AckState,
}

/// An ack that is already known, or one a writer will send.
#[derive(Debug)]
enum AckState {
    /// Known at once (memory store, or a write refused before queueing); taken on poll.
    Ready(Option<Result<Written, StoreError>>),
    /// Sent by the writer once the write is durable.
    Waiting(oneshot::Receiver<Result<Written, StoreError>>),
}

/// The writer's end of an [`Ack`].
pub(crate) type AckSender = oneshot::Sender<Result<Written, StoreError>>;

impl Ack {
    /// An ack that is complete already.
    pub(crate) fn ready(result: Result<Written, StoreError>) -> Self {
        Self {
            state: AckState::Ready(Some(result)),
        }
    }

    /// An ack the returned sender completes.
    pub(crate) fn channel() -> (AckSender, Self) {
        let (sender, receiver) = oneshot::channel();
        (
            sender,
            Self {
                state: AckState::Waiting(receiver),
            },
        )
    }
}

impl Future for Ack {
    type Output = Result<Written, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            AckState::Ready(result) => {
                Poll::Ready(result.take().unwrap_or(Err(StoreError::Closed)))
            }
            // A writer that dropped the sender unsent has stopped: the write's fate is unknown.
            AckState::Waiting(receiver) => Pin::new(receiver)
                .poll(cx)
                .map(|received| received.unwrap_or(Err(StoreError::Closed))),
        }
    }
}
