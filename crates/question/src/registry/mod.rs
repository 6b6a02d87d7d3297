//! The pending-request registry: one machinery for every kind of human-input request.
//!
//! A request is *pending* from the moment it is registered until its single terminal
//! outcome: replied, rejected, timed out or cancelled. Whatever races for it (two replies,
//! a reply against the timer, a reject against the asker dropping its future), the first
//! to take the registry lock and find the entry pending wins; the others find it resolved
//! and get [`ResolveError::AlreadyResolved`]. The winner also publishes the terminal event
//! while still holding the lock, so the event stream shows exactly one outcome per request,
//! always after its `asked` event.
//!
//! Locking policy: one `std::sync::Mutex` per registry, held only to look up, insert or
//! remove entries and to publish on the bus (which never blocks); **never across an
//! `.await`**. Answers are delivered to waiting futures after the lock is released. Locks
//! nest one way: registry → bus (and registry → ids, registry → quota), never the other,
//! so nothing the bus or a subscriber does can wait for a registry.
//!
//! Timeouts cost no task and no timer per request: deadlines live in one ordered index, and
//! one driver task per registry sleeps until the earliest of them (see `timer`).
//!
//! ## Files
//!
//! - `request_type`: the [`RequestType`] trait, what questions and approvals plug in.
//! - `storage`: the storage mode (memory, a store that records, a store that decides),
//!   one private type whose methods are the only places the modes differ.
//! - `record`: what is written to a store and how it is read back.
//! - `ticket`: the asker's handle, whose drop cancels.
//! - `timer`: the one task per registry that serves deadlines and follow-ups.
//! - `id_source`: the ids the registries of one hub share.
//!
//! `request_type`, `storage`, `record` and `id_source` depend on nothing of this file;
//! `ticket` and `timer` are this file's `Registry` split by concern, and use it.
//!
//! # Over a shared store
//!
//! When several instances share a store ([`StoreRole::Shared`]), "the first to take the
//! registry lock" is not enough: two instances each hold a lock of their own. Then the
//! store decides. Resolving *proposes* an outcome (validated here, under the lock, as
//! always) and the store's conditional resolve takes exactly one proposal per request,
//! from whichever instance; every registry, the winner's included, changes its state only
//! when it [applies](Registry::apply) the store's change log, in log order, and publishes
//! the events then. So every instance's bus carries the same requests and the same one
//! outcome of each, in the same order. A proposal that lost completes its [`Durable`] with
//! [`DurableError::AlreadyResolved`].
//!
//! A request registered here is pending here at once (its asker, drop-to-cancel and
//! `get` work as without a store), but its `asked` event waits for its insert to come back
//! through the log. Every instance runs the timer of every request it knows; the first
//! expiry the store takes wins, the others lose harmlessly. A request the store does not
//! know (its insert failed, or the store lost its data) is an *orphan*: when a proposal
//! for it comes back "not found", this registry is the only one that can end it, and does
//! if it holds the request's asker (or the outcome is a timeout, which every instance
//! reaches alike). A decision through another instance is refused: it would reach that
//! instance's waiters and never the asker.
//!
//! Follow-ups are not outcomes, and only the instance that registered a request (that holds
//! its asker) fires them: the others would repeat them. It writes each to the store as a
//! session event (the session's history, the outbox, the change log), and every instance,
//! this one included, publishes it when its follower reads it in the log, as it publishes
//! an agent step. Who may decide an escalated request follows its `escalate_at` and the
//! clock, on every instance, not the event.
//!
//! # Quorums
//!
//! A request whose review configs need more than one reviewer (`review_configs[].quorum`,
//! raised to the operator's [`QuorumFloor`](crate::QuorumFloor) when it is made) does not
//! end on a reply: each reply is a [`Vote`], counted here and published as
//! `approval.decided`, and the request ends when the votes alike reach the quorum, or at
//! once on a veto. Every way in (an HTTP reply, a link, Slack, resume, a session reject,
//! the guard) reaches the same count, so all vote the same way. Each vote is recorded as a
//! session event: in the session's history and, over a shared store, in the change log.
//!
//! Who may vote is [`check_decider`](Registry::check_decider)'s: the request's named
//! reviewers, one vote each. Those restrain only what may *run*; a decision that runs
//! nothing (a veto, a session rejected) needs only the role and asker rule, so an agent
//! naming its reviewers cannot take the kill switch from the others.
//!
//! Over a shared store a vote is only written. Every instance counts it when it reads it in
//! the log, so all count the same votes in the same order; the instance that cast it
//! learns from the log whether it counted (a second vote of the same reviewer, cast
//! through another instance first, does not: [`DurableError::NotCounted`], `403` over
//! HTTP), and whichever instance sees the quorum reached proposes the outcome, of which
//! the store takes one. A restarted instance, one joining later, or a follower that missed
//! part of the log counts the votes of its pending requests again from their sessions'
//! histories ([`recount_votes`](Registry::recount_votes)).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use askbus_audit::AuditDraft;
use askbus_bus::{Bus, EventId, Id};
use askbus_store::{ChangeKind, HistoryPage, Loaded, SessionEvent, Store, StoreError, Written};
use tokio::sync::{Notify, Semaphore, oneshot};
use tokio::time::Instant;

use crate::durable::Durable;
use crate::error::{DurableError, Unrecorded};
use crate::follow_up::{Due, Timers};
use crate::identity::{Duties, Identity, NotAllowed};
use crate::ids::{RequestId, VoteId};
use crate::notify::{Notice, Notifier};
use crate::outcome::{Outcome, OutcomeKind, Snapshot, Vote};
use crate::quota::{Charge, Quota, QuotaExceeded, Weight};
mod id_source;
pub(crate) mod record;
mod request_type;
mod storage;
mod ticket;
mod timer;

use crate::session_index::SessionIndex;
use id_source::lock_ids;
pub(crate) use id_source::{SharedIds, new_ids};
use record::{Recorder, RequestDigest};
pub(crate) use request_type::{OutcomeOf, RequestType, VoteOn};
pub(crate) use storage::StoreRole;
use storage::{FollowUps, Storage};
pub(crate) use ticket::Ticket;
use timer::EXPIRY_RETRY;

/// Why a request could not be resolved.
#[derive(Debug)]
pub(crate) enum ResolveError<E> {
    /// No request with that id is pending or remembered.
    NotFound,
    /// The request already reached this outcome.
    AlreadyResolved(OutcomeKind),
    /// The resolution was refused by the caller's check (an invalid answer).
    Refused(E),
    /// The identity deciding may not decide this request ([`Duties::check_decide`]).
    NotAllowed(NotAllowed),
}

/// Why [`Registry::register`] made no request.
#[derive(Debug)]
pub(crate) enum Refused<Id> {
    /// The tool call already asked this request, about other content.
    CallReused(Id),
    /// A limit of the registry's quota would be passed.
    OverQuota(QuotaExceeded),
    /// The identity asking may not make requests ([`Duties::check_ask`]).
    NotAllowed(NotAllowed),
    /// The content has more JSON values than one request may
    /// ([`PendingLimits::values_per_request`](crate::PendingLimits::values_per_request)).
    TooLarge {
        /// How many it has.
        values: usize,
        /// How many it may have.
        limit: usize,
    },
}

/// Handle to a registry; clones share it.
pub(crate) struct Registry<K: RequestType> {
    inner: Arc<Inner<K>>,
}

/// A tool call in a session: `(session_id, call_id)`.
type CallKey = (Arc<str>, String);

/// What an asker or a watcher is handed: the request's outcome, or the store's failure to
/// record it (an answer a restart would forget, which nobody may act on).
type Handed<K> = Result<OutcomeOf<K>, Unrecorded>;

/// The sending side of a request's outcome, for its asker or a watcher.
type OutcomeSender<K> = oneshot::Sender<Handed<K>>;

/// Where the store is with an outcome it was asked to record. Its own lock, taken under
/// the registry's or alone, so that the store's answer can hand the outcome out without
/// the registry lock.
type Recording<K> = Arc<Mutex<RecordingState<K>>>;

/// See [`Recording`].
enum RecordingState<K: RequestType> {
    /// The store has not answered: these wait for it.
    Awaited(Vec<OutcomeSender<K>>),
    /// The store has the outcome: later waiters get it at once.
    Recorded,
    /// The store could not record it: later waiters get this, and a tool call asking
    /// again makes a new request (the store still holds this one pending).
    Failed(Unrecorded),
}

/// Shared state of a registry.
struct Inner<K: RequestType> {
    /// Where `asked` and terminal events are published.
    bus: Bus,
    /// Everything mutable; see the module docs for the locking policy.
    state: Mutex<State<K>>,
    /// Wakes the timer driver when a new earliest deadline appears, or the registry drops.
    timer_wakeup: Arc<Notify>,
    /// Whether the timer driver task was spawned.
    timer_started: AtomicBool,
    /// How many resolved requests are remembered for `get`, `wait` and 409 answers.
    retain_resolved: usize,
    /// Where registrations and outcomes are recorded, if anywhere, and who decides.
    storage: Storage,
    /// Source of request ids, ascending in registration order. Shared by the registries
    /// of one hub, so ids of both kinds are one order ("oldest" across kinds is exact);
    /// taken only under this registry's lock (registry → ids, never the other way).
    ids: SharedIds,
    /// The pending-request caps, once installed; shared by the registries of one hub and,
    /// like `ids`, taken only under this registry's lock (registry → quota).
    quota: OnceLock<Arc<Quota>>,
    /// The separation-of-duties policy, once set ([`Registry::set_duties`]); the default
    /// before.
    duties: OnceLock<Duties>,
    /// Room for the cancellations of withdrawn requests retried in the background
    /// ([`Registry::withdraw`]): a withdrawn request frees its quota slot at once, so
    /// without this an outage of the shared store would leave one task per create refused
    /// meanwhile, however many a client sends.
    withdrawals: Arc<Semaphore>,
    /// When the registry last said its room for withdrawals was full.
    withdrawals_full_warned: Mutex<Option<Instant>>,
}

/// How often a registry says its room for withdrawals is full, at most.
const FULL_WARNING_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Most cancellations of withdrawn requests retried at once by one registry; past it, the
/// next is proposed once and left (logged), to end on the other instances by its timeout.
const WITHDRAWALS_RETRIED: usize = 1_024;

/// How many history records one read of [`read_votes`] takes.
const VOTE_PAGE: usize = 256;

/// The votes on requests `ids` of `session` recorded in its history, oldest first. Reads
/// back from the newest record until the inserts of all of them were passed.
async fn read_votes<K: RequestType>(
    store: &dyn Store,
    session: &str,
    ids: &[Id<K::IdPrefix>],
) -> Result<Vec<VoteOn<K>>, StoreError> {
    let mut inserts_to_pass: BTreeSet<String> = ids.iter().map(ToString::to_string).collect();
    let mut votes = Vec::new();
    let mut before = u64::MAX;
    while !inserts_to_pass.is_empty() {
        let page = store
            .history(session, HistoryPage::Before(before), VOTE_PAGE)
            .await?;
        for record in page.iter().rev() {
            match &record.entry {
                ChangeKind::Event(event) => {
                    if let Some((id, vote)) = K::read_vote(event)
                        && ids.contains(&id)
                    {
                        votes.push((id, vote));
                    }
                }
                ChangeKind::Inserted(request) => {
                    inserts_to_pass.remove(&request.id);
                }
                _ => {}
            }
        }
        match page.first() {
            Some(oldest) if page.len() == VOTE_PAGE => before = oldest.position,
            _ => break,
        }
    }
    votes.reverse();
    Ok(votes)
}

/// Whether `outcome`, as a decision, runs nothing: a rejection, or a reply that vetoes
/// (see [`Registry::check_decider`]).
fn stops<K: RequestType>(outcome: &OutcomeOf<K>) -> bool {
    match outcome {
        Outcome::Replied(reply) => K::vetoes(reply),
        _ => true,
    }
}

/// How many votes agree with `vote` once it joins `cast`, itself included.
fn agreeing<K: RequestType>(cast: &[Vote<K::Reply>], vote: &Vote<K::Reply>) -> u32 {
    let alike = cast
        .iter()
        .filter(|earlier| K::agree(&earlier.reply, &vote.reply))
        .count();
    u32::try_from(alike + 1).unwrap_or(u32::MAX)
}

/// What the registry lock protects.
struct State<K: RequestType> {
    /// Pending requests by id; ascending iteration is creation order.
    pending: BTreeMap<Id<K::IdPrefix>, Pending<K>>,
    /// `(when, id, what)` of every deadline and follow-up step of the pending requests,
    /// earliest first.
    deadlines: BTreeSet<(Instant, Id<K::IdPrefix>, Due)>,
    /// The most recently created resolved requests, at most `retain_resolved`.
    resolved: BTreeMap<Id<K::IdPrefix>, Resolved<K>>,
    /// The weight of the resolved requests remembered (0 without a quota).
    resolved_weight: usize,
    /// Extra waiters from [`Registry::wait`], by pending request. Kept out of [`Pending`]
    /// because few requests have any, and every pending entry would pay for the field.
    watchers: HashMap<Id<K::IdPrefix>, Vec<OutcomeSender<K>>>,
    /// The kind's own lookup state, covering exactly the pending and remembered requests.
    index: K::Index,
    /// The pending or remembered request of each tool call that asked one.
    calls: HashMap<CallKey, Id<K::IdPrefix>>,
    /// The pending requests by session, in step with `pending`.
    sessions: SessionIndex<Id<K::IdPrefix>>,
    /// Over a shared store, the votes cast here and not yet read back from its log, with
    /// where to say whether each counted ([`Registry::vote`]).
    vote_waiters: HashMap<VoteKey<K>, oneshot::Sender<Result<(), DurableError>>>,
}

/// One vote cast on one request.
type VoteKey<K> = (Id<<K as RequestType>::IdPrefix>, VoteId);

/// A request waiting for its outcome.
struct Pending<K: RequestType> {
    /// The request as asked.
    request: Arc<K::Request>,
    /// The asker's end, `None` for requests nobody awaits in process (server mode).
    asker: Option<OutcomeSender<K>>,
    /// When the request times out, if ever.
    deadline: Option<Instant>,
    /// When it escalates, if ever: from then on the deciders it escalates to may decide
    /// it ([`Registry::check_decider`]). Whether this instance fires the event is another
    /// matter (see [`Timers::follow_ups`]).
    escalate_at: Option<Instant>,
    /// When its reminder fires here, if it does.
    remind_at: Option<Instant>,
    /// Whether its `asked` event was published. Only a request registered here over a
    /// shared store waits for that (until its insert comes back through the change log).
    announced: bool,
    /// The account its slot of the quota was charged to, if any (see [`Quota`]).
    account: Option<Arc<str>>,
    /// Its [`Weight`] in bytes, measured while a quota is installed (0 otherwise).
    weight: usize,
    /// The digest of its stored JSON, which its receipt names (with a store): made once,
    /// when it was stored or read, not again on every outcome under the lock.
    digest: Option<RequestDigest>,
    /// Under a quorum, the votes so far, in the order they were counted (over a shared
    /// store: the order of its log, the same on every instance).
    votes: Vec<Vote<K::Reply>>,
    /// Over a shared store, the HTTP request (its id) that asked it here, until its
    /// `asked` event, published when its insert comes back through the log, names it.
    asked_in: Option<Arc<str>>,
    /// Over a shared store, the HTTP request that last proposed an outcome here, with who
    /// proposed it and what: the outcome's event names that request when the store took
    /// an outcome of that kind by that decider.
    proposed_in: Option<(Option<Identity>, OutcomeKind, Arc<str>)>,
}

/// A request that reached its outcome, remembered for late readers.
struct Resolved<K: RequestType> {
    /// The request as asked.
    request: Arc<K::Request>,
    /// How it ended.
    outcome: OutcomeOf<K>,
    /// Who decided it, if anyone did.
    decided_by: Option<Identity>,
    /// Its weight in bytes, as it had while pending.
    weight: usize,
    /// With a store: where the store is with the outcome.
    recording: Option<Recording<K>>,
    /// When it ended, in the order of every registry's endings ([`Ending`]).
    ended: Ending,
}

/// When a request ended: the wall clock's millisecond (the store's `resolved_at_ms` for a
/// request loaded from it), then the process's count of endings, which orders the endings
/// of one millisecond, across kinds.
pub(crate) type Ending = (u64, u64);

/// The endings counted so far in this process, by every registry.
static ENDINGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The next [`Ending`], at `at_ms`.
fn ending_at(at_ms: u64) -> Ending {
    (
        at_ms,
        ENDINGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    )
}

/// How a remembered request ended, for whoever must know what a human saw last.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HowEnded {
    /// When (see [`Ending`]).
    pub(crate) at: Ending,
    /// Its outcome's kind.
    pub(crate) kind: OutcomeKind,
    /// Whether a human decided it: an answer or a refusal not given by a standing grant, or
    /// a cancellation by someone other than its asker. A timeout, a default answer, an
    /// asker that went away or cancelled its own request are not.
    pub(crate) by_a_human: bool,
}

/// Outcome deliveries collected under the lock and sent after it is released.
struct Delivery<K: RequestType> {
    /// The asker's end, if any.
    asker: Option<OutcomeSender<K>>,
    /// Waiters from `wait`; with a store they are in `recording` instead.
    watchers: Vec<OutcomeSender<K>>,
    /// With a store: the waiters from `wait`, told once the store answered.
    recording: Option<Recording<K>>,
    /// What to send them.
    outcome: OutcomeOf<K>,
    /// The store's acknowledgement of the outcome, if there is a store.
    recorded: Option<askbus_store::Ack>,
    /// Where to say so if the store refuses an outcome already announced (`*.not_recorded`),
    /// and of which request; `None` without a store, or if the request was never announced.
    announced_on: Option<(Bus, Arc<K::Request>)>,
}

/// Whether counting a vote announces it: not when votes announced before are counted again
/// (by a restarted instance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Announce {
    Yes,
    No,
}

/// What counting one vote came to ([`Registry::count`]).
struct Counted<K: RequestType> {
    /// The vote's record for the session's history.
    record: Option<SessionEvent>,
    /// The reply that ends the request and who cast the deciding vote, if the vote
    /// reached the quorum or vetoed.
    settled: Option<(K::Reply, Identity)>,
}

/// A handle that does not keep its registry alive (for tasks that serve it).
pub(crate) struct WeakRegistry<K: RequestType> {
    inner: Weak<Inner<K>>,
}

impl<K: RequestType> WeakRegistry<K> {
    /// The registry, unless every handle of it is gone.
    pub(crate) fn upgrade(&self) -> Option<Registry<K>> {
        self.inner.upgrade().map(|inner| Registry { inner })
    }
}

impl<K: RequestType> Clone for Registry<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: RequestType> Registry<K> {
    pub(crate) fn new(bus: Bus, retain_resolved: usize, ids: SharedIds) -> Self {
        Self::with_parts(bus, retain_resolved, ids, None)
    }

    /// The id source, to share with another registry.
    pub(crate) fn ids(&self) -> &SharedIds {
        &self.inner.ids
    }

    /// The quota that caps this registry's new requests, once installed.
    pub(crate) fn quota(&self) -> Option<&Arc<Quota>> {
        self.inner.quota.get()
    }

    /// Makes `quota` cap this registry's new requests from now on, counting every request
    /// already pending. A registry has one quota for good: a second is ignored.
    pub(crate) fn install_quota(&self, quota: &Arc<Quota>) {
        let mut state = self.inner.lock();
        // Under the lock, so no request is registered or ended between the count and the
        // installation.
        if self.inner.quota.set(Arc::clone(quota)).is_ok() {
            for entry in state.pending.values_mut() {
                entry.weight = K::weight(&entry.request).bytes();
                quota.count(K::session_id(&entry.request), entry.weight);
            }
        }
    }

    /// Makes `notifier` tell the outside world of this registry's request changes, if it
    /// has a store (see the `notify` module). Set once: a second is ignored.
    pub(crate) fn set_notifier(&self, notifier: &Arc<dyn Notifier>) {
        if let Some(recorder) = self.inner.storage.recorder() {
            let _ = recorder.notifier.set(Arc::clone(notifier));
        }
    }

    /// Sets the separation-of-duties policy checked by [`register`](Self::register) and
    /// [`resolve`](Self::resolve). A registry has one policy for good: a second is ignored.
    pub(crate) fn set_duties(&self, duties: Duties) {
        let _ = self.inner.duties.set(duties);
    }

    /// The separation-of-duties policy in force.
    pub(crate) fn duties(&self) -> Duties {
        self.inner.duties.get().copied().unwrap_or_default()
    }

    fn with_parts(
        bus: Bus,
        retain_resolved: usize,
        ids: SharedIds,
        recorder: Option<(Recorder, StoreRole)>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                bus,
                state: Mutex::new(State {
                    pending: BTreeMap::new(),
                    deadlines: BTreeSet::new(),
                    resolved: BTreeMap::new(),
                    resolved_weight: 0,
                    watchers: HashMap::new(),
                    index: K::new_index(&ids),
                    calls: HashMap::new(),
                    sessions: SessionIndex::default(),
                    vote_waiters: HashMap::new(),
                }),
                timer_wakeup: Arc::new(Notify::new()),
                timer_started: AtomicBool::new(false),
                retain_resolved,
                storage: Storage::new(recorder),
                ids,
                quota: OnceLock::new(),
                withdrawals: Arc::new(Semaphore::new(WITHDRAWALS_RETRIED)),
                withdrawals_full_warned: Mutex::new(None),
                duties: OnceLock::new(),
            }),
        }
    }

    /// A registry recording in `store` in `role`, holding what the store holds: every
    /// pending request (pending again, with no asker in this process until its tool call
    /// asks again; expired ones time out at once) and the `retain_resolved` newest resolved
    /// ones. New ids continue above the stored ones.
    ///
    /// Over a shared store, read the change log's head *before* this, and apply the log
    /// from there: a change made meanwhile is then both loaded and applied, which
    /// [`apply`](Self::apply) makes harmless.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the store cannot be read or holds a record this kind cannot read.
    pub(crate) async fn restore(
        bus: Bus,
        retain_resolved: usize,
        ids: SharedIds,
        store: Arc<dyn Store>,
        role: StoreRole,
    ) -> Result<Self, StoreError> {
        let Loaded {
            pending,
            resolved,
            requests_ever,
        } = store.requests(K::RECORD_KIND, retain_resolved).await?;
        // Before any key is read back: every session continues above every key the store
        // ever saw, those of requests since forgotten included.
        ids.raise_key_floor(requests_ever);
        let newest = pending
            .iter()
            .chain(&resolved)
            .map(|stored| stored.request.id.as_str())
            .max()
            .map(record::parse_id::<K::IdPrefix>)
            .transpose()?;
        if let Some(newest) = newest {
            lock_ids(&ids).skip_past(newest.ulid());
        }
        let registry = Self::with_parts(
            bus,
            retain_resolved,
            ids,
            Some((Recorder::new(store), role)),
        );
        {
            let mut state = registry.inner.lock();
            let follow_ups = registry.inner.storage.follow_ups_of_restored();
            for stored in &pending {
                let (request, _) = record::read_back::<K>(stored)?;
                state.insert_recorded(request, record::stored_digest(&stored.request), follow_ups);
            }
            let mut by_ending: Vec<_> = resolved.iter().collect();
            by_ending.sort_by_key(|stored| {
                stored
                    .outcome
                    .as_ref()
                    .map(|outcome| outcome.resolved_at_ms)
            });
            for stored in by_ending {
                let ended = ending_at(
                    stored
                        .outcome
                        .as_ref()
                        .map_or(0, |outcome| outcome.resolved_at_ms),
                );
                let (request, outcome) = record::read_back::<K>(stored)?;
                let outcome = outcome.ok_or_else(|| {
                    StoreError::Corrupt(format!("request {} has no outcome", stored.request.id))
                })?;
                let decided_by = stored.outcome.as_ref().and_then(record::decided_by);
                K::remember(&mut state.index, &request);
                state.index_call(&request);
                state.resolved.insert(
                    K::id(&request),
                    Resolved {
                        request: Arc::new(request),
                        outcome,
                        decided_by,
                        weight: 0,
                        recording: None,
                        ended,
                    },
                );
            }
            if !state.deadlines.is_empty() {
                drop(state);
                registry.ensure_timer_driver();
            }
        }
        registry.recount_votes().await?;
        Ok(registry)
    }

    /// Counts again the votes cast on the pending requests that need a quorum, from their
    /// sessions' histories (where [`vote`](Self::vote) records each vote): a restarted
    /// instance, or one joining a shared store, knows the votes cast before it started,
    /// and a follower that missed part of the log ([`follow`](crate::follow)) the votes in
    /// it. Votes counted already count once. A request whose votes reached its quorum (the
    /// outcome was lost to a crash between the deciding vote and its outcome) ends now.
    pub(crate) async fn recount_votes(&self) -> Result<(), StoreError> {
        let Some(store) = self.store() else {
            return Ok(());
        };
        let mut sessions: BTreeMap<Arc<str>, Vec<Id<K::IdPrefix>>> = BTreeMap::new();
        for entry in self.inner.lock().pending.values() {
            if K::quorum(&entry.request) > 1 {
                let session = Arc::clone(K::session_id(&entry.request));
                sessions
                    .entry(session)
                    .or_default()
                    .push(K::id(&entry.request));
            }
        }
        for (session, ids) in sessions {
            let votes = read_votes::<K>(&**store, &session, &ids).await?;
            let mut settled = Vec::new();
            let mut state = self.inner.lock();
            for (id, vote) in votes {
                let Some(quorum) = state
                    .pending
                    .get(&id)
                    .map(|entry| K::quorum(&entry.request))
                else {
                    continue;
                };
                if let Some(Counted {
                    settled: Some((reply, by)),
                    ..
                }) = self.count(&mut state, id, vote, quorum, Announce::No)
                {
                    settled.push((id, reply, by));
                }
            }
            for (id, reply, by) in settled {
                self.settle_restored(&mut state, id, reply, by);
            }
        }
        Ok(())
    }

    /// Ends pending request `id` with the `reply` its restored votes reached.
    fn settle_restored(
        &self,
        state: &mut State<K>,
        id: Id<K::IdPrefix>,
        reply: K::Reply,
        by: Identity,
    ) {
        tracing::info!(
            "{} had the votes of its quorum but no outcome; ended now",
            K::request_id(id)
        );
        let outcome = Outcome::Replied(reply);
        if let Some(store) = self.inner.deciding_store() {
            if let Some(request) = state
                .pending
                .get(&id)
                .map(|entry| Arc::clone(&entry.request))
            {
                let proposal =
                    self.propose(store, state, &request, outcome.clone(), Some(by.clone()));
                self.settle_in_background(id, outcome, by, proposal);
            }
        } else if let Some(delivery) = self.inner.finish(state, id, outcome, Some(by)) {
            delivery.send().in_background();
        }
    }

    pub(crate) fn bus(&self) -> &Bus {
        &self.inner.bus
    }

    /// The store this registry records in, if any.
    pub(crate) fn store(&self) -> Option<&Arc<dyn Store>> {
        self.inner
            .storage
            .recorder()
            .map(|recorder| &recorder.store)
    }

    /// Whether other instances share this registry's store (and decide through it).
    pub(crate) fn is_shared(&self) -> bool {
        self.inner.storage.deciding().is_some()
    }

    /// Appends `draft` (the receipt of a decision that ends no request: a grant revoked)
    /// to the store's audit log; done at once without a store, which keeps no log.
    pub(crate) fn record_audit(&self, draft: impl FnOnce() -> AuditDraft) -> Durable {
        match self.inner.storage.recorder() {
            Some(recorder) => Durable::waiting(Some(recorder.audit(&draft()))),
            None => Durable::done(),
        }
    }

    /// A handle that does not keep this registry alive.
    pub(crate) fn downgrade(&self) -> WeakRegistry<K> {
        WeakRegistry {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// How many resolved requests this registry remembers.
    pub(crate) fn retain_resolved(&self) -> usize {
        self.inner.retain_resolved
    }

    /// The ids of every pending request, ascending.
    pub(crate) fn pending_ids(&self) -> Vec<Id<K::IdPrefix>> {
        self.inner.lock().pending.keys().copied().collect()
    }

    /// Registers a request built from its new id (and the kind's index, which `build` may
    /// update) and publishes its `asked` event.
    ///
    /// When `call` names a tool call that already asked in this session and whose request
    /// is pending or remembered, nothing is registered: the ticket joins that request (it
    /// becomes the asker if the request has none, as after a restart; otherwise it only
    /// watches), or carries its outcome at once. It joins **only if that request
    /// [`asks`](RequestType::asks) `content`** (the same questions, the same calls with the same
    /// arguments) **and `asker` asked it**: its outcome was decided by a human who saw that
    /// content asked by that asker, never this.
    /// Otherwise nothing changes and the earlier request's id is the error
    /// ([`Refused::CallReused`]). This is the one place the rule is kept, so every way in
    /// (the services, HTTP, MCP, the tools, the guard) passes it.
    ///
    /// A new request (not a join) takes a slot of the quota, if one is installed, charged
    /// to `charge`; when a limit would be passed nothing changes and the limit is the error
    /// ([`Refused::OverQuota`]). Checked here for the same reason, before the request gets
    /// an id, so a refusal leaves no trace.
    ///
    /// `asker` must be allowed to ask ([`Duties::check_ask`]; [`Refused::NotAllowed`]
    /// otherwise, before anything else), and `build` must record it as the request's
    /// [`asked_by`](RequestType::asked_by).
    ///
    /// `build` runs under the registry lock, so it must be cheap and must not call back
    /// into the registry.
    pub(crate) fn register(
        &self,
        asker: &Identity,
        call: Option<CallKey>,
        mut charge: Charge,
        content: K::Content,
        build: impl FnOnce(Id<K::IdPrefix>, &mut K::Index, K::Content) -> K::Request,
        timers: Timers,
    ) -> Result<Ticket<K>, Refused<Id<K::IdPrefix>>> {
        self.duties()
            .check_ask(asker)
            .map_err(Refused::NotAllowed)?;
        if timers.deadline.is_some() || timers.remind.is_some() || timers.escalate.is_some() {
            self.ensure_timer_driver();
        }
        // Measured outside the lock (it writes the content's JSON), and only for a quota.
        let weight = self.inner.quota.get().map(|quota| {
            let limit = quota.limits().values_per_request;
            let weight = K::content_weight(&content);
            (weight.values <= limit)
                .then_some(weight)
                .ok_or(Refused::TooLarge {
                    values: weight.values,
                    limit,
                })
        });
        let weight = weight.transpose()?;
        let (sender, receiver) = oneshot::channel();
        let mut guard = self.inner.lock();
        let state = &mut *guard;
        // An earlier request whose outcome the store could not record is not joined: the
        // call asks anew (nobody acted on that answer, and the store holds it pending).
        let earlier = call
            .as_ref()
            .and_then(|key| state.calls.get(key))
            .copied()
            .filter(|id| !state.resolved.get(id).is_some_and(Resolved::unrecorded));
        if let Some(id) = earlier {
            let asked = state.pending.get(&id).map_or_else(
                // `calls` covers exactly the pending and remembered requests.
                || {
                    &state
                        .resolved
                        .get(&id)
                        .expect("a called request is known")
                        .request
                },
                |entry| &entry.request,
            );
            // Another credential's call (by name), though the same, is not the one decided:
            // an agent must not take the approval of a call it did not make. (A request
            // recorded before askers were names none, and is joined on its content.)
            if !K::asks(asked, &content)
                || K::asked_by(asked).is_some_and(|earlier| earlier.name != asker.name)
            {
                return Err(Refused::CallReused(id));
            }
            let (request, owns) = match state.pending.get_mut(&id) {
                Some(entry) => {
                    // A detached asker's receiver is gone: the joiner takes its place.
                    let owns = entry.asker.as_ref().is_none_or(oneshot::Sender::is_closed);
                    let request = Arc::clone(&entry.request);
                    if owns {
                        entry.asker = Some(sender);
                    } else {
                        state.watch(id, sender);
                    }
                    (request, owns)
                }
                None => {
                    // `calls` covers exactly the pending and remembered requests.
                    let resolved = state.resolved.get(&id).expect("a called request is known");
                    resolved.hand_to(sender);
                    (Arc::clone(&resolved.request), false)
                }
            };
            drop(guard);
            return Ok(Ticket {
                request,
                outcome: receiver,
                registry: self.clone(),
                settled: false,
                owns,
                recorded: None,
            });
        }
        if let Some(quota) = self.inner.quota.get() {
            charge.weight = weight.map_or(0, Weight::bytes);
            quota.admit(&charge).map_err(Refused::OverQuota)?;
        }
        let id = lock_ids(&self.inner.ids).next_id();
        let request = Arc::new(build(id, &mut state.index, content));
        let steps = [
            (timers.deadline, Due::Expire),
            (timers.remind, Due::Remind),
            (timers.escalate, Due::Escalate),
        ];
        for (at, due) in steps {
            if let Some(at) = at
                && state.add_due(at, id, due)
            {
                self.inner.timer_wakeup.notify_one();
            }
        }
        // Over a shared store the `asked` event waits for the insert's change (see `apply`).
        let announced = self.inner.deciding_store().is_none();
        state
            .sessions
            .insert(K::session_id(&request), id, announced);
        // Queued before the `asked` event, so the record never announces an unknown request.
        let (recorded, digest) = match self.inner.storage.recorder() {
            Some(recorder) => {
                let (ack, digest) = recorder.insert::<K>(&request);
                (Some(Durable::waiting(Some(ack))), Some(digest))
            }
            None => (None, None),
        };
        state.pending.insert(
            id,
            Pending {
                request: Arc::clone(&request),
                asker: Some(sender),
                deadline: timers.deadline,
                escalate_at: timers.escalate,
                remind_at: timers.remind,
                announced,
                account: charge.account,
                weight: charge.weight,
                digest,
                votes: Vec::new(),
                asked_in: if announced {
                    None
                } else {
                    askbus_bus::current_request_id()
                },
                proposed_in: None,
            },
        );
        state.index_call(&request);
        if announced {
            K::announce_asked(&mut &self.inner.bus, &request);
        }
        drop(guard);
        Ok(Ticket {
            request,
            outcome: receiver,
            registry: self.clone(),
            settled: false,
            owns: true,
            recorded,
        })
    }

    /// Resolves a pending request with the outcome `decide` returns for it, decided `by`
    /// an identity (`None`: the request's own asker going away, which decides nothing).
    ///
    /// A decision ([`Outcome::is_decision`]: replied, rejected) must be one `by` may make
    /// of this request ([`Duties::check_decide`]: never an agent's, never the asker's
    /// while the policy says so); otherwise nothing changes and
    /// [`ResolveError::NotAllowed`] says why. This is the one place that rule is kept:
    /// every answer, from any entry, comes here. A cancel is no decision: the routes that
    /// let a caller cancel check its session.
    ///
    /// `decide` runs under the registry lock (it validates an answer against the request);
    /// it must not call back into the registry.
    pub(crate) fn resolve<E>(
        &self,
        id: Id<K::IdPrefix>,
        by: Option<&Identity>,
        decide: impl FnOnce(&K::Request) -> Result<OutcomeOf<K>, E>,
    ) -> Result<Durable, ResolveError<E>> {
        let mut state = self.inner.lock();
        let Some(entry) = state.pending.get(&id) else {
            return Err(match state.resolved.get(&id) {
                Some(resolved) => ResolveError::AlreadyResolved(resolved.outcome.kind()),
                None => ResolveError::NotFound,
            });
        };
        let outcome = decide(&entry.request).map_err(ResolveError::Refused)?;
        if let Some(by) = by
            && outcome.is_decision()
        {
            self.check_decider(entry, by, stops::<K>(&outcome))
                .map_err(ResolveError::NotAllowed)?;
        }
        let quorum = K::quorum(&entry.request);
        if quorum > 1
            && let Outcome::Replied(reply) = outcome
        {
            let vote = Vote {
                by: by.cloned().unwrap_or_default(),
                reply,
                id: lock_ids(&self.inner.ids).next_id(),
            };
            return Ok(self.vote(state, id, vote, quorum));
        }
        let by = by.cloned();
        if let Some(store) = self.inner.deciding_store() {
            let request = Arc::clone(&entry.request);
            return Ok(self.propose(store, &mut state, &request, outcome, by));
        }
        let delivery = self.inner.finish(&mut state, id, outcome, by);
        drop(state);
        Ok(delivery.map_or_else(Durable::done, Delivery::send))
    }

    /// Whether `by` may decide the pending request `entry`: its role and the hub's duties
    /// ([`Duties::check_decide`]), the deciders the request names, and (under a quorum)
    /// one vote each. The one check every decision passes, whichever way it came.
    ///
    /// A decision that `stops` the request (runs nothing: a veto, a rejection, a session
    /// rejected) needs only the first: the named deciders and the quorum restrain what may
    /// *run*, and any reviewer may always stop what none alone may run, even after voting
    /// for it.
    fn check_decider(
        &self,
        entry: &Pending<K>,
        by: &Identity,
        stops: bool,
    ) -> Result<(), NotAllowed> {
        self.duties()
            .check_decide(by, K::asked_by(&entry.request))?;
        if stops {
            return Ok(());
        }
        // From its escalation on, a request's `escalate_to` may decide it as well: by the
        // clock, so every instance agrees whether or not the event was fired (see the
        // `follow_up` module).
        let escalated_to = entry.escalate_at.is_some_and(|at| at <= Instant::now())
            && K::escalates_to(&entry.request, by);
        if !K::names_decider(&entry.request, by) && !escalated_to {
            return Err(NotAllowed::NotNamed(by.clone()));
        }
        if entry.votes.iter().any(|vote| vote.by.name == by.name) {
            return Err(NotAllowed::AlreadyDecided(by.clone()));
        }
        Ok(())
    }

    /// Casts `vote` on pending request `id`, which needs `quorum` votes alike.
    ///
    /// Over a shared store the vote is only written: every instance, this one included,
    /// counts it when it reads it in the store's log ([`apply_vote`](Self::apply_vote)),
    /// so all count the same votes in the same order, and one of them proposes the outcome
    /// the quorum reached (the store takes one proposal). Otherwise it is counted here, and
    /// recorded in the session's history; the vote that reaches the quorum (or vetoes)
    /// ends the request at once.
    fn vote(
        &self,
        mut state: MutexGuard<'_, State<K>>,
        id: Id<K::IdPrefix>,
        vote: Vote<K::Reply>,
        quorum: u32,
    ) -> Durable {
        if let Some(store) = self.inner.deciding_store() {
            let Some(record) = state.pending.get(&id).and_then(|entry| {
                K::vote_record(&entry.request, &vote, agreeing::<K>(&entry.votes, &vote))
            }) else {
                return Durable::done();
            };
            // Whether it counted is known once the log brings it back (another vote of the
            // same reviewer, cast through another instance, may come first).
            let cast = (id, vote.id);
            let (sender, fate) = oneshot::channel();
            state.vote_waiters.insert(cast, sender);
            let written = store.event(record);
            drop(state);
            let registry = self.clone();
            return Durable::decided(async move {
                if let Err(error) = written.await {
                    registry.inner.lock().vote_waiters.remove(&cast);
                    return Err(error.into());
                }
                // Known once this instance's follower applied the vote (see the `storage`
                // module).
                match tokio::time::timeout(APPLIED_LIMIT, fate).await {
                    Ok(Ok(fate)) => fate,
                    // Not read back (the follower stopped, or is late): it is in the log, so
                    // it counts unless the same reviewer's other vote came first.
                    Ok(Err(_)) | Err(_) => {
                        registry.inner.lock().vote_waiters.remove(&cast);
                        Ok(())
                    }
                }
            });
        }
        let Some(counted) = self.count(&mut state, id, vote, quorum, Announce::Yes) else {
            return Durable::done();
        };
        let recorded = counted
            .record
            .and_then(|record| self.inner.storage.record_vote(record));
        let Some((reply, by)) = counted.settled else {
            return Durable::waiting(recorded);
        };
        // Queued after the vote's record: the outcome's acknowledgement covers both.
        let delivery = self
            .inner
            .finish(&mut state, id, Outcome::Replied(reply), Some(by));
        drop(state);
        delivery.map_or_else(Durable::done, Delivery::send)
    }

    /// Counts `vote` on pending request `id` and announces it: `None` if the request is
    /// not pending or its voter has voted already (a vote raced through two instances).
    /// Says what to record, and the reply that ends the request and who cast the deciding
    /// vote, once the votes alike reach `quorum` or the vote vetoes.
    fn count(
        &self,
        state: &mut State<K>,
        id: Id<K::IdPrefix>,
        vote: Vote<K::Reply>,
        quorum: u32,
        announce: Announce,
    ) -> Option<Counted<K>> {
        let entry = state.pending.get_mut(&id)?;
        let vetoes = K::vetoes(&vote.reply);
        // One vote each for what runs; a veto stops the request whoever voted before.
        if !vetoes && entry.votes.iter().any(|cast| cast.by.name == vote.by.name) {
            return None;
        }
        let agreeing = agreeing::<K>(&entry.votes, &vote);
        let record = K::vote_record(&entry.request, &vote, agreeing);
        if entry.announced && announce == Announce::Yes {
            K::publish_vote(&self.inner.bus, &entry.request, &vote, agreeing);
        }
        let voter = vote.by.clone();
        entry.votes.push(vote);
        let deciding = if vetoes {
            entry.votes.last()
        } else if agreeing >= quorum {
            // The earliest of the votes alike: its messages and text are the outcome's.
            entry
                .votes
                .iter()
                .find(|cast| K::agree(&cast.reply, &entry.votes[entry.votes.len() - 1].reply))
        } else {
            None
        };
        let settled = deciding.map(|deciding| (K::settle(&deciding.reply, &entry.votes), voter));
        Some(Counted { record, settled })
    }

    /// Counts a vote some instance wrote to the shared store, as its log tells it (see
    /// [`vote`](Self::vote)); proposes the outcome when it reaches the quorum. A vote on a
    /// request not pending here, or a second vote of one voter, changes nothing.
    ///
    /// # Errors
    ///
    /// [`StoreError::Corrupt`] for an event that is no vote of this kind.
    pub(crate) fn apply_vote(&self, event: &SessionEvent) -> Result<(), StoreError> {
        let (id, vote) = K::read_vote(event)
            .ok_or_else(|| StoreError::Corrupt(format!("not a vote: {}", event.properties)))?;
        let mut state = self.inner.lock();
        let waiter = state.vote_waiters.remove(&(id, vote.id));
        let Some(quorum) = state
            .pending
            .get(&id)
            .map(|entry| K::quorum(&entry.request))
        else {
            if let Some(waiter) = waiter {
                let _ = waiter.send(Err(DurableError::AlreadyResolved {
                    request: K::request_id(id),
                    outcome: state.outcome_kind(id),
                }));
            }
            return Ok(());
        };
        let voter = vote.by.clone();
        let counted = self.count(&mut state, id, vote, quorum, Announce::Yes);
        if let Some(waiter) = waiter {
            let _ = waiter.send(match counted {
                Some(_) => Ok(()),
                None => Err(DurableError::NotCounted(NotAllowed::AlreadyDecided(voter))),
            });
        }
        let Some(Counted {
            settled: Some((reply, by)),
            ..
        }) = counted
        else {
            return Ok(());
        };
        if let Some(store) = self.inner.deciding_store()
            && let Some(request) = state
                .pending
                .get(&id)
                .map(|entry| Arc::clone(&entry.request))
        {
            let outcome = Outcome::Replied(reply);
            let proposal = self.propose(
                store,
                &mut state,
                &request,
                outcome.clone(),
                Some(by.clone()),
            );
            drop(state);
            self.settle_in_background(id, outcome, by, proposal);
        }
        Ok(())
    }

    /// Sees the outcome a quorum reached through to the store: a proposal the store could
    /// not take (it is down) is proposed again, one [`EXPIRY_RETRY`] apart, while the
    /// request is pending here; the votes decided it, and nothing else would (a restart's
    /// recount aside). Every instance does this; the store takes one.
    fn settle_in_background(
        &self,
        id: Id<K::IdPrefix>,
        outcome: OutcomeOf<K>,
        by: Identity,
        proposal: Durable,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return proposal.in_background();
        };
        let registry = self.clone();
        runtime.spawn(async move {
            let mut proposal = proposal;
            for _ in 0..STORE_ATTEMPTS {
                let Err(DurableError::Store(error)) = proposal.await else {
                    return;
                };
                tracing::warn!(
                    "the quorum's outcome of {} could not be recorded, trying again: {error}",
                    K::request_id(id)
                );
                tokio::time::sleep(EXPIRY_RETRY).await;
                let mut state = registry.inner.lock();
                let (Some(store), Some(request)) = (
                    registry.inner.deciding_store(),
                    state.pending.get(&id).map(|entry| Arc::clone(&entry.request)),
                ) else {
                    return;
                };
                proposal = registry.propose(store, &mut state, &request, outcome.clone(), Some(by.clone()));
            }
            tracing::error!(
                "the quorum's outcome of {} was not recorded after {STORE_ATTEMPTS} attempts; it stays pending until it times out or the instances restart",
                K::request_id(id)
            );
        });
    }

    /// Proposes `outcome` for pending request `id` to the shared store, which decides; see
    /// the module docs. The returned [`Durable`] completes once the store took it and this
    /// instance's follower applied it (see the `storage` module).
    fn propose(
        &self,
        store: &Recorder,
        state: &mut State<K>,
        request: &Arc<K::Request>,
        outcome: OutcomeOf<K>,
        by: Option<Identity>,
    ) -> Durable {
        let id = K::id(request);
        let digest = match state.pending.get_mut(&id) {
            Some(entry) => {
                if let Some(cause) = askbus_bus::current_request_id() {
                    entry.proposed_in = Some((by.clone(), outcome.kind(), cause));
                }
                entry.digest
            }
            None => None,
        };
        let verdict = store.resolve::<K>(request, digest, &outcome, by.as_ref());
        // Told once this instance applies the request's outcome, whichever the store took:
        // no round trip to the store, and no position to compare.
        let (sender, applied) = oneshot::channel();
        state.watch(id, sender);
        let registry = self.clone();
        Durable::decided(async move {
            match verdict.await? {
                Written::Resolved => {
                    // Durable now; waiting for this instance to apply it makes its own
                    // reads (a `get` right after the reply) see it.
                    let _ = tokio::time::timeout(APPLIED_LIMIT, applied).await;
                    Ok(())
                }
                Written::AlreadyResolved(state) => Err(DurableError::AlreadyResolved {
                    request: K::request_id(id),
                    outcome: record::outcome_kind(state),
                }),
                Written::NotFound => match registry.end_orphan(id, outcome, by)? {
                    Ended::Now => Ok(()),
                    // Withdrawn meanwhile (its insert failed), or ended otherwise: this
                    // outcome was not taken.
                    Ended::Before(outcome) => Err(DurableError::AlreadyResolved {
                        request: K::request_id(id),
                        outcome,
                    }),
                },
                other @ (Written::Inserted | Written::Appended) => Err(StoreError::Corrupt(
                    format!("the store answered a resolution with {other:?}"),
                )
                .into()),
            }
        })
    }

    /// Ends a request the shared store does not know (see the module docs): nothing but
    /// this registry can. Says whether it ended it now, or how it had ended before.
    ///
    /// # Errors
    ///
    /// A decision (not a timeout) on a request this instance does not hold the asker of:
    /// ended here, it would reach this instance's waiters and nobody else, while its asker,
    /// on the instance it was asked on, went on waiting for another outcome. The request
    /// stays pending; the instance it was asked on can end it, and every instance's timer
    /// ends it alike.
    fn end_orphan(
        &self,
        id: Id<K::IdPrefix>,
        outcome: OutcomeOf<K>,
        by: Option<Identity>,
    ) -> Result<Ended, DurableError> {
        let mut state = self.inner.lock();
        if let Some(entry) = state.pending.get(&id)
            && entry.asker.is_none()
            && !matches!(outcome, Outcome::TimedOut | Outcome::Defaulted(_))
        {
            drop(state);
            tracing::warn!(
                "{} is unknown to the shared store and was asked through another instance: only that one can decide it",
                K::request_id(id)
            );
            return Err(DurableError::NotHere {
                request: K::request_id(id),
            });
        }
        let Some(delivery) = self.inner.finish(&mut state, id, outcome, by) else {
            return Ok(Ended::Before(state.outcome_kind(id)));
        };
        drop(state);
        tracing::warn!(
            "{} is unknown to the shared store; ended here, where it was asked",
            K::request_id(id)
        );
        delivery.send().in_background();
        Ok(Ended::Now)
    }

    /// Ends request `id` as cancelled because the store did not record it (its insert
    /// failed: the store is down), unless it has ended already; says which. Its asker is
    /// told instead of waiting for good: over a shared store nobody else can see the
    /// request, so nobody could answer it; over a store that records (SQLite) it was
    /// announced, but an answer to it could not be recorded either, so its `cancelled`
    /// event follows. In case the insert took effect after all (its answer lost on the
    /// way), the cancellation is also proposed to a shared store, for a while, so the
    /// other instances end it too.
    fn withdraw(&self, id: Id<K::IdPrefix>) -> Ended {
        let mut state = self.inner.lock();
        let Some(request) = state
            .pending
            .get(&id)
            .map(|entry| Arc::clone(&entry.request))
        else {
            return Ended::Before(state.outcome_kind(id));
        };
        // The store holds no row to end (its insert failed), so the cancellation's record
        // fails too: its `cancelled` event stands all the same, with no `*.not_recorded`.
        let delivery = self
            .inner
            .finish(&mut state, id, Outcome::Cancelled, None)
            .map(|delivery| Delivery {
                announced_on: None,
                ..delivery
            });
        drop(state);
        tracing::warn!(
            "{} could not be recorded in the store; cancelled",
            K::request_id(id)
        );
        if let Some(delivery) = delivery {
            delivery.send().in_background();
        }
        if let Some(store) = self.inner.deciding_store()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let store = Arc::clone(&store.store);
            let room = Arc::clone(&self.inner.withdrawals).try_acquire_owned().ok();
            // Once a minute at most: past the room, every create of an outage comes here.
            let now = tokio::time::Instant::now();
            let mut warned = self
                .inner
                .withdrawals_full_warned
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if room.is_none() && warned.is_none_or(|at| now >= at + FULL_WARNING_EVERY) {
                *warned = Some(now);
                tracing::error!(
                    "{WITHDRAWALS_RETRIED} withdrawn requests' cancellations are being retried already; the next ones are proposed once: other instances may show them pending until they time out"
                );
            }
            drop(warned);
            runtime.spawn(async move {
                let recorder = Recorder::new(store);
                let attempts = if room.is_some() { STORE_ATTEMPTS } else { 1 };
                for attempt in 1..=attempts {
                    // Taken, refused as already ended, or "not found": all final.
                    if recorder
                        .resolve::<K>(&request, None, &Outcome::Cancelled, None)
                        .await
                        .is_ok()
                    {
                        return;
                    }
                    if attempt < attempts {
                        tokio::time::sleep(EXPIRY_RETRY).await;
                    }
                }
                if room.is_some() {
                    tracing::error!(
                        "the cancellation of {} was not recorded after {attempts} attempts; other instances may still show it pending",
                        K::request_id(id)
                    );
                }
                drop(room);
            });
        }
        Ended::Now
    }

    /// Applies one change of the shared store's change log: a request inserted (by any
    /// instance) becomes pending here and its `asked` event is published, once; an outcome
    /// the store took ends the request here, delivering it to the asker and the watchers
    /// and publishing its event. Applying a change that is already reflected (a request
    /// loaded at start and logged after the log's head was read) changes nothing and
    /// publishes nothing.
    ///
    /// # Errors
    ///
    /// [`StoreError::Corrupt`] for a change this kind cannot read (or that the store could
    /// not read back); nothing is applied.
    pub(crate) fn apply(&self, change: &ChangeKind) -> Result<(), StoreError> {
        match change {
            ChangeKind::Unreadable(why) => return Err(StoreError::Corrupt(why.clone())),
            // Not a request's: the follower passes it on (see the `follow` module).
            ChangeKind::Event(_) => return Err(StoreError::Corrupt(format!("{change:?}"))),
            ChangeKind::Inserted(record) => {
                let id = record::parse_id::<K::IdPrefix>(&record.id)?;
                // A request known here (most often: registered here) needs no reading, and
                // the reading of one that does is done outside the lock.
                let known = {
                    let state = self.inner.lock();
                    state.pending.contains_key(&id) || state.resolved.contains_key(&id)
                };
                let mut unknown = match known {
                    true => None,
                    false => Some(record::request_from::<K>(record)?),
                };
                let mut state = self.inner.lock();
                let known_resolved = state.resolved.contains_key(&id);
                let mut asked_in = None;
                let announce = match state.pending.get_mut(&id) {
                    // Registered here: its insert came back.
                    Some(entry) if !entry.announced => {
                        entry.announced = true;
                        asked_in = entry.asked_in.take();
                        let request = Arc::clone(&entry.request);
                        state.sessions.announce(K::session_id(&request));
                        Some(request)
                    }
                    Some(_) => None,
                    None if known_resolved => None,
                    None => {
                        let Some(request) = unknown.take() else {
                            // Known a moment ago, ended since (an orphan): nothing to add.
                            return Ok(());
                        };
                        let request = state.insert_recorded(
                            request,
                            record::stored_digest(record),
                            FollowUps::Elsewhere,
                        );
                        // Another instance's request: it exists, so it counts, unrefused.
                        if let Some(quota) = self.inner.quota.get() {
                            let weight = K::weight(&request).bytes();
                            if let Some(entry) = state.pending.get_mut(&id) {
                                entry.weight = weight;
                            }
                            quota.count(K::session_id(&request), weight);
                        }
                        if let Some(at) = state.pending.get(&id).and_then(|entry| entry.deadline)
                            && state.deadlines.first() == Some(&(at, id, Due::Expire))
                        {
                            self.inner.timer_wakeup.notify_one();
                        }
                        Some(request)
                    }
                };
                if let Some(request) = announce {
                    askbus_bus::with_request_id_now(asked_in, || {
                        K::announce_asked(&mut &self.inner.bus, &request);
                    });
                    if K::expires_at(&request).is_some() {
                        drop(state);
                        self.ensure_timer_driver();
                    }
                }
            }
            ChangeKind::Resolved { id, outcome, .. } => {
                let decided_by = record::decided_by(outcome);
                let outcome = record::outcome_from::<K>(id, outcome)?;
                let id = record::parse_id::<K::IdPrefix>(id)?;
                let mut state = self.inner.lock();
                // Proposed here, this outcome by this decider: the event names the request
                // that proposed it.
                let proposed_in = state
                    .pending
                    .get_mut(&id)
                    .and_then(|entry| entry.proposed_in.take())
                    .filter(|(by, kind, _)| *by == decided_by && *kind == outcome.kind())
                    .map(|(_, _, cause)| cause);
                let delivery = askbus_bus::with_request_id_now(proposed_in, || {
                    self.inner.finish(&mut state, id, outcome, decided_by)
                });
                drop(state);
                if let Some(delivery) = delivery {
                    delivery.send().in_background();
                }
            }
        }
        Ok(())
    }

    /// Cancels every pending request of `session_id`, `by` whoever asks it to; returns how
    /// many there were.
    pub(crate) fn cancel_session(&self, session_id: &str, by: &Identity) -> usize {
        let cancelled = self
            .resolve_session(session_id, by, |_| Outcome::Cancelled)
            .unwrap_or_default();
        let count = cancelled.len();
        // Cancelling is not acknowledged to anyone: nothing waits for the record.
        cancelled
            .into_iter()
            .for_each(|(_, durable)| durable.in_background());
        count
    }

    /// Resolves every pending request of `session_id` with the outcome `decide` gives it,
    /// `by` one identity, all under one lock acquisition (as [`resolve`](Self::resolve)
    /// each: over a shared store, proposed). Returns each outcome's kind with what
    /// completes once it is durable (or fails, over a shared store, if another outcome
    /// won).
    ///
    /// # Errors
    ///
    /// [`NotAllowed`] when `by` may not make one of the decisions (see
    /// [`resolve`](Self::resolve)): then nothing changes, for any request of the session.
    ///
    /// `decide` runs under the registry lock; it must not call back into the registry.
    pub(crate) fn resolve_session(
        &self,
        session_id: &str,
        by: &Identity,
        mut decide: impl FnMut(&K::Request) -> OutcomeOf<K>,
    ) -> Result<Vec<(OutcomeKind, Durable)>, NotAllowed> {
        let mut state = self.inner.lock();
        let decided = state
            .sessions
            .ids(session_id, Bound::Unbounded)
            .filter_map(|id| state.pending.get(&id))
            .map(|entry| {
                let mut outcome = decide(&entry.request);
                if outcome.is_decision() {
                    self.check_decider(entry, by, stops::<K>(&outcome))?;
                }
                // Under a quorum the refusal is this reviewer's vote, the last of those the
                // outcome lists.
                if K::quorum(&entry.request) > 1
                    && let Outcome::Replied(reply) = &outcome
                {
                    let mut votes = entry.votes.clone();
                    votes.push(Vote {
                        id: lock_ids(&self.inner.ids).next_id(),
                        by: by.clone(),
                        reply: reply.clone(),
                    });
                    outcome = Outcome::Replied(K::settle(reply, &votes));
                }
                Ok((Arc::clone(&entry.request), outcome))
            })
            .collect::<Result<Vec<_>, NotAllowed>>()?;
        let mut resolved = Vec::with_capacity(decided.len());
        let mut deliveries = Vec::new();
        for (request, outcome) in decided {
            let kind = outcome.kind();
            let by = Some(by.clone());
            match self.inner.deciding_store() {
                Some(store) => {
                    resolved.push((kind, self.propose(store, &mut state, &request, outcome, by)));
                }
                None => deliveries.extend(
                    self.inner
                        .finish(&mut state, K::id(&request), outcome, by)
                        .map(|delivery| (kind, delivery)),
                ),
            }
        }
        drop(state);
        resolved.extend(
            deliveries
                .into_iter()
                .map(|(kind, delivery)| (kind, delivery.send())),
        );
        Ok(resolved)
    }

    /// Whether `by` may decide every pending request of `session_id` (see
    /// [`resolve`](Self::resolve)), so that a caller refusing a whole session across both
    /// kinds can learn it before changing either.
    ///
    /// # Errors
    ///
    /// The first refusal.
    pub(crate) fn may_decide_session(
        &self,
        session_id: &str,
        by: &Identity,
    ) -> Result<(), NotAllowed> {
        let state = self.inner.lock();
        state
            .sessions
            .ids(session_id, Bound::Unbounded)
            .filter_map(|id| state.pending.get(&id))
            .try_for_each(|entry| self.check_decider(entry, by, true))
    }

    /// The oldest pending request of `session_id`.
    pub(crate) fn oldest_pending(&self, session_id: &str) -> Option<Arc<K::Request>> {
        let state = self.inner.lock();
        let id = state.sessions.ids(session_id, Bound::Unbounded).next()?;
        state
            .pending
            .get(&id)
            .map(|entry| Arc::clone(&entry.request))
    }

    /// How many requests of `session_id` are pending.
    pub(crate) fn pending_count_in(&self, session_id: &str) -> usize {
        self.inner
            .lock()
            .sessions
            .ids(session_id, Bound::Unbounded)
            .count()
    }

    /// Of the requests of `session_id` created before `before` that the registry still
    /// remembers as resolved, the one that ended last, and how. Costs a scan of the
    /// remembered requests older than `before`.
    pub(crate) fn last_ended_before(
        &self,
        session_id: &str,
        before: Id<K::IdPrefix>,
    ) -> Option<(Id<K::IdPrefix>, HowEnded)> {
        let state = self.inner.lock();
        state
            .resolved
            .range(..before)
            .filter(|(_, resolved)| **K::session_id(&resolved.request) == *session_id)
            .max_by_key(|(_, resolved)| resolved.ended)
            .map(|(&id, resolved)| {
                let by_a_human = match &resolved.outcome {
                    Outcome::Replied(reply) => !K::granted(reply),
                    Outcome::Rejected { .. } => true,
                    Outcome::TimedOut | Outcome::Defaulted(_) => false,
                    Outcome::Cancelled => resolved.decided_by.as_ref().is_some_and(|by| {
                        K::asked_by(&resolved.request).is_none_or(|asker| asker.name != by.name)
                    }),
                };
                let ended = HowEnded {
                    at: resolved.ended,
                    kind: resolved.outcome.kind(),
                    by_a_human,
                };
                (id, ended)
            })
    }

    /// Whether any pending or remembered request belongs to `session_id`.
    pub(crate) fn knows_session(&self, session_id: &str) -> bool {
        let state = self.inner.lock();
        state
            .pending
            .values()
            .map(|entry| &entry.request)
            .chain(state.resolved.values().map(|resolved| &resolved.request))
            .any(|request| **K::session_id(request) == *session_id)
    }

    /// Runs `change` while holding this registry's lock: nothing is registered, resolved or
    /// applied meanwhile. For a change outside the registry that its resolutions read (a
    /// grant revoked), so that each resolution sees it wholly before or wholly after.
    pub(crate) fn exclusively<T>(&self, change: impl FnOnce() -> T) -> T {
        let _state = self.inner.lock();
        change()
    }

    /// Reads the kind's index under the registry lock.
    pub(crate) fn read_index<T>(&self, read: impl FnOnce(&K::Index) -> T) -> T {
        read(&self.inner.lock().index)
    }

    /// At most `limit` pending requests in ascending id order, optionally of one session
    /// only, with ids above `after` if given (any request id: the ids of a hub's kinds are
    /// one order). Costs `O(log n + limit)`.
    pub(crate) fn page(
        &self,
        session_id: Option<&str>,
        after: Option<RequestId>,
        limit: usize,
    ) -> Vec<Arc<K::Request>> {
        let after = after.map_or(Bound::Unbounded, |id| {
            Bound::Excluded(Id::from_ulid(match id {
                RequestId::Question(id) => id.ulid(),
                RequestId::Approval(id) => id.ulid(),
            }))
        });
        let state = self.inner.lock();
        let entries: Box<dyn Iterator<Item = &Pending<K>>> = match session_id {
            None => Box::new(
                state
                    .pending
                    .range((after, Bound::Unbounded))
                    .map(|(_, entry)| entry),
            ),
            Some(session) => Box::new(
                state
                    .sessions
                    .ids(session, after)
                    .filter_map(|id| state.pending.get(&id)),
            ),
        };
        entries
            .take(limit)
            .map(|entry| Arc::clone(&entry.request))
            .collect()
    }

    /// Every session with announced pending requests (see
    /// [`SessionIndex`](crate::session_index)) and how many, ascending by session id, with
    /// the bus's head at that moment: every event of this registry up to it is reflected in
    /// the counts, none after it. Costs `O(sessions)`.
    pub(crate) fn session_counts(&self) -> (Vec<(Arc<str>, usize)>, EventId) {
        let state = self.inner.lock();
        // Under the registry lock, under which this registry publishes (registry -> bus).
        let head = self.inner.bus.head();
        let counts = state
            .sessions
            .announced()
            .map(|(session, count)| (Arc::clone(session), count))
            .collect();
        (counts, head)
    }

    /// How many requests are pending.
    pub(crate) fn pending_count(&self) -> usize {
        self.inner.lock().pending.len()
    }

    /// One request, pending or remembered as resolved.
    pub(crate) fn get(
        &self,
        id: Id<K::IdPrefix>,
    ) -> Option<Snapshot<K::Request, K::Reply, K::Rejection>> {
        let state = self.inner.lock();
        if let Some(entry) = state.pending.get(&id) {
            return Some(Snapshot {
                request: Arc::clone(&entry.request),
                outcome: None,
                decided_by: None,
                votes: entry.votes.clone(),
            });
        }
        state.resolved.get(&id).map(|resolved| Snapshot {
            request: Arc::clone(&resolved.request),
            outcome: Some(resolved.outcome.clone()),
            decided_by: resolved.decided_by.clone(),
            votes: Vec::new(),
        })
    }

    /// Waits for a request's outcome without becoming its asker: dropping the wait does not
    /// cancel the request. `None` if the id is neither pending nor remembered.
    pub(crate) async fn wait(&self, id: Id<K::IdPrefix>) -> Option<Handed<K>> {
        let receiver = {
            let mut state = self.inner.lock();
            let (sender, receiver) = oneshot::channel();
            if state.pending.contains_key(&id) {
                state.watch(id, sender);
            } else {
                // Resolved, but perhaps not recorded yet: then wait for the store too, as
                // those waiting before did (an agent never resumes on an answer a crash
                // could still lose).
                state.resolved.get(&id)?.hand_to(sender);
            }
            receiver
        };
        // The sender is only dropped unsent when the registry itself is dropped.
        Some(receiver.await.unwrap_or(Ok(Outcome::Cancelled)))
    }

    /// How many waits of [`wait`](Self::wait) a pending request holds (live or not yet
    /// pruned).
    #[cfg(test)]
    pub(crate) fn watcher_count(&self, id: Id<K::IdPrefix>) -> usize {
        self.inner.lock().watchers.get(&id).map_or(0, Vec::len)
    }
}

impl<K: RequestType> Inner<K> {
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // Every mutation leaves the state consistent before the next statement, and nothing
        // that can panic runs under the lock, so a poisoned lock is still a sound one.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shared store that decides this registry's outcomes, if it has one.
    fn deciding_store(&self) -> Option<&Recorder> {
        self.storage.deciding()
    }

    /// Moves a pending request to resolved, decided `by` someone (if anyone), publishes its
    /// outcome and returns what must be delivered once the lock is released. `None` if it
    /// was not pending.
    fn finish(
        &self,
        state: &mut State<K>,
        id: Id<K::IdPrefix>,
        outcome: OutcomeOf<K>,
        by: Option<Identity>,
    ) -> Option<Delivery<K>> {
        let entry = state.pending.remove(&id)?;
        if let Some(quota) = self.quota.get() {
            quota.release(
                K::session_id(&entry.request),
                entry.account.as_ref(),
                entry.weight,
            );
        }
        state
            .sessions
            .remove(K::session_id(&entry.request), id, entry.announced);
        let steps = [
            (entry.deadline, Due::Expire),
            (entry.remind_at, Due::Remind),
            (entry.escalate_at, Due::Escalate),
        ];
        for (at, due) in steps {
            if let Some(at) = at {
                state.deadlines.remove(&(at, id, due));
            }
        }
        let watchers = if state.watchers.is_empty() {
            Vec::new()
        } else {
            state.watchers.remove(&id).unwrap_or_default()
        };
        // Queued before the event, as on registration. A shared store made this outcome
        // itself (it is applying the store's change log): nothing to write.
        let recorded =
            self.storage
                .record_outcome::<K>(&entry.request, entry.digest, &outcome, by.as_ref());
        // Until the store has it, the waiters (and those who come before it has) wait.
        let (watchers, recording) = match recorded {
            Some(_) => (
                Vec::new(),
                Some(Arc::new(Mutex::new(RecordingState::Awaited(watchers)))),
            ),
            None => (watchers, None),
        };
        // An orphan never announced ends without events: nobody saw it asked.
        if entry.announced {
            K::announce_outcome(&mut &self.bus, &entry.request, &outcome, by.as_ref());
        }
        let announced_on = (entry.announced && recorded.is_some())
            .then(|| (self.bus.clone(), Arc::clone(&entry.request)));
        if self.retain_resolved > 0 {
            // The oldest go first: past the count, and past a quarter of the quota's bytes.
            let bytes = self
                .quota
                .get()
                .map_or(usize::MAX, |quota| quota.limits().bytes / 4);
            state.resolved_weight += entry.weight;
            while state.resolved.len() >= self.retain_resolved
                || (state.resolved_weight > bytes && !state.resolved.is_empty())
            {
                let Some((_, forgotten)) = state.resolved.pop_first() else {
                    break;
                };
                state.resolved_weight -= forgotten.weight;
                state.forget(&forgotten.request);
            }
            state.resolved.insert(
                id,
                Resolved {
                    request: entry.request,
                    outcome: outcome.clone(),
                    decided_by: by,
                    weight: entry.weight,
                    recording: recording.clone(),
                    ended: ending_at(askbus_store::now_ms()),
                },
            );
        } else {
            state.forget(&entry.request);
        }
        Some(Delivery {
            asker: entry.asker,
            watchers,
            recording,
            outcome,
            recorded,
            announced_on,
        })
    }
}

/// The session history record of the event `notice` tells of.
fn session_event(notice: Notice) -> Option<SessionEvent> {
    Some(SessionEvent {
        session_id: notice.session_id?,
        event_type: notice.event_type,
        properties: serde_json::to_string(&notice.properties).ok()?,
    })
}

/// The longest a change of this instance's, once durable in a shared store, waits for this
/// instance's follower to apply it (see the `storage` module): longer than a follower's
/// reads take while the store answers, short enough that a reply accepted by a store that
/// then went away is answered as taken rather than timed out.
const APPLIED_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many times (one [`EXPIRY_RETRY`] apart) a change the registry must see through to a
/// shared store that cannot be reached is proposed: the cancellation of a withdrawn
/// request, the outcome a quorum reached.
const STORE_ATTEMPTS: usize = 300;

/// Whether a request was ended by the call that says so, or before it.
enum Ended {
    /// By this call.
    Now,
    /// Before, with this outcome.
    Before(OutcomeKind),
}

impl<K: RequestType> Drop for Inner<K> {
    fn drop(&mut self) {
        // Lets the timer driver notice that its registry is gone and exit.
        self.timer_wakeup.notify_one();
    }
}

impl<K: RequestType> Delivery<K> {
    /// Hands the outcome to the asker and the watchers, once the store has it (at once
    /// without a store), or the store's failure to record it; returns what completes once
    /// the outcome is durable. The store's answer is handed out even if nobody awaits the
    /// returned [`Durable`].
    fn send(self) -> Durable {
        let Self {
            asker,
            watchers,
            recording,
            outcome,
            recorded,
            announced_on,
        } = self;
        let Some(recorded) = recorded else {
            deliver::<K>(watchers, asker, Ok(outcome));
            return Durable::done();
        };
        Durable::delivering(recorded, move |written| {
            let refused = written.is_err().then(|| outcome.kind());
            let (handed, now) = match written {
                Ok(()) => (Ok(outcome), RecordingState::Recorded),
                Err(unrecorded) => (Err(unrecorded.clone()), RecordingState::Failed(unrecorded)),
            };
            let watchers = recording.map_or_else(Vec::new, |recording| {
                let mut recording = recording.lock().unwrap_or_else(PoisonError::into_inner);
                match std::mem::replace(&mut *recording, now) {
                    RecordingState::Awaited(watchers) => watchers,
                    RecordingState::Recorded | RecordingState::Failed(_) => Vec::new(),
                }
            });
            // Whoever saw the outcome's event learns it does not stand; once the request
            // reads as refused, so that a client acting on the event (its tool call asking
            // again) finds it so.
            if let (Some(kind), Some((bus, request))) = (refused, announced_on) {
                K::announce_not_recorded(&mut &bus, &request, kind);
            }
            deliver::<K>(watchers, asker, handed);
        })
    }
}

impl<K: RequestType> Resolved<K> {
    /// Hands the outcome to `sender` once the store has it: at once if it has (or there is
    /// no store), when it answers otherwise, and the store's failure if it could not record
    /// it. An agent never resumes on an answer a crash could still lose.
    fn hand_to(&self, sender: OutcomeSender<K>) {
        let handed = match &self.recording {
            None => Ok(self.outcome.clone()),
            Some(recording) => {
                match &mut *recording.lock().unwrap_or_else(PoisonError::into_inner) {
                    RecordingState::Awaited(waiters) => {
                        waiters.push(sender);
                        return;
                    }
                    RecordingState::Recorded => Ok(self.outcome.clone()),
                    RecordingState::Failed(unrecorded) => Err(unrecorded.clone()),
                }
            }
        };
        // Nobody waiting any more is not an error.
        let _ = sender.send(handed);
    }

    /// Whether the store could not record the outcome.
    fn unrecorded(&self) -> bool {
        self.recording.as_ref().is_some_and(|recording| {
            matches!(
                *recording.lock().unwrap_or_else(PoisonError::into_inner),
                RecordingState::Failed(_)
            )
        })
    }
}

/// Hands the outcome (or the store's failure to record it) to the watchers and the asker.
fn deliver<K: RequestType>(
    watchers: Vec<OutcomeSender<K>>,
    asker: Option<OutcomeSender<K>>,
    handed: Handed<K>,
) {
    for watcher in watchers {
        // A watcher that stopped waiting is not an error.
        let _ = watcher.send(handed.clone());
    }
    if let Some(asker) = asker {
        // Neither is an asker that detached or was dropped.
        let _ = asker.send(handed);
    }
}

impl<K: RequestType> State<K> {
    /// How request `id` ended, if this registry remembers; a request it does not (any
    /// more) counts as cancelled.
    fn outcome_kind(&self, id: Id<K::IdPrefix>) -> OutcomeKind {
        self.resolved
            .get(&id)
            .map_or(OutcomeKind::Cancelled, |resolved| resolved.outcome.kind())
    }

    /// Adds a waiter for pending request `id`'s outcome. Waits that ended unresolved (a
    /// long poll that ran out, a client that left, a joining retry dropped) leave closed
    /// senders behind; dropping them here keeps an often re-polled request's list as long
    /// as its live waits, not its history of polls.
    fn watch(&mut self, id: Id<K::IdPrefix>, sender: OutcomeSender<K>) {
        let watchers = self.watchers.entry(id).or_default();
        watchers.retain(|watcher| !watcher.is_closed());
        watchers.push(sender);
    }

    /// Adds a deadline or a follow-up step to the index; returns whether it is the new
    /// earliest (the timer must then wake up to sleep less).
    fn add_due(&mut self, at: Instant, id: Id<K::IdPrefix>, due: Due) -> bool {
        let is_new_earliest = self
            .deadlines
            .first()
            .is_none_or(|&(first, _, _)| at < first);
        self.deadlines.insert((at, id, due));
        is_new_earliest
    }

    /// Adds a request read from the store (at start, or from another instance through a
    /// shared store's change log) as pending, with no asker in this process, and indexes
    /// it. Its wall-clock expiry becomes a deadline on this process's clock; one already
    /// past is due at once. `digest` is that of the JSON it was read from
    /// ([`record::stored_digest`]), which its receipt will name. Its follow-ups still to
    /// come are indexed if they fire here.
    fn insert_recorded(
        &mut self,
        request: K::Request,
        digest: RequestDigest,
        follow_ups: FollowUps,
    ) -> Arc<K::Request> {
        let id = K::id(&request);
        let now_ms = askbus_store::now_ms();
        let on_this_clock = |at: u64| {
            let now = Instant::now();
            now.checked_add(std::time::Duration::from_millis(at.saturating_sub(now_ms)))
                .unwrap_or(now)
        };
        let deadline = K::expires_at(&request).map(on_this_clock);
        if let Some(at) = deadline {
            self.add_due(at, id, Due::Expire);
        }
        let (remind, escalate) = K::follow_up_at(&request);
        let escalate_at = escalate.map(on_this_clock);
        let mut remind_at = None;
        if follow_ups == FollowUps::Fire {
            if let Some(at) = remind.filter(|&at| at > now_ms).map(on_this_clock) {
                remind_at = Some(at);
                self.add_due(at, id, Due::Remind);
            }
            if let Some(at) = escalate_at.filter(|_| escalate.is_some_and(|at| at > now_ms)) {
                self.add_due(at, id, Due::Escalate);
            }
        }
        K::remember(&mut self.index, &request);
        self.index_call(&request);
        self.sessions.insert(K::session_id(&request), id, true);
        let request = Arc::new(request);
        self.pending.insert(
            id,
            Pending {
                request: Arc::clone(&request),
                asker: None,
                deadline,
                escalate_at,
                remind_at,
                announced: true,
                account: None,
                weight: 0,
                digest: Some(digest),
                votes: Vec::new(),
                asked_in: None,
                proposed_in: None,
            },
        );
        request
    }

    /// Indexes `request` under its tool call, if it has one.
    fn index_call(&mut self, request: &K::Request) {
        if let Some(call_id) = K::call_id(request) {
            let session = Arc::clone(K::session_id(request));
            self.calls
                .insert((session, call_id.to_owned()), K::id(request));
        }
    }

    /// Drops every lookup of `request`, which the registry no longer remembers.
    fn forget(&mut self, request: &K::Request) {
        K::forget(&mut self.index, request);
        if let Some(call_id) = K::call_id(request) {
            let key: CallKey = (Arc::clone(K::session_id(request)), call_id.to_owned());
            // Only if the call still points here (a later request may have taken it over):
            // put back otherwise, one lookup in the usual case.
            if let Some((key, holder)) = self.calls.remove_entry(&key)
                && holder != K::id(request)
            {
                self.calls.insert(key, holder);
            }
        }
    }
}
