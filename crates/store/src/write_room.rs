//! How much a store's writer may have queued: [`WriteRoom`].
//!
//! The SQLite and Redis stores queue each write for a writer (a thread, a task) that
//! commits them in order. A write whose caller stopped waiting (an HTTP client that hung
//! up) stays queued, as it must: a write is not undone by its caller leaving. So while the
//! store does not answer (a Redis paused or behind a network black hole, a disk that
//! hangs), a client sending writes and hanging up would grow the queue at its own rate, a
//! request body at a time, until the store answers again. The queue is bounded by the
//! bytes it holds instead: a write past [`QUEUED_WRITES_MIB`] is refused at once
//! ([`StoreError::Overloaded`]), and its room comes back when the writer answers it.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{Ack, AckSender, StoreError, Write};

/// How many MiB of writes one store may hold queued and unanswered.
pub const QUEUED_WRITES_MIB: u32 = 64;

/// The room is counted in KiB: a permit each.
const ROOM_KIB: u32 = QUEUED_WRITES_MIB * 1024;

/// The room left in a store's writer queue, shared by its clones.
#[derive(Debug, Clone)]
pub(crate) struct WriteRoom(Arc<Semaphore>);

/// The room one queued write takes, given back when it is dropped: with the write's
/// [`AckSender`](crate::AckSender), once the writer answered it.
pub(crate) type Taken = OwnedSemaphorePermit;

impl WriteRoom {
    /// The whole room of a new store.
    pub(crate) fn new() -> Self {
        Self(Arc::new(Semaphore::new(ROOM_KIB as usize)))
    }

    /// The ack of `write`, queued by `queue` (which says whether the writer took it) if
    /// there is room for it; [`StoreError::Overloaded`] at once if not, and
    /// [`StoreError::Closed`] if the writer is gone.
    pub(crate) fn queue(&self, write: Write, queue: impl FnOnce(Write, AckSender) -> bool) -> Ack {
        let room = match self.take(&write) {
            Ok(room) => room,
            Err(full) => return Ack::ready(Err(full)),
        };
        let (sender, ack) = Ack::channel();
        if queue(write, sender.holding(room)) {
            ack
        } else {
            Ack::ready(Err(StoreError::Closed))
        }
    }

    /// The room for `write`: its bytes, rounded up to KiB (at least one).
    fn take(&self, write: &Write) -> Result<Taken, StoreError> {
        let kib = u32::try_from(queued_bytes(write).div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, ROOM_KIB);
        Arc::clone(&self.0)
            .try_acquire_many_owned(kib)
            .map_err(|_| StoreError::Overloaded {
                limit_mib: QUEUED_WRITES_MIB,
            })
    }
}

/// About how many bytes `write` holds while queued: its text, which a client chose.
fn queued_bytes(write: &Write) -> usize {
    let outbox = |message: &crate::OutboxMessage| {
        message.id.len()
            + message.payload.len()
            + message.targets.iter().map(String::len).sum::<usize>()
    };
    match write {
        Write::Insert(request) => {
            request.id.len()
                + request.session_id.len()
                + request.call_id.as_ref().map_or(0, String::len)
                + request.body.len()
        }
        Write::Resolve {
            id,
            outcome,
            audit,
            outbox: message,
            ..
        } => {
            id.len()
                + outcome.body.len()
                + outcome.decided_by.as_ref().map_or(0, String::len)
                + audit.as_ref().map_or(0, String::len)
                + message.as_ref().map_or(0, outbox)
        }
        Write::Append(event) => {
            event.id.len()
                + event.event_type.len()
                + event.session_id.as_ref().map_or(0, String::len)
                + event.properties.len()
        }
        Write::Event(event) => {
            event.session_id.len() + event.event_type.len() + event.properties.len()
        }
        Write::Audit(draft) => draft.len(),
        Write::Enqueue(message) => outbox(message),
        Write::Attempted {
            message_id, target, ..
        } => message_id.len() + target.len(),
    }
}
