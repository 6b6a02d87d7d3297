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
    /// Another ack, whose outcome is shown to an observer once it is known, whether or not
    /// anyone waits for it (see [`Ack::observed`]).
    Observed {
        /// The ack observed.
        inner: Box<Ack>,
        /// Shown the outcome once; `None` after.
        observer: Option<Observer>,
    },
    /// Known at once (memory store, or a write refused before queueing); taken on poll.
    Ready(Option<Result<Written, StoreError>>),
    /// Sent by the writer once the write is durable (the stores with a writer).
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

/// What a write did, as an [`Ack`] completes with it.
type Outcome = Result<Written, StoreError>;

/// What [`Ack::observed`] calls with a write's outcome.
struct Observer(Box<dyn FnOnce(&Outcome) + Send>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Observer")
    }
}

/// The writer's end of an [`Ack`]: sent once the write is durable (or failed); dropped
/// unsent, the ack completes with [`StoreError::Closed`].
#[derive(Debug)]
pub struct AckSender {
    /// Where the ack waits.
    sender: oneshot::Sender<Result<Written, StoreError>>,
    /// The room the write takes in its store's queue, given back with this sender: once
    /// the write is answered (see the `write_room` module). Held, never read.
    _room: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl AckSender {
    /// Completes the ack with `result`; gives `result` back if nobody waits for it.
    ///
    /// # Errors
    ///
    /// `result`, when the ack was dropped.
    pub fn send(
        self,
        result: Result<Written, StoreError>,
    ) -> Result<(), Result<Written, StoreError>> {
        self.sender.send(result)
    }

    /// The same sender, holding `room` in its store's queue until it is sent or dropped.
    #[cfg(any(feature = "sqlite", feature = "redis"))]
    pub(crate) fn holding(self, room: crate::write_room::Taken) -> Self {
        Self {
            _room: Some(room),
            ..self
        }
    }
}

impl Ack {
    /// An ack that is complete already.
    pub(crate) fn ready(result: Result<Written, StoreError>) -> Self {
        Self {
            state: AckState::Ready(Some(result)),
        }
    }

    /// An ack the returned sender completes: for a [`Store`](crate::Store) whose writer
    /// answers later (a wrapper holding writes back, in tests, included). A sender dropped
    /// unsent completes it with [`StoreError::Closed`].
    pub fn channel() -> (AckSender, Self) {
        let (sender, receiver) = oneshot::channel();
        (
            AckSender {
                sender,
                _room: None,
            },
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

impl Ack {
    /// The same ack, whose outcome `observe` is shown once it is known (to measure the
    /// write). It is shown even if this ack is dropped unfinished (a write nobody waits
    /// for, like the bus's record of an event): the rest of the wait is then handed to a
    /// task on the current Tokio runtime (without one, the outcome goes unseen). An ack
    /// complete already is shown at once.
    pub fn observed(
        mut self,
        observe: impl FnOnce(&Result<Written, StoreError>) + Send + 'static,
    ) -> Self {
        if let AckState::Ready(Some(result)) = &self.state {
            observe(result);
            return self;
        }
        let inner = Box::new(std::mem::replace(
            &mut self,
            Self::ready(Err(StoreError::Closed)),
        ));
        Self {
            state: AckState::Observed {
                inner,
                observer: Some(Observer(Box::new(observe))),
            },
        }
    }
}

impl Drop for Ack {
    fn drop(&mut self) {
        if let AckState::Observed { inner, observer } = &mut self.state
            && let Some(Observer(observe)) = observer.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let inner = std::mem::replace(&mut **inner, Self::ready(Err(StoreError::Closed)));
            runtime.spawn(async move { observe(&inner.await) });
        }
    }
}

impl Future for Ack {
    type Output = Result<Written, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            AckState::Observed { inner, observer } => {
                let result = std::task::ready!(Pin::new(&mut **inner).poll(cx));
                if let Some(Observer(observe)) = observer.take() {
                    observe(&result);
                }
                Poll::Ready(result)
            }
            AckState::Ready(result) => {
                Poll::Ready(result.take().unwrap_or(Err(StoreError::Closed)))
            }
            // A writer that dropped the sender unsent has stopped: the write's fate is unknown.
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
