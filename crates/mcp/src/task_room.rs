//! How many tasks the server keeps: bounded, so that tasks made and ended at once cannot
//! pile up.
//!
//! rmcp's `TaskManager` keeps a task until a TTL past its end, so up to about twice its TTL
//! after it was made, and has no limit of its own. A task's TTL is its request's timeout
//! and a minute (a day for a request that never times out). A client could make tasks and
//! cancel them as fast as it can send calls, and each would be kept that long. So the
//! server counts the tasks it made that may still be kept, and past
//! [`McpConfig::max_tasks`](crate::McpConfig::max_tasks) it serves a call as it serves a
//! client without tasks: held open, or `waiting`. The client still gets its answer; only
//! the task is not made.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// The tasks that may still be kept, by when they are surely gone.
pub(crate) struct TaskRoom {
    /// Most tasks kept at once.
    limit: usize,
    /// When each task made may be forgotten by, earliest first.
    kept_until: Mutex<BinaryHeap<Reverse<Instant>>>,
    /// Whether the last call found no room: said once in the log, not at every call.
    full: AtomicBool,
}

impl TaskRoom {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            kept_until: Mutex::new(BinaryHeap::new()),
            full: AtomicBool::new(false),
        }
    }

    /// Takes room for a task of `ttl` (kept at most twice that), unless as many tasks as
    /// the limit may still be kept.
    pub(crate) fn take(&self, ttl: Duration) -> bool {
        let now = Instant::now();
        let mut kept = self
            .kept_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while kept.peek().is_some_and(|Reverse(until)| *until <= now) {
            kept.pop();
        }
        if kept.len() >= self.limit {
            if !self.full.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "{} MCP tasks may still be kept, the limit: calls are served without tasks until some are forgotten",
                    self.limit
                );
            }
            return false;
        }
        self.full.store(false, Ordering::Relaxed);
        let forgotten_by = now
            .checked_add(ttl.saturating_mul(2))
            .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 60 * 60));
        kept.push(Reverse(forgotten_by));
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::TaskRoom;

    #[tokio::test(start_paused = true)]
    async fn room_comes_back_as_tasks_are_forgotten() {
        let room = TaskRoom::new(2);
        assert!(room.take(Duration::from_secs(10)));
        assert!(room.take(Duration::from_secs(60)));
        assert!(!room.take(Duration::from_secs(10)), "two may still be kept");
        // The first is surely gone twice its TTL after it was made; the second is not.
        tokio::time::advance(Duration::from_secs(20)).await;
        assert!(room.take(Duration::from_secs(10)));
        assert!(!room.take(Duration::from_secs(10)));
        tokio::time::advance(Duration::from_secs(100)).await;
        assert!(
            room.take(Duration::MAX),
            "a TTL past any clock is kept, not an overflow"
        );
        assert!(room.take(Duration::from_secs(1)));
        assert!(!room.take(Duration::from_secs(1)));
    }
}
