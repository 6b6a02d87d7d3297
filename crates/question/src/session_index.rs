//! Pending requests by session, so that what a UI asks of a flooded registry costs what it
//! returns: a session's page of requests, and every session's count.
//!
//! The registry keeps one [`SessionIndex`] under its lock, in step with its pending map: an
//! id is in the index exactly while its request is pending. Reading a session's requests
//! from it costs `O(log n + k)` for `k` requests, and listing every session's count costs
//! `O(sessions)`, not a scan of every pending request.
//!
//! Counts are of **announced** requests only (those whose `asked` event is on the bus;
//! over a shared store a request registered here is pending a moment before that). So
//! counts read under the registry lock, together with the bus's head, match the event
//! stream exactly: every request event of that registry up to the head is reflected in
//! them, and none after it. A UI can then apply the events after that head to the counts,
//! each once.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

/// The pending ids of each session with any, and how many of them are announced.
#[derive(Debug)]
pub(crate) struct SessionIndex<I> {
    /// By session id, ascending; a session leaves when its last request does.
    sessions: BTreeMap<Arc<str>, Pending<I>>,
}

/// What the index holds for one session.
#[derive(Debug)]
struct Pending<I> {
    /// The session's pending request ids, ascending.
    ids: BTreeSet<I>,
    /// How many of them are announced.
    announced: usize,
}

impl<I> Default for SessionIndex<I> {
    fn default() -> Self {
        Self {
            sessions: BTreeMap::new(),
        }
    }
}

impl<I: Ord + Copy> SessionIndex<I> {
    /// Adds pending request `id` of `session`, announced or not yet.
    pub(crate) fn insert(&mut self, session: &Arc<str>, id: I, announced: bool) {
        let announced = usize::from(announced);
        if let Some(pending) = self.sessions.get_mut(session) {
            pending.ids.insert(id);
            pending.announced += announced;
            return;
        }
        let ids = BTreeSet::from([id]);
        self.sessions
            .insert(Arc::clone(session), Pending { ids, announced });
    }

    /// Counts a request of `session` added unannounced as announced now.
    pub(crate) fn announce(&mut self, session: &str) {
        if let Some(pending) = self.sessions.get_mut(session) {
            pending.announced += 1;
        }
    }

    /// Removes request `id` of `session`, which is no longer pending; `announced` says
    /// whether it was counted.
    pub(crate) fn remove(&mut self, session: &str, id: I, announced: bool) {
        let Some(pending) = self.sessions.get_mut(session) else {
            return;
        };
        if pending.ids.remove(&id) && announced {
            pending.announced -= 1;
        }
        if pending.ids.is_empty() {
            self.sessions.remove(session);
        }
    }

    /// The pending ids of `session` within `after`, ascending.
    pub(crate) fn ids(&self, session: &str, after: Bound<I>) -> impl Iterator<Item = I> + '_ {
        self.sessions
            .get(session)
            .into_iter()
            .flat_map(move |pending| pending.ids.range((after, Bound::Unbounded)).copied())
    }

    /// Every session with announced requests and how many, ascending by session id.
    pub(crate) fn announced(&self) -> impl Iterator<Item = (&Arc<str>, usize)> {
        self.sessions
            .iter()
            .filter(|(_, pending)| pending.announced > 0)
            .map(|(session, pending)| (session, pending.announced))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_come_and_go_with_their_requests() {
        let mut index = SessionIndex::default();
        index.insert(&"b".into(), 3, true);
        index.insert(&"b".into(), 4, false);
        index.insert(&"a".into(), 1, true);
        index.insert(&"a".into(), 2, false);
        let counts = |index: &SessionIndex<i32>| -> Vec<(String, usize)> {
            index
                .announced()
                .map(|(session, count)| (session.to_string(), count))
                .collect()
        };
        assert_eq!(counts(&index), [("a".into(), 1), ("b".into(), 1)]);
        index.announce("a");
        assert_eq!(counts(&index), [("a".into(), 2), ("b".into(), 1)]);
        let after_one: Vec<_> = index.ids("a", Bound::Excluded(1)).collect();
        assert_eq!(after_one, [2]);
        index.remove("a", 1, true);
        index.remove("a", 2, true);
        index.remove("b", 4, false);
        assert_eq!(
            counts(&index),
            [("b".into(), 1)],
            "an unannounced removal counts nothing"
        );
        index.remove("b", 3, true);
        assert!(
            index.sessions.is_empty(),
            "no memory is kept for a session with nothing"
        );
        assert_eq!(index.ids("a", Bound::Unbounded).count(), 0);
    }
}
