//! How much a store's writer may have queued: [`WriteRoom`].
//!
//! The SQLite and Redis stores queue each write for a writer (a thread, a task) that
//! commits them in order. A write whose caller stopped waiting (an HTTP client that hung
//! up) stays queued, as it must: a write is not undone by its caller leaving. So while the
//! store does not answer (a Redis paused or behind a network black hole, a disk that
//! hangs), a client sending writes and hanging up would grow the queue at its own rate, a
//! request body at a time, until the store answers again. The queue is bounded by the
//! bytes it holds instead: a write past [`DEFAULT_QUEUED_WRITES_MIB`] (or the store's own
//! bound) is refused at once ([`StoreError::Overloaded`]), and its room comes back when the
//! writer answers it. The bound is far above what a store that answers ever holds: a burst
//! of writes bigger than it is refused, not delayed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{Ack, AckSender, StoreError, Write};

/// How many MiB of writes a store may hold queued and unanswered, unless told otherwise
/// (`with_queued_writes_mib`).
pub const DEFAULT_QUEUED_WRITES_MIB: u32 = 256;

/// The room is counted in KiB: a permit each.
const KIB_A_MIB: u32 = 1024;

/// The room left in a store's writer queue, shared by its clones.
#[derive(Debug, Clone)]
pub(crate) struct WriteRoom {
    /// A permit a KiB.
    room: Arc<Semaphore>,
    /// The bound, in MiB.
    limit_mib: Arc<AtomicU32>,
}

/// The room one queued write takes, given back when it is dropped: with the write's
/// [`AckSender`], once the writer answered it.
pub(crate) type Taken = OwnedSemaphorePermit;

impl WriteRoom {
    /// The whole room of a new store: [`DEFAULT_QUEUED_WRITES_MIB`].
    pub(crate) fn new() -> Self {
        Self {
            room: Arc::new(Semaphore::new(
                (DEFAULT_QUEUED_WRITES_MIB * KIB_A_MIB) as usize,
            )),
            limit_mib: Arc::new(AtomicU32::new(DEFAULT_QUEUED_WRITES_MIB)),
        }
    }

    /// Bounds the queue at `mib` MiB (at least one) from now on. For a store being set
    /// up: room taken already stays taken.
    pub(crate) fn set_limit_mib(&self, mib: u32) {
        let mib = mib.max(1);
        let before = self.limit_mib.swap(mib, Ordering::Relaxed);
        let kib = |mib: u32| mib as usize * KIB_A_MIB as usize;
        if mib > before {
            self.room.add_permits(kib(mib - before));
        } else {
            self.room.forget_permits(kib(before - mib));
        }
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

    /// The room for `write`: its bytes, rounded up to KiB (at least one; a write larger
    /// than the whole room takes it all, so it is taken only into an empty queue).
    fn take(&self, write: &Write) -> Result<Taken, StoreError> {
        let limit_mib = self.limit_mib.load(Ordering::Relaxed);
        let kib = u32::try_from(queued_bytes(write).div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, limit_mib.saturating_mul(KIB_A_MIB));
        Arc::clone(&self.room)
            .try_acquire_many_owned(kib)
            .map_err(|_| StoreError::Overloaded { limit_mib })
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
