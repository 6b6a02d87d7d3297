//! One handle on both kinds of request: what an HTTP server or a runtime holds.

use std::collections::BTreeMap;
use std::sync::Arc;

use askbus_bus::{Bus, EventId, Id};
use askbus_store::{LogPosition, Store, StoreError};
use serde::Serialize;
use serde_json::json;
use tokio::sync::watch;

use crate::approval::{ApprovalConfig, ApprovalService, PendingApproval, QuorumFloor};
use crate::approval_model::{Action, ApprovalReply, Decision, DecisionType, ReviewConfig};
use crate::durable::Durable;
use crate::error::{DurableError, ResumeError, SessionRejectError, SubmitError};
use crate::follow::{self, Followed, FollowerStats};
use crate::follow_up::FollowUp;
use crate::identity::{Duties, Identity};
use crate::ids::RequestId;
use crate::interrupt::{InterruptState, PendingRequest, ResumeInput, confirmation_phrase};
use crate::model::OnTimeout;
use crate::notify::Notifier;
use crate::outcome::OutcomeKind;
use crate::quota::{PendingLimits, Quota};
use crate::registry::{HowEnded, StoreRole};
use crate::service::{QuestionConfig, QuestionService};
use crate::timeout::Timeout;

/// The questions and approvals of one system, on one bus.
///
/// Both services are built together, so whoever holds the hub (an HTTP router, a runtime)
/// sees every request of either kind. It adds what needs both: cancelling a session, and
/// the session's [interrupt state](crate::InterruptState) with `resume`. Cloning gives
/// another handle to the same requests.
///
/// # Examples
///
/// ```
/// use askbus_bus::Bus;
/// use askbus_question::{Action, RequestHub, ResumeInput, Timeout};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let hub = RequestHub::new(Bus::new());
/// let delete = Action::new("delete_rows", json!({"table": "users"}))
///     .with_description("Delete 1,234 expired users");
/// let pending = hub.approvals().request("s1", vec![delete]).submit().unwrap();
///
/// let state = hub.interrupt_state("s1").expect("s1 waits for a human");
/// // The agent's description, then the call a confirm runs.
/// assert_eq!(state.reason, "Delete 1,234 expired users\ndelete_rows {\"table\":\"users\"}");
///
/// hub.resume("s1", ResumeInput::Confirm(true), None).unwrap();
/// assert!(pending.await.unwrap().decisions[0].runs());
/// assert!(hub.interrupt_state("s1").is_none());
/// # }
/// ```
#[derive(Clone)]
pub struct RequestHub {
    /// The question side.
    questions: QuestionService,
    /// The approval side, on the same bus.
    approvals: ApprovalService,
    /// The store this hub shares with other instances, if it does.
    shared: Option<Shared>,
}

/// A hub's link to the store it shares with other instances.
#[derive(Clone)]
struct Shared {
    /// The shared store.
    store: Arc<dyn Store>,
    /// The position of the last change the follower applied.
    applied: watch::Receiver<LogPosition>,
    /// What the follower passed over.
    follower: Arc<FollowerStats>,
}

/// What [`RequestHub::resume`] answered.
#[derive(Debug)]
pub struct Resumed {
    /// The request that was answered.
    pub request: RequestId,
    /// Completes once the answer is durable in the store.
    pub durable: Durable,
}

/// How many requests of each kind a session has waiting for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionPending {
    /// The session.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub session_id: Arc<str>,
    /// Its pending questions.
    pub questions: usize,
    /// Its pending approval requests.
    pub approvals: usize,
}

/// Every session with pending requests, and where in the event stream the counts stand
/// (what `RequestHub::pending_sessions` answers).
///
/// The counts are of requests announced on the bus, read under each registry's lock with
/// the bus's newest event id: every event of that kind up to that id is reflected in them,
/// none after it. So a client holding these counts applies exactly the request events
/// after the kind's id (`+1` per `asked`, `-1` per outcome) and stays exact.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PendingSessions {
    /// The sessions with pending requests, ascending by session id.
    pub sessions: Vec<SessionPending>,
    /// The newest event id when the questions were counted.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "evt_01JZ6Q3V8R5M2K7D4T9WXYZABC"))]
    pub questions_as_of: EventId,
    /// The newest event id when the approval requests were counted.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "evt_01JZ6Q3V8R5M2K7D4T9WXYZABC"))]
    pub approvals_as_of: EventId,
}

/// What [`RequestHub::reject_session`] refused. Nothing of it runs: every question was
/// rejected, every approval request answered with a `reject` per action or cancelled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionRejected {
    /// Questions rejected (their askers get `AskError::Rejected`).
    pub questions: usize,
    /// Approval requests answered with a `reject` decision for every action.
    pub approvals: usize,
    /// Approval requests cancelled instead, because the review config of one of their
    /// actions does not allow `reject` (their askers get `ApprovalError::Cancelled`).
    pub cancelled: usize,
}

/// The action name of approvals made by [`RequestHub::request_confirmation`].
pub const CONFIRMATION_ACTION: &str = "confirm";

impl RequestHub {
    /// Both services on `bus`, with default settings.
    pub fn new(bus: Bus) -> Self {
        Self::with_config(bus, QuestionConfig::default(), ApprovalConfig::default())
    }

    /// Both services on `bus`, with these settings.
    pub(crate) fn with_config(
        bus: Bus,
        questions: QuestionConfig,
        approvals: ApprovalConfig,
    ) -> Self {
        let questions = QuestionService::with_config(bus.clone(), questions);
        let approvals = ApprovalService::sharing_ids(bus, approvals, questions.ids().clone());
        Self {
            questions,
            approvals,
            shared: None,
        }
    }

    /// Both services on `bus`, with these settings, recording in `store` and starting with
    /// what it holds (see [`QuestionService::with_store`]). Give the bus the same store's
    /// event journal (`askbus_store::resume_bus`) so the event history survives too.
    ///
    /// # Errors
    ///
    /// [`StoreError`](askbus_store::StoreError) if the store cannot be read.
    pub(crate) async fn with_store(
        bus: Bus,
        questions: QuestionConfig,
        approvals: ApprovalConfig,
        store: Arc<dyn Store>,
    ) -> Result<Self, StoreError> {
        Self::restore(bus, questions, approvals, store, StoreRole::Record).await
    }

    /// Both services as one of several instances sharing `store` (Redis; or a
    /// [`MemoryStore`](askbus_store::MemoryStore) shared by hubs in one process): a request
    /// asked through any instance is listed, answered and cancelled through any other, its
    /// asker's future resolves wherever it waits, and every instance's bus carries the same
    /// request events in the same order, each request's outcome once.
    ///
    /// The hub starts with what the store holds (as [`with_store`](Self::with_store)), and
    /// a task of its own applies the store's change log from then on. The store decides
    /// every outcome: a reply that another instance beat completes its [`Durable`] with
    /// [`DurableError::AlreadyResolved`](crate::DurableError::AlreadyResolved). A request
    /// shows on the bus once its insert came back through the log (within a round trip to
    /// the store), on this instance as on the others. Event ids are each bus's own, so an
    /// event stream cursor resumes on the instance that issued it.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotShared`] for a store without a change log (SQLite: one process per
    /// file), or the store's error if it cannot be read.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (the follower is spawned on it).
    pub(crate) async fn shared(
        bus: Bus,
        questions: QuestionConfig,
        approvals: ApprovalConfig,
        store: Arc<dyn Store>,
    ) -> Result<Self, StoreError> {
        let Some(log) = store.change_log() else {
            return Err(StoreError::NotShared);
        };
        // Before loading: a change made while loading is then applied too (harmlessly).
        let head = log.head().await?;
        let mut hub = Self::restore(
            bus,
            questions,
            approvals,
            Arc::clone(&store),
            StoreRole::Shared,
        )
        .await?;
        let (applied_sender, applied) = watch::channel(head);
        let followed = Followed {
            questions: hub.questions.registry().downgrade(),
            approvals: hub.approvals.registry().downgrade(),
        };
        let follower = Arc::new(FollowerStats::default());
        tokio::spawn(follow::follow(
            followed,
            Arc::clone(&store),
            head,
            applied_sender,
            Arc::clone(&follower),
        ));
        hub.shared = Some(Shared {
            store,
            applied,
            follower,
        });
        Ok(hub)
    }

    /// Both services over `store` in `role`, starting with what it holds.
    async fn restore(
        bus: Bus,
        questions: QuestionConfig,
        approvals: ApprovalConfig,
        store: Arc<dyn Store>,
        role: StoreRole,
    ) -> Result<Self, StoreError> {
        let ids = crate::registry::new_ids();
        let questions = QuestionService::restore_sharing_ids(
            bus.clone(),
            questions,
            ids.clone(),
            Arc::clone(&store),
            role,
        )
        .await?;
        let approvals =
            ApprovalService::restore_sharing_ids(bus, approvals, ids, store, role).await?;
        Ok(Self {
            questions,
            approvals,
            shared: None,
        })
    }

    /// This hub with `limits` on how many requests may be pending, questions and approvals
    /// together, per session, per account and in total; see [`PendingLimits`] for the rules.
    /// Requests pending already count from now on. Calling it again replaces the limits.
    ///
    /// The limits hold for every handle on this hub's requests, clones made before
    /// included. Without this call nothing is limited (nor counted).
    ///
    /// # Examples
    ///
    /// ```
    /// use askbus_bus::Bus;
    /// use askbus_question::{Action, PendingLimits, RequestHub, SubmitError, Timeout};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limits = PendingLimits { total: 1, ..PendingLimits::default() };
    /// let hub = RequestHub::new(Bus::new()).with_pending_limits(limits);
    /// let delete = || vec![Action::new("delete_rows", json!({"table": "users"}))];
    /// let _pending = hub.approvals().request("s1", delete()).timeout(Timeout::Never).submit().unwrap();
    ///
    /// let refused = hub.approvals().request("s2", delete()).timeout(Timeout::Never).submit();
    /// assert!(matches!(refused, Err(SubmitError::OverQuota(_))));
    /// # }
    /// ```
    #[must_use]
    pub fn with_pending_limits(self, limits: PendingLimits) -> Self {
        let quota = match self.questions.registry().quota() {
            Some(quota) => {
                quota.set_limits(limits);
                Arc::clone(quota)
            }
            None => Quota::new(limits),
        };
        // Both, even when the questions had a quota: their approvals may not (a second hub
        // made from the same questions).
        self.questions.registry().install_quota(&quota);
        self.approvals.registry().install_quota(&quota);
        self
    }

    /// Another handle on the same requests whose new ones (of either kind) are charged to
    /// `account` too, so that they count against its
    /// [`per_account`](PendingLimits::per_account) limit. `account` names who asks (the
    /// server: `token 2`, by the token's position in its configuration) and is named in the
    /// error. Its [`questions`](Self::questions) and [`approvals`](Self::approvals) charge
    /// the account too (hand them to a tool, say).
    #[must_use]
    pub fn for_account(&self, account: impl Into<Arc<str>>) -> Self {
        let account = account.into();
        let mut charged = self.clone();
        charged.questions.account = Some(Arc::clone(&account));
        charged.approvals.account = Some(account);
        charged
    }

    /// Another handle on the same requests that acts as `identity`: its new requests (of
    /// either kind) record it as their asker, and its replies, rejections, reviews and
    /// resumes are decided by it, so [`Duties`] apply to it. A hub acts as
    /// [`Identity::local`] until told otherwise. The server gives each credential's
    /// requests a handle acting as the credential's identity.
    #[must_use]
    pub fn acting_as(&self, identity: Identity) -> Self {
        let mut acting = self.clone();
        acting.questions.actor = identity.clone();
        acting.approvals.actor = identity;
        acting
    }

    /// Who this handle acts as (see [`acting_as`](Self::acting_as)).
    pub fn actor(&self) -> &Identity {
        &self.questions.actor
    }

    /// Sets the least quorum of approvals, per tool (see [`QuorumFloor`]): every approval
    /// request made from now on, through any handle, needs at least that many reviewers
    /// alike for each of its tools, whatever its review configs ask. Set once, before the
    /// hub is shared; a second call changes nothing.
    #[must_use]
    pub fn with_quorum_floor(self, floor: QuorumFloor) -> Self {
        let _ = self.approvals.quorum_floor.set(floor);
        self
    }

    /// Sets the follow-up of both kinds' requests that leave parts of theirs out (see
    /// [`FollowUp`]): a reminder, an escalation, the fallback on expiry. A default that
    /// cannot apply to a request (a reminder after its deadline) is left out of it. An
    /// approval never takes a default answer, so [`OnTimeout::Answer`] applies to
    /// questions only. Set once, before the hub is shared; a second call changes nothing.
    #[must_use]
    pub fn with_follow_up(self, defaults: FollowUp) -> Self {
        let approvals = FollowUp {
            on_timeout: defaults
                .on_timeout
                .clone()
                .filter(|fallback| !matches!(fallback, OnTimeout::Answer(_))),
            ..defaults.clone()
        };
        let _ = self.questions.follow_up.set(defaults);
        let _ = self.approvals.follow_up.set(approvals);
        self
    }

    /// Sets the separation-of-duties policy of both kinds' requests (see [`Duties`]): with
    /// [`never_the_asker`](Duties::never_the_asker), no identity decides a request it
    /// asked. Roles are checked whatever the policy. A hub's policy is set once, before it
    /// is shared; a second call changes nothing.
    #[must_use]
    pub fn with_duties(self, duties: Duties) -> Self {
        self.questions.registry().set_duties(duties);
        self.approvals.registry().set_duties(duties);
        self
    }

    /// Tells the outside world of every request from now on, through the store's outbox:
    /// `notifier` makes the message of each request event (see [`Notifier`]), which is
    /// written with the change it tells of. Only a hub with a store
    /// ([`HubBuilder::store`](crate::HubBuilder::store)) has an outbox: without
    /// one, or on a second call, nothing changes. Set it before the hub is shared.
    #[must_use]
    pub fn with_notifier(self, notifier: Arc<dyn Notifier>) -> Self {
        self.questions.registry().set_notifier(&notifier);
        self.approvals.registry().set_notifier(&notifier);
        self
    }

    /// The store the hub records its requests in ([`HubBuilder::store`](crate::HubBuilder::store)), where each
    /// session's history is kept too; `None` for a
    /// hub that keeps everything in memory.
    pub fn store(&self) -> Option<&Arc<dyn Store>> {
        self.questions.registry().store()
    }

    /// Checks an agent's step for `session_id` (`agent.step`) as a request is checked before
    /// the hub holds it: the session id at most [`MAX_ID_BYTES`](crate::MAX_ID_BYTES) long,
    /// and, under a quota, the step at most
    /// [`values_per_request`](crate::PendingLimits::values_per_request) JSON values (a
    /// tool call's input parses into far more memory than its text takes, and the bus and
    /// histories keep recent steps).
    ///
    /// # Errors
    ///
    /// [`ValidationError`](crate::ValidationError) naming the limit passed.
    pub fn check_step(
        &self,
        session_id: &str,
        step: &impl Serialize,
    ) -> Result<(), crate::ValidationError> {
        crate::validate::check_id_length("the session id", session_id)?;
        if let Some(quota) = self.questions.registry().quota() {
            let limit = quota.limits().values_per_request;
            let values = crate::quota::Weight::of(step).values;
            if values > limit {
                return Err(crate::ValidationError::too_many_values(values, limit));
            }
        }
        Ok(())
    }

    /// Whether this hub shares its store with other instances ([`HubBuilder::shared`](crate::HubBuilder::shared)).
    pub fn shares_store(&self) -> bool {
        self.shared.is_some()
    }

    /// Waits until this hub has applied every change its shared store had made when this
    /// was called: a request asked through another instance is then known here if its
    /// insert was in the store by then (its `recorded()` completed; over HTTP, its
    /// `POST /question` was answered). At once for a hub that shares no store.
    ///
    /// # Errors
    ///
    /// The store's error if its change log cannot be read.
    pub async fn caught_up(&self) -> Result<(), StoreError> {
        let Some(shared) = &self.shared else {
            return Ok(());
        };
        let Some(log) = shared.store.change_log() else {
            return Ok(());
        };
        let head = log.head().await?;
        let mut applied = shared.applied.clone();
        // The follower reads continuously; a hub whose follower stopped (its store is gone)
        // has nothing more to catch up with.
        let _ = applied.wait_for(|&position| position >= head).await;
        Ok(())
    }

    /// Whether this hub can serve: its store answers a read, and (over a shared store) its
    /// follower has applied the store's log up to now. At once without a store. Wrap it in
    /// a timeout: a store that does not answer makes it wait as long as the store's own
    /// time limit.
    ///
    /// # Errors
    ///
    /// The store's error.
    pub async fn ready(&self) -> Result<(), StoreError> {
        if let Some(store) = self.store() {
            store.recent_events(1).await?;
        }
        self.caught_up().await
    }

    /// How many changes of the shared store's log this hub has yet to apply: the log's
    /// head now, less the last change its follower applied. `None` for a hub that shares
    /// no store (nothing to follow).
    ///
    /// # Errors
    ///
    /// The store's error if its change log cannot be read.
    pub async fn follower_lag(&self) -> Option<Result<u64, StoreError>> {
        let shared = self.shared.as_ref()?;
        let log = shared.store.change_log()?;
        let applied = shared.applied.borrow().0;
        Some(log.head().await.map(|head| head.0.saturating_sub(applied)))
    }

    /// What this hub's follower of a shared store met that it could not simply apply:
    /// gaps it resynced, changes it skipped. `None` for a hub that shares no store.
    pub fn follower_stats(&self) -> Option<&FollowerStats> {
        self.shared.as_ref().map(|shared| &*shared.follower)
    }

    /// The bus both services publish on.
    pub fn bus(&self) -> &Bus {
        self.questions.bus()
    }

    /// The question side.
    pub fn questions(&self) -> &QuestionService {
        &self.questions
    }

    /// The approval side.
    pub fn approvals(&self) -> &ApprovalService {
        &self.approvals
    }

    /// Cancels every pending request of a session, of both kinds; returns how many.
    pub fn cancel_session(&self, session_id: &str) -> usize {
        self.questions.cancel_session(session_id) + self.approvals.cancel_session(session_id)
    }

    /// Refuses everything a session has pending, so that the human can stop a runaway
    /// agent in one step: every pending question is rejected with `reason` (as
    /// [`QuestionService::reject`]), every pending approval request is answered with a
    /// `reject` decision for each action (`reason` as its message). An approval request
    /// with an action whose review config does not allow `reject` cannot be answered that
    /// way; it is cancelled instead, which runs nothing either. Completes once every change
    /// is durable in the store, and counts what was refused.
    ///
    /// Over a shared store, call [`caught_up`](Self::caught_up) first to include what was
    /// asked through other instances; a request another instance resolved meanwhile is not
    /// counted.
    ///
    /// # Errors
    ///
    /// [`SessionRejectError::NotAllowed`] if this handle's identity may not decide one of
    /// the session's requests (an agent; or the asker, see [`Duties`]): then nothing of
    /// that kind was refused. [`SessionRejectError::Durable`] if the store could not
    /// record a change (the other changes still complete; see [`Durable`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use askbus_bus::Bus;
    /// use askbus_question::{Action, AskError, QuestionInfo, QuestionOption, RequestHub, Timeout};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let hub = RequestHub::new(Bus::new());
    /// let info = QuestionInfo::new("Continue?", "Continue", [QuestionOption::new("Yes", "")]);
    /// let question = hub.questions().ask("runaway", vec![info]).timeout(Timeout::Never).submit().unwrap();
    /// let drop_table = Action::new("drop_table", json!({"table": "users"}));
    /// let approval = hub.approvals().request("runaway", vec![drop_table]).timeout(Timeout::Never).submit().unwrap();
    ///
    /// let rejected = hub.reject_session("runaway", Some("stop")).await.unwrap();
    /// assert_eq!((rejected.questions, rejected.approvals, rejected.cancelled), (1, 1, 0));
    /// assert_eq!(question.await, Err(AskError::Rejected { reason: Some("stop".into()) }));
    /// assert!(!approval.await.unwrap().decisions[0].runs());
    /// # }
    /// ```
    pub async fn reject_session(
        &self,
        session_id: &str,
        reason: Option<&str>,
    ) -> Result<SessionRejected, SessionRejectError> {
        // Both kinds are checked before either changes, so a refusal refuses nothing.
        let actor = self.actor();
        self.questions
            .registry()
            .may_decide_session(session_id, actor)?;
        self.approvals
            .registry()
            .may_decide_session(session_id, actor)?;
        let questions = self.questions.reject_session(session_id, reason)?;
        let approvals = self.approvals.reject_session(session_id, reason)?;
        let mut rejected = SessionRejected::default();
        for (kind, durable) in questions.into_iter().chain(approvals) {
            match durable.await {
                Ok(()) => {}
                // Another instance resolved it first: not refused here.
                Err(DurableError::AlreadyResolved { .. }) => continue,
                Err(
                    error @ (DurableError::Store(_)
                    | DurableError::NotCounted(_)
                    | DurableError::NotHere { .. }),
                ) => {
                    return Err(error.into());
                }
            }
            let count = match kind {
                OutcomeKind::Rejected => &mut rejected.questions,
                OutcomeKind::Replied => &mut rejected.approvals,
                OutcomeKind::Cancelled | OutcomeKind::TimedOut => &mut rejected.cancelled,
            };
            *count += 1;
        }
        Ok(rejected)
    }

    /// Every session with pending requests and how many of each kind, ascending by
    /// session id, with where in the event stream the counts stand (see
    /// [`PendingSessions`]). Costs `O(sessions)`, however many requests are pending.
    pub fn pending_sessions(&self) -> PendingSessions {
        let (questions, questions_as_of) = self.questions.registry().session_counts();
        let (approvals, approvals_as_of) = self.approvals.registry().session_counts();
        let mut sessions: BTreeMap<Arc<str>, SessionPending> = BTreeMap::new();
        for (session_id, count) in questions {
            session_entry(&mut sessions, session_id).questions = count;
        }
        for (session_id, count) in approvals {
            session_entry(&mut sessions, session_id).approvals = count;
        }
        let sessions = sessions.into_values().collect();
        PendingSessions {
            sessions,
            questions_as_of,
            approvals_as_of,
        }
    }

    /// Whether the hub knows the session: some request of it, of either kind, is pending
    /// or still remembered as resolved. A session that never asked, or whose requests
    /// were all forgotten, is unknown.
    ///
    /// Costs a scan of the pending and remembered requests, as a filtered `list` does.
    pub fn knows_session(&self, session_id: &str) -> bool {
        self.questions.knows_session(session_id) || self.approvals.knows_session(session_id)
    }

    /// The oldest pending request of a session, of either kind.
    pub fn oldest_pending(&self, session_id: &str) -> Option<PendingRequest> {
        let question = self.questions.oldest_pending(session_id);
        let approval = self.approvals.oldest_pending(session_id);
        match (question, approval) {
            (Some(question), Some(approval)) if approval.id.ulid() < question.id.ulid() => {
                Some(PendingRequest::Approval { request: approval })
            }
            (Some(question), _) => Some(PendingRequest::Question { request: question }),
            (None, approval) => approval.map(|request| PendingRequest::Approval { request }),
        }
    }

    /// What the session is waiting on (its oldest pending request), or `None` when it is
    /// not interrupted.
    pub fn interrupt_state(&self, session_id: &str) -> Option<InterruptState> {
        self.oldest_pending(session_id)
            .map(|pending| pending.interrupt_state())
    }

    /// Answers the session's interrupt with `input`: the request `checkpoint` if given
    /// (it must belong to the session), else the session's one pending request. Returns
    /// the id of the request answered, and when the answer is durable.
    ///
    /// # Errors
    ///
    /// [`ResumeError::UnknownSession`], [`ResumeError::NothingPending`] (also once the
    /// request expired or was already resumed), [`ResumeError::Ambiguous`] without a
    /// checkpoint while several are pending, [`ResumeError::Replaced`] without one when
    /// the last request of the session to end before it ended without a human's decision
    /// (it timed out, its asker cancelled it, a grant approved it),
    /// [`ResumeError::UnknownCheckpoint`] for a
    /// checkpoint not of this session, [`ResumeError::WrongInput`] when the input
    /// does not fit the kind of request, or the service's own error (invalid answers or
    /// decisions, a checkpoint already resolved or unknown).
    pub fn resume(
        &self,
        session_id: &str,
        input: ResumeInput,
        checkpoint: Option<RequestId>,
    ) -> Result<Resumed, ResumeError> {
        let unknown_or_idle = || {
            if self.knows_session(session_id) {
                ResumeError::NothingPending(session_id.to_owned())
            } else {
                ResumeError::UnknownSession(session_id.to_owned())
            }
        };
        // Who may decide nothing is told that first, as when the request is named: the
        // duties' check, with no asker to compare.
        let refuse = |error: ResumeError| {
            self.questions
                .registry()
                .duties()
                .check_decide(self.actor(), None)
                .map_err(|refused| ResumeError::Question(refused.into()))?;
            Err(error)
        };
        let target = match checkpoint {
            None => {
                // Without a checkpoint, "the interrupt" must have been one request all
                // along: with several pending, now or since the session was last idle, the
                // one a human looked at may not be the oldest by the time the answer lands
                // (it expired, or its agent cancelled it), and the answer would decide
                // another they never saw. The pending limits' counts (both kinds) remember
                // the past; without limits only the present is known.
                let pending = self.questions.registry().pending_count_in(session_id)
                    + self.approvals.registry().pending_count_in(session_id);
                let crowded = self
                    .questions
                    .registry()
                    .quota()
                    .is_some_and(|quota| quota.crowded(session_id));
                if pending > 1 || crowded {
                    return refuse(ResumeError::Ambiguous(session_id.to_owned()));
                }
                let pending = self
                    .oldest_pending(session_id)
                    .ok_or_else(unknown_or_idle)?
                    .id();
                // One after the other is the same swap: the request a human looked at
                // ended without them (it expired, its agent cancelled it, a grant took
                // it) and the agent asked another in its place. Only if the last to end
                // before it was a human's decision may the next be answered unnamed.
                if let Some((ended, how)) = self.last_ended_before(session_id, pending)
                    && !how.by_a_human
                {
                    return refuse(ResumeError::Replaced {
                        session: session_id.to_owned(),
                        ended,
                        outcome: how.kind,
                        pending,
                    });
                }
                pending
            }
            Some(id) if self.belongs_to(id, session_id) => id,
            Some(id) => return Err(ResumeError::UnknownCheckpoint(id)),
        };
        let durable = match (target, input) {
            (RequestId::Question(id), ResumeInput::Answers(answers)) => {
                self.questions.reply(id, answers)?
            }
            (RequestId::Question(id), ResumeInput::KeyedAnswers(keyed)) => {
                self.questions.reply_keyed(id, &keyed)?
            }
            (RequestId::Question(id), ResumeInput::Confirm(false)) => {
                self.questions.reject(id, None)?
            }
            (RequestId::Question(id), ResumeInput::Confirm(true) | ResumeInput::Decisions(_)) => {
                return Err(ResumeError::WrongInput(format!(
                    "{id} is a question: resume it with {{\"answers\": [...]}} (one answer per question), or {{\"confirm\": false}} to decline"
                )));
            }
            (RequestId::Approval(id), ResumeInput::Confirm(confirm)) => {
                let decision = if confirm {
                    Decision::Approve
                } else {
                    Decision::Reject { message: None }
                };
                self.approvals.reply(id, ApprovalReply::new([decision]))?
            }
            (RequestId::Approval(id), ResumeInput::Decisions(reply)) => {
                self.approvals.reply(id, reply)?
            }
            (RequestId::Approval(id), ResumeInput::Answers(_) | ResumeInput::KeyedAnswers(_)) => {
                return Err(ResumeError::WrongInput(format!(
                    "{id} is an approval: resume it with {{\"confirm\": true|false}} or {{\"decisions\": [...]}}"
                )));
            }
        };
        Ok(Resumed {
            request: target,
            durable,
        })
    }

    /// Turns model text that asks for confirmation into an approval request, for runtimes
    /// that pause on such text (seed 002). `None` when the text contains no
    /// [confirmation phrase](crate::confirmation_phrase).
    ///
    /// The request has one action, [`CONFIRMATION_ACTION`], whose args are `{"text"}` and
    /// whose description is the text itself (the interrupt's `reason`); only `approve`
    /// and `reject` are allowed.
    ///
    /// # Errors
    ///
    /// [`SubmitError::Invalid`] for an empty session id; [`SubmitError::OverQuota`] if too
    /// many requests are pending.
    pub fn request_confirmation(
        &self,
        session_id: impl Into<Arc<str>>,
        text: &str,
        timeout: Timeout,
    ) -> Result<Option<PendingApproval>, SubmitError> {
        if confirmation_phrase(text).is_none() {
            return Ok(None);
        }
        let action =
            Action::new(CONFIRMATION_ACTION, json!({ "text": text })).with_description(text);
        let review = ReviewConfig::new(
            CONFIRMATION_ACTION,
            [DecisionType::Approve, DecisionType::Reject],
        );
        self.approvals
            .request(session_id, vec![action])
            .review(vec![review])
            .timeout(timeout)
            .submit()
            .map(Some)
    }

    /// Of the requests of `session_id` older than `pending` that the hub still remembers
    /// as resolved, of either kind, the one that ended last, and how.
    fn last_ended_before(
        &self,
        session_id: &str,
        pending: RequestId,
    ) -> Option<(RequestId, HowEnded)> {
        let before = match pending {
            RequestId::Question(id) => id.ulid(),
            RequestId::Approval(id) => id.ulid(),
        };
        let question = self
            .questions
            .registry()
            .last_ended_before(session_id, Id::from_ulid(before))
            .map(|(id, ended)| (RequestId::Question(id), ended));
        let approval = self
            .approvals
            .registry()
            .last_ended_before(session_id, Id::from_ulid(before))
            .map(|(id, ended)| (RequestId::Approval(id), ended));
        question
            .into_iter()
            .chain(approval)
            .max_by_key(|(_, ended)| ended.at)
    }

    /// Whether request `id` exists (pending or remembered) in `session_id`.
    fn belongs_to(&self, id: RequestId, session_id: &str) -> bool {
        match id {
            RequestId::Question(id) => self
                .questions
                .get(id)
                .is_some_and(|snapshot| &*snapshot.request.session_id == session_id),
            RequestId::Approval(id) => self
                .approvals
                .get(id)
                .is_some_and(|snapshot| &*snapshot.request.session_id == session_id),
        }
    }
}

/// The counts of `session_id` in `sessions`, zero until set.
fn session_entry(
    sessions: &mut BTreeMap<Arc<str>, SessionPending>,
    session_id: Arc<str>,
) -> &mut SessionPending {
    sessions
        .entry(Arc::clone(&session_id))
        .or_insert(SessionPending {
            session_id,
            questions: 0,
            approvals: 0,
        })
}
