//! The in-memory store: the reference implementation of [`Store`].

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use crate::log::check_continues;
use crate::{
    Ack, AuditRecord, BoxFuture, Change, ChangeKind, ChangeLog, Delivery, DeliveryQuery,
    DeliveryState, EventRecord, HistoryLimit, HistoryPage, HistoryRecord, KeptHistory,
    LOG_RETENTION, Loaded, LogPosition, OutboxMessage, RequestKind, Store, StoreError,
    StoredRequest, Write, Written, now_ms,
};

/// A [`Store`] in this process's memory: nothing survives the process.
///
/// Every write is applied under one mutex and its [`Ack`] is ready at once. Clones share
/// the same record and [change log](ChangeLog), so several registries in one process can
/// share requests through it exactly as server instances share a
/// [`RedisStore`](crate::RedisStore). The event history keeps at most [`MemoryStore::EVENT_RETENTION`]
/// events, the change log the newest [`LOG_RETENTION`] changes, each session's history about
/// its newest [`with_history_limit`](Self::with_history_limit) records, within
/// [`with_history_bytes`](Self::with_history_bytes); a history's
/// positions are the numbers of its changes in the change log.
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
#[derive(Debug, Clone)]
pub struct MemoryStore {
    /// Shared by every clone.
    state: Arc<Mutex<State>>,
    /// The newest change's position, sent after each append, for readers waiting on it.
    head: Arc<watch::Sender<LogPosition>>,
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
    /// The newest changes, oldest first; the change at `log[i]` is number
    /// `appended - log.len() + 1 + i`.
    log: VecDeque<Change>,
    /// How many changes were ever appended.
    appended: u64,
    /// Each session's history.
    histories: HashMap<String, SessionHistory>,
    /// How much a history keeps (see the `history` module docs).
    history_limit: HistoryLimit,
    /// The audit log: entry `seq` is at `audit[seq - 1]`, never removed.
    audit: Vec<AuditRecord>,
    /// Every delivery of the outbox, by message id (ascending in creation order), then
    /// target.
    deliveries: BTreeMap<(String, String), Delivery>,
    /// The pending deliveries by when they are due, then message id and target: what a
    /// claim takes from the front, without reading the settled ones.
    due: BTreeSet<(u64, String, String)>,
}

/// One session's history.
#[derive(Debug, Default)]
struct SessionHistory {
    /// Its records, each the change it records.
    records: KeptHistory<ChangeKind>,
    /// When its newest record was written, milliseconds since the Unix epoch.
    newest_at_ms: u64,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                requests: BTreeMap::new(),
                calls: HashMap::new(),
                events: VecDeque::new(),
                log: VecDeque::new(),
                appended: 0,
                histories: HashMap::new(),
                history_limit: HistoryLimit::default(),
                audit: Vec::new(),
                deliveries: BTreeMap::new(),
                due: BTreeSet::new(),
            })),
            head: Arc::default(),
        }
    }
}

impl MemoryStore {
    /// How many events the history keeps; older ones are dropped.
    pub const EVENT_RETENTION: usize = 100_000;

    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps about the newest `limit` records of each session's history (at least one);
    /// see the `history` module docs.
    #[must_use]
    pub fn with_history_limit(self, limit: usize) -> Self {
        self.lock().history_limit.records = limit.max(1);
        self
    }

    /// Keeps about `bytes` bytes of each session's history at most, each record counted as
    /// the length of its JSON (but always the newest record); see the `history` module docs.
    #[must_use]
    pub fn with_history_bytes(self, bytes: usize) -> Self {
        self.lock().history_limit.bytes = bytes.max(1);
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every mutation completes before the guard drops and none can panic midway.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `kind` to the change log and to `session_id`'s history, under the state
    /// lock so the log's order is the order the changes were made in.
    fn log(&self, state: &mut State, session_id: &str, kind: ChangeKind) {
        state.appended += 1;
        let position = LogPosition(state.appended);
        if state.log.len() == LOG_RETENTION {
            state.log.pop_front();
        }
        state.remember(session_id, position.0, kind.clone());
        state.log.push_back(Change { position, kind });
        self.head.send_replace(position);
    }
}

impl State {
    /// Appends `entry` to `session_id`'s history at `position`, trimming it back to the
    /// limit once it is a batch over.
    fn remember(&mut self, session_id: &str, position: u64, entry: ChangeKind) {
        let limit = self.history_limit;
        let size = serde_json::to_string(&entry).map_or(0, |json| json.len());
        let history = self.histories.entry(session_id.to_owned()).or_default();
        history.records.push(position, entry, size, limit);
        history.newest_at_ms = now_ms();
    }

    /// Appends `draft` as the audit log's next entry.
    fn append_audit(&mut self, draft: String) {
        let seq = self.audit.len() as u64 + 1;
        self.audit.push(AuditRecord {
            seq,
            draft,
            seal: None,
        });
    }

    /// Adds `message` to the outbox: one pending delivery per target, due at once.
    fn enqueue(&mut self, message: OutboxMessage) {
        for target in message.targets {
            let delivery = Delivery {
                message_id: message.id.clone(),
                target: target.clone(),
                payload: message.payload.clone(),
                created_at_ms: message.created_at_ms,
                state: DeliveryState::Pending,
                attempts: 0,
                next_attempt_ms: Some(message.created_at_ms),
                last_attempt: None,
            };
            let key = (message.id.clone(), target);
            if let Entry::Vacant(vacant) = self.deliveries.entry(key.clone()) {
                vacant.insert(delivery);
                self.due.insert((message.created_at_ms, key.0, key.1));
            }
        }
    }

    /// Up to `limit` changes after `after`, oldest first.
    fn changes_after(&self, after: LogPosition, limit: usize) -> Result<Vec<Change>, StoreError> {
        if after > LogPosition(self.appended) {
            // A position this store never reached: it is from another store.
            return Err(StoreError::LogTrimmed { after });
        }
        let changes: Vec<Change> = self
            .log
            .iter()
            .skip_while(|change| change.position <= after)
            .take(limit)
            .cloned()
            .collect();
        check_continues(after, &changes)?;
        Ok(changes)
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
                let (id, session_id) = (request.id.clone(), request.session_id.clone());
                state.requests.insert(
                    id,
                    StoredRequest {
                        request: request.clone(),
                        outcome: None,
                    },
                );
                self.log(&mut state, &session_id, ChangeKind::Inserted(request));
                Written::Inserted
            }
            Write::Resolve {
                kind,
                id,
                outcome,
                audit,
                outbox,
            } => match state.requests.get_mut(&id) {
                Some(stored) if stored.request.kind == kind => match &stored.outcome {
                    Some(existing) => Written::AlreadyResolved(existing.state),
                    None => {
                        stored.outcome = Some(outcome.clone());
                        let session_id = stored.request.session_id.clone();
                        let change = ChangeKind::Resolved { kind, id, outcome };
                        self.log(&mut state, &session_id, change);
                        if let Some(draft) = audit {
                            state.append_audit(draft);
                        }
                        if let Some(message) = outbox {
                            state.enqueue(message);
                        }
                        Written::Resolved
                    }
                },
                _ => Written::NotFound,
            },
            Write::Event(event) => {
                let session_id = event.session_id.clone();
                self.log(&mut state, &session_id, ChangeKind::Event(event));
                Written::Appended
            }
            Write::Append(event) => {
                if state.events.len() == Self::EVENT_RETENTION {
                    state.events.pop_front();
                }
                state.events.push_back(event);
                Written::Appended
            }
            Write::Audit(draft) => {
                state.append_audit(draft);
                Written::Appended
            }
            Write::Enqueue(message) => {
                state.enqueue(message);
                Written::Appended
            }
            Write::Attempted {
                message_id,
                target,
                attempt,
            } => {
                let state = &mut *state;
                match state
                    .deliveries
                    .get_mut(&(message_id.clone(), target.clone()))
                {
                    // A settled delivery stays settled (a sender whose lease ran out, late).
                    Some(delivery) if delivery.state == DeliveryState::Pending => {
                        if let Some(was) = delivery.next_attempt_ms {
                            state.due.remove(&(was, message_id.clone(), target.clone()));
                        }
                        (delivery.state, delivery.next_attempt_ms) = attempt.outcome();
                        if let Some(next) = delivery.next_attempt_ms {
                            state.due.insert((next, message_id, target));
                        }
                        delivery.attempts += 1;
                        delivery.last_attempt = Some(attempt);
                        Written::Appended
                    }
                    Some(_) => Written::Appended,
                    None => Written::NotFound,
                }
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
        Box::pin(std::future::ready(Ok(Loaded {
            pending,
            resolved,
            // Every insert is a change of the log.
            requests_ever: state.appended,
        })))
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

    fn forget_resolved(&self, resolved_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        let mut state = self.lock();
        let mut due: Vec<(u64, String)> = state
            .requests
            .values()
            .filter_map(|stored| {
                let resolved_at = stored.outcome.as_ref()?.resolved_at_ms;
                (resolved_at < resolved_before_ms).then(|| (resolved_at, stored.request.id.clone()))
            })
            .collect();
        due.sort_unstable();
        due.truncate(limit);
        for (_, id) in &due {
            let Some(stored) = state.requests.remove(id) else {
                continue;
            };
            if let Some(call_id) = stored.request.call_id {
                let key = (stored.request.kind, stored.request.session_id, call_id);
                // Only if the call has not asked again since.
                if state.calls.get(&key) == Some(id) {
                    state.calls.remove(&key);
                }
            }
        }
        Box::pin(std::future::ready(Ok(due.len())))
    }

    fn history<'a>(
        &'a self,
        session_id: &'a str,
        page: HistoryPage,
        limit: usize,
    ) -> BoxFuture<'a, Vec<HistoryRecord>> {
        let records = self
            .lock()
            .histories
            .get(session_id)
            .map(|history| {
                history
                    .records
                    .page(page, limit)
                    .into_iter()
                    .map(|(position, entry)| HistoryRecord { position, entry })
                    .collect()
            })
            .unwrap_or_default();
        Box::pin(std::future::ready(Ok(records)))
    }

    fn forget_quiet_histories(&self, quiet_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        let mut state = self.lock();
        let waiting: HashSet<&str> = state
            .requests
            .values()
            .filter(|stored| stored.outcome.is_none())
            .map(|stored| stored.request.session_id.as_str())
            .collect();
        let mut quiet: Vec<(u64, String)> = state
            .histories
            .iter()
            .filter(|(session, history)| {
                history.newest_at_ms < quiet_before_ms && !waiting.contains(session.as_str())
            })
            .map(|(session, history)| (history.newest_at_ms, session.clone()))
            .collect();
        drop(waiting);
        quiet.sort_unstable();
        quiet.truncate(limit);
        for (_, session) in &quiet {
            state.histories.remove(session);
        }
        Box::pin(std::future::ready(Ok(quiet.len())))
    }

    fn audit_entries(&self, after_seq: u64, limit: usize) -> BoxFuture<'_, Vec<AuditRecord>> {
        let state = self.lock();
        let skip = usize::try_from(after_seq).unwrap_or(usize::MAX);
        let entries = state.audit.iter().skip(skip).take(limit).cloned().collect();
        Box::pin(std::future::ready(Ok(entries)))
    }

    fn seal_audit(&self, seals: Vec<(u64, String)>) -> BoxFuture<'_, ()> {
        let mut state = self.lock();
        for (seq, seal) in seals {
            let index = usize::try_from(seq.wrapping_sub(1)).unwrap_or(usize::MAX);
            if let Some(entry) = state.audit.get_mut(index) {
                entry.seal.get_or_insert(seal);
            }
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn claim_deliveries(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Vec<Delivery>> {
        let mut state = self.lock();
        let state = &mut *state;
        let due: Vec<(u64, String, String)> = state
            .due
            .iter()
            .take_while(|(at, _, _)| *at <= now_ms)
            .take(limit)
            .cloned()
            .collect();
        let lease_end = now_ms.saturating_add(lease_ms);
        let claimed = due
            .into_iter()
            .filter_map(|entry| {
                state.due.remove(&entry);
                let (_, message_id, target) = entry;
                let delivery = state
                    .deliveries
                    .get_mut(&(message_id.clone(), target.clone()))?;
                delivery.next_attempt_ms = Some(lease_end);
                state.due.insert((lease_end, message_id, target));
                Some(delivery.clone())
            })
            .collect();
        Box::pin(std::future::ready(Ok(claimed)))
    }

    fn deliveries(&self, query: DeliveryQuery) -> BoxFuture<'_, Vec<Delivery>> {
        let state = self.lock();
        let mut page: Vec<Delivery> = state
            .deliveries
            .values()
            .rev()
            .filter(|delivery| {
                query
                    .before
                    .as_ref()
                    .is_none_or(|before| delivery.message_id < *before)
                    && query.state.is_none_or(|wanted| delivery.state == wanted)
            })
            .take(query.limit)
            .cloned()
            .collect();
        // Newest message first, a message's deliveries by target.
        page.sort_by(|a, b| {
            b.message_id
                .cmp(&a.message_id)
                .then_with(|| a.target.cmp(&b.target))
        });
        Box::pin(std::future::ready(Ok(page)))
    }

    fn pending_deliveries(&self) -> BoxFuture<'_, u64> {
        let pending = self.lock().due.len() as u64;
        Box::pin(std::future::ready(Ok(pending)))
    }

    fn forget_deliveries(&self, settled_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        let mut state = self.lock();
        let mut settled: Vec<(u64, (String, String))> = state
            .deliveries
            .iter()
            .filter(|(_, delivery)| delivery.state != DeliveryState::Pending)
            .filter_map(|(key, delivery)| {
                let at = delivery.last_attempt.as_ref()?.at_ms;
                (at < settled_before_ms).then(|| (at, key.clone()))
            })
            .collect();
        settled.sort_unstable();
        settled.truncate(limit);
        for (_, key) in &settled {
            state.deliveries.remove(key);
        }
        Box::pin(std::future::ready(Ok(settled.len())))
    }

    fn change_log(&self) -> Option<&dyn ChangeLog> {
        Some(self)
    }
}

impl ChangeLog for MemoryStore {
    fn head(&self) -> BoxFuture<'_, LogPosition> {
        let head = LogPosition(self.lock().appended);
        Box::pin(std::future::ready(Ok(head)))
    }

    fn read_after(
        &self,
        after: LogPosition,
        limit: usize,
        wait: Duration,
    ) -> BoxFuture<'_, Vec<Change>> {
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + wait;
            // Subscribed before looking, so an append between the look and the wait wakes it.
            let mut appended = self.head.subscribe();
            loop {
                let changes = self.lock().changes_after(after, limit)?;
                if !changes.is_empty() {
                    return Ok(changes);
                }
                match tokio::time::timeout_at(deadline, appended.changed()).await {
                    Ok(Ok(())) => {}
                    // The wait ran out; the sender cannot close while `self` holds it.
                    Ok(Err(_)) | Err(_) => return Ok(Vec::new()),
                }
            }
        })
    }
}
