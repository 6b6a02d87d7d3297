//! [`SharedIds`]: where a registry's request ids (and its sessions' key counters) come
//! from. The registries of one hub share one source, so ids of both kinds are one
//! ascending order and "oldest" across kinds is exact; it is taken only under a registry's
//! lock (registry → ids, never the other way).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use askbus_bus::IdGenerator;

use crate::keys::KeyCounters;

/// An id source shared by registries: their ids, and the counters of their sessions' keys.
#[derive(Clone)]
pub(crate) struct SharedIds {
    /// The ascending ids.
    generator: Arc<Mutex<IdGenerator>>,
    /// Each session's key count, across the kinds.
    pub(crate) keys: Arc<Mutex<KeyCounters>>,
}

/// A new id source.
pub(crate) fn new_ids() -> SharedIds {
    SharedIds {
        generator: Arc::new(Mutex::new(IdGenerator::new())),
        keys: Arc::default(),
    }
}

impl SharedIds {
    /// Continues every session's keys above `requests_ever`, the store's count of the
    /// requests it ever held (see [`KeyCounters::raise_floor`]). Takes the counters' lock
    /// alone: call it holding no registry's lock.
    pub(crate) fn raise_key_floor(&self, requests_ever: u64) {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .raise_floor(requests_ever);
    }
}

pub(super) fn lock_ids(ids: &SharedIds) -> MutexGuard<'_, IdGenerator> {
    // Handing out an id cannot panic midway: a poisoned lock is still a sound one.
    ids.generator.lock().unwrap_or_else(PoisonError::into_inner)
}
