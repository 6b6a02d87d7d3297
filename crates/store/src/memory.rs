//! The in-memory store: the reference implementation of [`Store`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::{
    Ack, BoxFuture, EventRecord, Loaded, RequestKind, Store, StoreError, StoredRequest, Write,
    Written,
};

/// A [`Store`] in this process's memory: nothing survives the process.
///
/// Every write is applied under one mutex and its [`Ack`] is ready at once. Clones share
/// the same record, so several registries in one process can share requests through it.
/// The event history keeps at most [`MemoryStore::EVENT_RETENTION`] events.
///
/// # Examples
///
/// ```
/// use askbus_store::{MemoryStore, Store};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store = MemoryStore::new();
/// assert!(store.recent_events(10).await.unwrap().is_empty());
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    /// Shared by every clone.
    state: Arc<Mutex<State>>,
}

/// Everything a memory store holds.
#[derive(Debug, Default)]
struct State {
    /// Every request by id; ids of one kind sort in creation order.
    requests: BTreeMap<String, StoredRequest>,
    /// The newest request id of each `(kind, session, call_id)`.
    calls: HashMap<(RequestKind, String, String), String>,
    /// The newest events, oldest first.
    events: VecDeque<EventRecord>,
}

impl MemoryStore {
    /// How many events the history keeps; older ones are dropped.
    pub const EVENT_RETENTION: usize = 100_000;

    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every mutation completes before the guard drops and none can panic midway.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store for MemoryStore {
    fn write(&self, write: Write) -> Ack {
        let mut state = self.lock();
        Ack::ready(Ok(match write {
            Write::Insert(request) => {
                if state.requests.contains_key(&request.id) {
                    return Ack::ready(Err(StoreError::Corrupt(format!(
                        "request {} inserted twice",
                        request.id
                    ))));
                }
                if let Some(call_id) = &request.call_id {
                    let key = (request.kind, request.session_id.clone(), call_id.clone());
                    state.calls.insert(key, request.id.clone());
                }
                let id = request.id.clone();
                state.requests.insert(
                    id,
                    StoredRequest {
                        request,
                        outcome: None,
                    },
                );
                Written::Inserted
            }
            Write::Resolve { kind, id, outcome } => match state.requests.get_mut(&id) {
                Some(stored) if stored.request.kind == kind => match &stored.outcome {
                    Some(existing) => Written::AlreadyResolved(existing.state),
                    None => {
                        stored.outcome = Some(outcome);
                        Written::Resolved
                    }
                },
                _ => Written::NotFound,
            },
            Write::Append(event) => {
                if state.events.len() == Self::EVENT_RETENTION {
                    state.events.pop_front();
                }
                state.events.push_back(event);
                Written::Appended
            }
        }))
    }

    fn requests(&self, kind: RequestKind, retain_resolved: usize) -> BoxFuture<'_, Loaded> {
        let state = self.lock();
        let of_kind = || {
            state
                .requests
                .values()
                .filter(move |stored| stored.request.kind == kind)
        };
        let pending = of_kind()
            .filter(|stored| stored.outcome.is_none())
            .cloned()
            .collect();
        let mut resolved: Vec<_> = of_kind()
            .rev()
            .filter(|stored| stored.outcome.is_some())
            .take(retain_resolved)
            .cloned()
            .collect();
        resolved.reverse();
        Box::pin(std::future::ready(Ok(Loaded { pending, resolved })))
    }

    fn find_by_call<'a>(
        &'a self,
        kind: RequestKind,
        session_id: &'a str,
        call_id: &'a str,
    ) -> BoxFuture<'a, Option<StoredRequest>> {
        let state = self.lock();
        let found = state
            .calls
            .get(&(kind, session_id.to_owned(), call_id.to_owned()))
            .and_then(|id| state.requests.get(id))
            .cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<StoredRequest>> {
        let found = self.lock().requests.get(id).cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn recent_events(&self, limit: usize) -> BoxFuture<'_, Vec<EventRecord>> {
        let state = self.lock();
        let skip = state.events.len().saturating_sub(limit);
        let events = state.events.iter().skip(skip).cloned().collect();
        Box::pin(std::future::ready(Ok(events)))
    }
}
