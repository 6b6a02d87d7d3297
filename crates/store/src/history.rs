//! Session histories: what each session did, in the order it did it, kept in the store.
//!
//! A chat UI shows a session as a timeline (the agent's steps, the questions and approvals
//! asked, their outcomes) and must show the same timeline after a reload, after a restart
//! of the server, and through any server sharing the store. So the store keeps, per
//! session, the records of that timeline, **written as they happen and in the same step
//! as the change they record**: a request's insert appends its record (the request as
//! asked), a winning resolution appends its outcome (a losing one appends nothing), and
//! [`Write::Event`](crate::Write::Event) appends an agent step. Each record is a
//! [`ChangeKind`], the JSON the change log uses too, at a **position** that ascends with
//! every record of the store, across restarts and, in Redis, across servers (it is the
//! change's number in the change log there): a reader asks for a session's records after
//! the last position it has.
//!
//! The policy, in exact words:
//!
//! - **One order.** A session's records are in the order their writes took effect, which
//!   is the order they were queued: a step recorded before a question is asked is before
//!   the question.
//! - **Bounded per session.** A session keeps at least its newest
//!   [`with_history_limit`](crate::SqliteStore::with_history_limit) records
//!   ([`DEFAULT_HISTORY_LIMIT`] by default); older ones are deleted, a batch at a time, once
//!   a session is about an eighth over (Redis trims whole stream nodes, which is about the
//!   same). So a history read costs at most about that many records, whatever an agent
//!   posts.
//! - **Kept while the session is alive.** A session's history is deleted by
//!   [`Store::forget_quiet_histories`](crate::Store::forget_quiet_histories) once its newest
//!   record is older than the retention period *and* none of its requests is pending;
//!   [`sweep`](crate::sweep) does that beside deleting old resolved requests
//!   ([`forget_quiet_histories_older_than`](crate::forget_quiet_histories_older_than)). A session
//!   with a pending request keeps its history whatever its age.

use std::collections::VecDeque;

use crate::ChangeKind;

/// How many records a session's history keeps by default (see the module docs).
pub const DEFAULT_HISTORY_LIMIT: usize = 1000;

/// Something a session did that is not a request change (an agent step), as its history
/// and the change log keep it: an event type and its JSON properties, which the store does
/// not look inside.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionEvent {
    /// The session it belongs to.
    pub session_id: String,
    /// The event's stable type name (`agent.step`).
    pub event_type: String,
    /// The event's properties, as JSON.
    pub properties: String,
}

/// Which records of a session's history one [`Store::history`](crate::Store::history)
/// read answers: a page of them, so that no read holds a store (SQLite's one writer thread,
/// Redis's one thread) for long, whatever a history holds.
///
/// A reader going forward asks [`From`](Self::From) the last record it has: if that record
/// comes back first, nothing after it was trimmed meanwhile (trimming deletes a history's
/// oldest records, never others), and the page continues it without a gap. A reader going
/// backward, [`Before`](Self::Before) the oldest record it has, never has a gap: a page
/// ends early where trimming left off.
///
/// # Examples
///
/// ```
/// use askbus_store::{HistoryPage, MemoryStore, SessionEvent, Store, Write};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store = MemoryStore::new();
/// for n in 0..5 {
///     let step = SessionEvent {
///         session_id: "s".into(),
///         event_type: "agent.step".into(),
///         properties: format!(r#"{{"n":{n}}}"#),
///     };
///     store.write(Write::Event(step)).await.unwrap();
/// }
/// let newest = store.history("s", HistoryPage::Before(u64::MAX), 2).await.unwrap();
/// let older = store.history("s", HistoryPage::Before(newest[0].position), 2).await.unwrap();
/// assert_eq!(older.len(), 2);
/// assert!(older[1].position < newest[0].position);
/// let on = store.history("s", HistoryPage::From(older[1].position), 10).await.unwrap();
/// assert_eq!(on[0], older[1]);
/// assert_eq!(on[1..], newest);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryPage {
    /// The oldest records at or after this position (`0`: from the first one).
    From(u64),
    /// The newest records before this position (`u64::MAX`: the newest of all).
    Before(u64),
}

/// One record of a session's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRecord {
    /// Where it is: ascending with every record of the store (see the module docs).
    pub position: u64,
    /// What happened: a request inserted, its winning outcome, or an event.
    pub entry: ChangeKind,
}

/// How many records past its `limit` a history may grow before it is trimmed back to the
/// limit: trimming a batch at a time costs one delete per batch, and moves the start of
/// the history (which every resumed reader checks) once per batch, not at every record.
pub fn history_slack(limit: usize) -> usize {
    (limit / 8).max(1)
}

/// The records of `records` (ascending by `position`) that `page` names, at most `limit`,
/// oldest first: a history page of records kept in memory (the memory store's, and the
/// histories of a hub without a store).
pub fn page_of<T: Clone>(
    records: &VecDeque<T>,
    position: impl Fn(&T) -> u64,
    page: HistoryPage,
    limit: usize,
) -> Vec<T> {
    let range = match page {
        HistoryPage::From(from) => {
            let start = records.partition_point(|record| position(record) < from);
            start..records.len().min(start.saturating_add(limit))
        }
        HistoryPage::Before(before) => {
            let end = records.partition_point(|record| position(record) < before);
            end.saturating_sub(limit)..end
        }
    };
    records.range(range).cloned().collect()
}
