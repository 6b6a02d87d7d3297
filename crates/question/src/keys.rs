//! The seeds' request keys, `{session_id}_{n}`: the session's `n`th request of a kind.
//!
//! Seeds 000 and 001 address a request by its `approval_key`, `"abc-123_1"`, not by an id;
//! clients written from them build the key themselves. So every request gets the next key
//! of its session when it is registered: `n` is seed 001's interrupt count, which counts
//! the session's questions and approvals together (the kinds of one hub share
//! [`KeyCounters`]), from 1 in a fresh store, so that a key in the seeds' stream, which
//! names a request of either kind, names one request. Either the id or the key addresses
//! it.
//!
//! A key is never reused for another request: a session whose requests are all forgotten
//! is dropped from the index, and a session that asks again continues above every key
//! handed out so far, so an answer sent to a forgotten request's key is a 404, never an
//! answer to a request its sender did not see. Across restarts too: a store tells how many
//! requests it ever held (`Loaded::requests_ever`, a count that never goes down), every
//! key it ever saw numbered at most that, and every session continues above it
//! ([`KeyCounters::raise_floor`]).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use askbus_bus::{Id, IdKind};

/// The keys of the requests of one kind that a registry remembers (its `RequestType::Index`).
#[derive(Debug)]
pub(crate) struct RequestKeys<K: IdKind> {
    /// Request id by key.
    by_key: HashMap<Arc<str>, Id<K>>,
    /// The sessions' counts, shared with the hub's other kind. Locked under this kind's
    /// registry lock, and never while taking one, so the two registries cannot deadlock.
    counters: Arc<Mutex<KeyCounters>>,
    /// Keys two requests hold, with how many do: instances sharing a store number each
    /// session's keys on their own, so two may give one key to two requests at once. Such
    /// a key addresses neither (404; the ids still do), so that an answer meant for one is
    /// never taken for the other.
    ambiguous: HashMap<Arc<str>, usize>,
}

/// The key counts of every session, shared by the kinds of one hub.
#[derive(Debug, Default)]
pub(crate) struct KeyCounters {
    /// Per session: the `n` of its last key, and how many of its requests are remembered.
    /// A session is dropped when none is, so memory follows the remembered requests.
    sessions: HashMap<Arc<str>, SessionKeys>,
    /// No session's next key is numbered at or below this: the highest `n` of any session
    /// dropped so far, and the store's count of requests ever held ([`raise_floor`]). A
    /// session that asks again after it was dropped continues above it, so that no key
    /// ever names two requests.
    ///
    /// [`raise_floor`]: Self::raise_floor
    dropped: u64,
}

/// Key bookkeeping of one session.
#[derive(Debug)]
struct SessionKeys {
    /// The `n` of the session's latest key.
    last: u64,
    /// How many of the session's requests are pending or remembered.
    remembered: usize,
}

impl<K: IdKind> RequestKeys<K> {
    /// An empty index counting sessions' keys in `counters`.
    pub(crate) fn new(counters: Arc<Mutex<KeyCounters>>) -> Self {
        Self {
            by_key: HashMap::new(),
            counters,
            ambiguous: HashMap::new(),
        }
    }

    /// Assigns the next key of `session_id` to `id`.
    pub(crate) fn assign(&mut self, session_id: &Arc<str>, id: Id<K>) -> Arc<str> {
        let n = {
            let mut counters = self.counters();
            let session = counters.session(session_id);
            session.last += 1;
            session.remembered += 1;
            session.last
        };
        // Written out rather than `format!`ed: this runs for every request asked.
        let mut key = String::with_capacity(session_id.len() + 1 + 20);
        key.push_str(session_id);
        key.push('_');
        key.push_str(itoa::Buffer::new().format(n));
        let key: Arc<str> = key.into();
        self.hold(&key, id);
        key
    }

    /// Indexes a request read back (from the store, or another instance's change): later
    /// keys of its session continue after its `n`. An empty key (a request recorded before
    /// keys were given) is not indexed.
    pub(crate) fn remember(&mut self, session_id: &Arc<str>, key: &Arc<str>, id: Id<K>) {
        if key.is_empty() {
            return;
        }
        self.hold(key, id);
        let n = key
            .rsplit_once('_')
            .and_then(|(_, n)| n.parse().ok())
            .unwrap_or(0);
        let mut counters = self.counters();
        let session = counters.session(session_id);
        session.remembered += 1;
        session.last = session.last.max(n);
    }

    /// Drops a forgotten request's key, and its session once none of its requests is left.
    pub(crate) fn forget(&mut self, session_id: &str, key: &str, id: Id<K>) {
        if key.is_empty() {
            return;
        }
        self.release(key, id);
        let mut counters = self.counters();
        if let Some(session) = counters.sessions.get_mut(session_id) {
            session.remembered -= 1;
            if session.remembered == 0 {
                let last = session.last;
                counters.dropped = counters.dropped.max(last);
                counters.sessions.remove(session_id);
            }
        }
    }

    /// The id of the request holding `key`, unless no request or two do.
    pub(crate) fn id_for_key(&self, key: &str) -> Option<Id<K>> {
        self.by_key.get(key).copied()
    }

    fn counters(&self) -> MutexGuard<'_, KeyCounters> {
        // Counting cannot panic midway: a poisoned lock is still a sound one.
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that request `id` holds `key`; a key another request holds already becomes
    /// ambiguous (see [`ambiguous`](Self::ambiguous)).
    fn hold(&mut self, key: &Arc<str>, id: Id<K>) {
        if let Some(count) = self.ambiguous.get_mut(key) {
            *count += 1;
            return;
        }
        match self.by_key.entry(Arc::clone(key)) {
            Entry::Occupied(held) if *held.get() != id => {
                let holder = held.remove();
                self.ambiguous.insert(Arc::clone(key), 2);
                tracing::warn!(
                    "key {key} names two requests ({holder} and {id}, asked through different servers at once); answer them by id"
                );
            }
            Entry::Occupied(_) => {}
            Entry::Vacant(free) => {
                free.insert(id);
            }
        }
    }

    /// Records that request `id`, forgotten, no longer holds `key`.
    fn release(&mut self, key: &str, id: Id<K>) {
        if let Some(count) = self.ambiguous.get_mut(key) {
            *count -= 1;
            if *count == 0 {
                self.ambiguous.remove(key);
            }
        } else if let Some((key, holder)) = self.by_key.remove_entry(key)
            && holder != id
        {
            // Not this request's to release (one lookup in the usual case, not two).
            self.by_key.insert(key, holder);
        }
    }
}

impl KeyCounters {
    /// Continues every session's keys, and those of sessions yet to come, above `floor`:
    /// the store's count of requests ever held, read when the requests are loaded (at
    /// start, or by a follower that missed part of a shared store's log), at least the
    /// `n` of every key given to a request since forgotten, here or by another instance.
    pub(crate) fn raise_floor(&mut self, floor: u64) {
        self.dropped = self.dropped.max(floor);
        for session in self.sessions.values_mut() {
            session.last = session.last.max(floor);
        }
    }

    /// The session's bookkeeping, created above every dropped key if it is new.
    fn session(&mut self, session_id: &Arc<str>) -> &mut SessionKeys {
        let dropped = self.dropped;
        self.sessions
            .entry(Arc::clone(session_id))
            .or_insert_with(|| SessionKeys {
                last: dropped,
                remembered: 0,
            })
    }
}
