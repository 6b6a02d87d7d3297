//! The acknowledgement of a queued write.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

#[cfg(any(feature = "sqlite", feature = "redis"))]
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
    /// Sent by the writer once the write is durable (the stores with a writer).
    #[cfg(any(feature = "sqlite", feature = "redis"))]
    Waiting(oneshot::Receiver<Result<Written, StoreError>>),
    /// Two writes, the second queued after the first: what the first did, once both are
    /// durable.
    Both {
        /// The first write.
        first: Box<Ack>,
        /// What it did, once known.
        did: Option<Result<Written, StoreError>>,
        /// The write queued after it.
        next: Box<Ack>,
    },
}

/// The writer's end of an [`Ack`].
#[cfg(any(feature = "sqlite", feature = "redis"))]
pub(crate) type AckSender = oneshot::Sender<Result<Written, StoreError>>;

impl Ack {
    /// An ack that is complete already.
    pub(crate) fn ready(result: Result<Written, StoreError>) -> Self {
        Self {
            state: AckState::Ready(Some(result)),
        }
    }

    /// An ack the returned sender completes.
    #[cfg(any(feature = "sqlite", feature = "redis"))]
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

impl Ack {
    /// Completes once this write and `next` (queued after it) are both durable, with what
    /// this one did; fails if either failed. For a write and the outbox message that tells
    /// of it: whoever waits for the pair is told "done" only once nothing of it can be lost.
    pub fn followed_by(self, next: Ack) -> Self {
        Self {
            state: AckState::Both {
                first: Box::new(self),
                did: None,
                next: Box::new(next),
            },
        }
    }
}

impl Future for Ack {
    type Output = Result<Written, StoreError>;

    // Without a backend that writes on a task of its own, no ack waits for a writer.
    #[cfg_attr(
        not(any(feature = "sqlite", feature = "redis")),
        expect(clippy::only_used_in_recursion)
    )]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            AckState::Ready(result) => {
                Poll::Ready(result.take().unwrap_or(Err(StoreError::Closed)))
            }
            // A writer that dropped the sender unsent has stopped: the write's fate is unknown.
            #[cfg(any(feature = "sqlite", feature = "redis"))]
            AckState::Waiting(receiver) => Pin::new(receiver)
                .poll(cx)
                .map(|received| received.unwrap_or(Err(StoreError::Closed))),
            AckState::Both { first, did, next } => {
                if did.is_none() {
                    *did = Some(std::task::ready!(Pin::new(&mut **first).poll(cx)));
                }
                let then = std::task::ready!(Pin::new(&mut **next).poll(cx));
                let did = did.take().unwrap_or(Err(StoreError::Closed));
                Poll::Ready(did.and_then(|written| then.map(|_| written)))
            }
        }
    }
}
