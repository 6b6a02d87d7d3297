//! The question service: ask, answer, reject, list.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use askbus_bus::Bus;
use askbus_store::{RequestKind, Store, StoreError};

use crate::durable::Durable;
use crate::error::{AskError, ReplyError, SubmitError};
use crate::follow_up::{Due, FollowUp, Plan};
use crate::identity::{Identity, NotAllowed};
use crate::ids::{QuestionId, QuestionIdPrefix, RequestId};
use crate::keys::RequestKeys;
use crate::model::{
    Answer, Answers, OnTimeout, QuestionAsked, QuestionCancelled, QuestionEscalated, QuestionInfo,
    QuestionNotRecorded, QuestionRejected, QuestionReminded, QuestionReplied, QuestionRequest,
    QuestionTimedOut, ToolRef,
};
use crate::notify::EventSink;
use crate::outcome::{Outcome, OutcomeKind, Snapshot};
use crate::quota::{Charge, Weight};
use crate::registry::{
    self, Refused, Registry, RequestType, ResolveError, SharedIds, StoreRole, Ticket,
};
use crate::terms::Terms;
use crate::validate::{self, ValidationError};

/// Asks humans questions and hands their answers back to the asking task.
///
/// Cloning gives another handle to the same pending requests.
///
/// # Examples
///
/// ```
/// use askbus_bus::Bus;
/// use askbus_question::{QuestionInfo, QuestionOption, QuestionService};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let questions = QuestionService::new(Bus::new());
/// let database = QuestionInfo::new(
///     "Which database?",
///     "Database",
///     [QuestionOption::new("SQLite", "embedded"), QuestionOption::new("Postgres", "server")],
/// );
/// // `submit` makes the request now, so its id is known before anyone answers.
/// let pending = questions.ask("session-1", vec![database]).submit().unwrap();
///
/// // Elsewhere, a human answers (in a real system: over HTTP).
/// questions.reply(pending.id(), vec![vec!["SQLite".into()]]).unwrap();
///
/// assert_eq!(pending.await.unwrap(), vec![vec!["SQLite".to_string()]]);
/// # }
/// ```
#[derive(Clone)]
pub struct QuestionService {
    /// The pending and recently resolved questions.
    registry: Registry<Questions>,
    /// Defaults applied to every request.
    config: QuestionConfig,
    /// The account new requests are charged to
    /// ([`RequestHub::for_account`](crate::RequestHub::for_account)).
    pub(crate) account: Option<Arc<str>>,
    /// Who this handle acts as: the asker of its new requests, the decider of its replies
    /// ([`RequestHub::acting_as`](crate::RequestHub::acting_as)); [`Identity::local`] by
    /// default.
    pub(crate) actor: Identity,
    /// The follow-up of requests that leave parts of theirs out, once set
    /// ([`RequestHub::with_follow_up`](crate::RequestHub::with_follow_up)); shared by every
    /// handle on this service.
    pub(crate) follow_up: Arc<OnceLock<FollowUp>>,
}

/// Settings of a [`QuestionService`].
#[derive(Debug, Clone, Copy)]
pub struct QuestionConfig {
    /// Timeout applied by [`Timeout::Default`](crate::Timeout::Default); `None` waits forever. Default: 600 s.
    pub default_timeout: Option<Duration>,
    /// How many resolved requests are remembered, so that `get` and `wait` can report their
    /// outcome and a second reply is told "already resolved" rather than "not found".
    /// Default: 10,000. The oldest are forgotten first.
    pub retain_resolved: usize,
}

/// The future of one asked request; resolves to the answers or the reason there are none.
///
/// # Cancel safety
///
/// Dropping it before it completes **cancels the question**: the pending entry is removed
/// and `question.cancelled` is published. Use [`PendingQuestion::detach`] to leave the
/// question pending for someone else to collect (with [`QuestionService::wait`]).
#[must_use = "dropping a PendingQuestion cancels the question"]
pub struct PendingQuestion {
    /// The registered request and where its outcome arrives.
    ticket: Ticket<Questions>,
}

/// A question request with its outcome (`None` while pending).
pub type QuestionSnapshot = Snapshot<QuestionRequest, Answers>;

/// A question request's terminal outcome.
pub type QuestionOutcome = Outcome<Answers>;

/// Plugs questions into the generic registry.
pub(crate) enum Questions {}

impl RequestType for Questions {
    type IdPrefix = QuestionIdPrefix;
    type Request = QuestionRequest;
    type Reply = Answers;
    type Rejection = Option<String>;
    type Index = RequestKeys<QuestionIdPrefix>;

    fn new_index(ids: &SharedIds) -> Self::Index {
        RequestKeys::new(Arc::clone(&ids.keys))
    }

    const RECORD_KIND: RequestKind = RequestKind::Question;

    fn id(request: &QuestionRequest) -> QuestionId {
        request.id
    }

    fn request_id(id: QuestionId) -> RequestId {
        RequestId::Question(id)
    }

    fn session_id(request: &QuestionRequest) -> &Arc<str> {
        &request.session_id
    }

    fn call_id(request: &QuestionRequest) -> Option<&str> {
        request.tool.as_ref().map(|tool| tool.call_id.as_str())
    }

    type Content = Vec<QuestionInfo>;

    fn content_weight(questions: &Vec<QuestionInfo>) -> Weight {
        Weight::of(questions)
    }

    fn weight(request: &QuestionRequest) -> Weight {
        Weight::of(&request.questions)
    }

    /// The same questions, options and flags, in the same order.
    fn asks(request: &QuestionRequest, questions: &Vec<QuestionInfo>) -> bool {
        request.questions == *questions
    }

    fn expires_at(request: &QuestionRequest) -> Option<u64> {
        request.expires_at
    }

    fn remember(keys: &mut RequestKeys<QuestionIdPrefix>, request: &QuestionRequest) {
        keys.remember(&request.session_id, &request.approval_key, request.id);
    }

    fn forget(keys: &mut RequestKeys<QuestionIdPrefix>, request: &QuestionRequest) {
        keys.forget(&request.session_id, &request.approval_key, request.id);
    }

    fn announce_asked(to: &mut impl EventSink, request: &Arc<QuestionRequest>) {
        to.announce(QuestionAsked {
            request: Arc::clone(request),
        });
    }

    fn asked_by(request: &QuestionRequest) -> Option<&Identity> {
        request.asked_by.as_ref()
    }

    fn follow_up_at(request: &QuestionRequest) -> (Option<u64>, Option<u64>) {
        (request.remind_at, request.escalate_at)
    }

    fn escalates_to(request: &QuestionRequest, by: &Identity) -> bool {
        request.escalate_to.iter().any(|name| **name == *by.name)
    }

    fn on_timeout(request: &QuestionRequest) -> Option<&OnTimeout> {
        request.on_timeout.as_ref()
    }

    fn timeout_outcome(request: &QuestionRequest) -> Outcome<Answers> {
        match &request.on_timeout {
            Some(OnTimeout::Answer(answers)) => Outcome::Defaulted(answers.clone().into()),
            _ => Outcome::TimedOut,
        }
    }

    fn read_rejection(reason: Option<String>) -> Outcome<Answers> {
        Outcome::Rejected { reason }
    }

    fn announce_follow_up(to: &mut impl EventSink, request: &Arc<QuestionRequest>, due: Due) {
        let session_id = Arc::clone(&request.session_id);
        let request_id = request.id;
        match due {
            Due::Remind => to.announce(QuestionReminded {
                session_id,
                request_id,
            }),
            Due::Escalate => to.announce(QuestionEscalated {
                session_id,
                request_id,
                escalated_to: request.escalate_to.clone(),
            }),
            Due::Expire => {}
        }
    }

    fn announce_outcome(
        to: &mut impl EventSink,
        request: &Arc<QuestionRequest>,
        outcome: &Outcome<Answers>,
        by: Option<&Identity>,
    ) {
        let session_id = Arc::clone(&request.session_id);
        let request_id = request.id;
        match outcome {
            Outcome::Replied(answers) => to.announce(QuestionReplied {
                session_id,
                request_id,
                answers: Arc::clone(answers),
                answered_by: by.cloned(),
            }),
            Outcome::Rejected { reason } => to.announce(QuestionRejected {
                session_id,
                request_id,
                reason: reason.clone(),
                answered_by: by.cloned(),
            }),
            Outcome::TimedOut => to.announce(QuestionTimedOut {
                session_id,
                request_id,
                fallback: request.on_timeout.as_ref().map(OnTimeout::as_str),
                default_answers: None,
            }),
            Outcome::Defaulted(answers) => to.announce(QuestionTimedOut {
                session_id,
                request_id,
                fallback: Some(OnTimeout::Answer(Vec::new()).as_str()),
                default_answers: Some(Arc::clone(answers)),
            }),
            Outcome::Cancelled => to.announce(QuestionCancelled {
                session_id,
                request_id,
            }),
        };
    }

    fn announce_not_recorded(
        to: &mut impl EventSink,
        request: &Arc<QuestionRequest>,
        outcome: OutcomeKind,
    ) {
        to.announce(QuestionNotRecorded {
            session_id: Arc::clone(&request.session_id),
            request_id: request.id,
            outcome,
        });
    }
}

impl From<SubmitError> for AskError {
    fn from(error: SubmitError) -> Self {
        match error {
            SubmitError::Invalid(invalid) => Self::Invalid(invalid),
            SubmitError::OverQuota(exceeded) => Self::OverQuota(exceeded),
            SubmitError::NotAllowed(refused) => Self::NotAllowed(refused),
        }
    }
}

impl Default for QuestionConfig {
    fn default() -> Self {
        Self {
            default_timeout: Some(Duration::from_secs(600)),
            retain_resolved: 10_000,
        }
    }
}

impl QuestionService {
    /// A service publishing on `bus`, with the default [`QuestionConfig`].
    pub fn new(bus: Bus) -> Self {
        Self::with_config(bus, QuestionConfig::default())
    }

    /// A service publishing on `bus` with `config`.
    pub fn with_config(bus: Bus, config: QuestionConfig) -> Self {
        Self::sharing_ids(bus, config, registry::new_ids())
    }

    /// As [`with_config`](Self::with_config), drawing ids from `ids` (shared with the other
    /// kind's service of a hub).
    pub(crate) fn sharing_ids(bus: Bus, config: QuestionConfig, ids: SharedIds) -> Self {
        Self {
            registry: Registry::new(bus, config.retain_resolved, ids),
            config,
            account: None,
            actor: Identity::local(),
            follow_up: Arc::default(),
        }
    }

    /// This service's id source, to share with the other kind's service.
    pub(crate) fn ids(&self) -> &SharedIds {
        self.registry.ids()
    }

    /// A service that records every question and outcome in `store`, and starts with what
    /// the store already holds: pending questions are pending again (an ask from the same
    /// tool call picks them up), and the newest `retain_resolved` outcomes are remembered.
    ///
    /// Changes are acknowledged as [`Durable`] once the store has them.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the store cannot be read.
    pub async fn with_store(
        bus: Bus,
        config: QuestionConfig,
        store: Arc<dyn Store>,
    ) -> Result<Self, StoreError> {
        Self::restore_sharing_ids(bus, config, registry::new_ids(), store, StoreRole::Record).await
    }

    /// As [`with_store`](Self::with_store), drawing ids from `ids`.
    pub(crate) async fn restore_sharing_ids(
        bus: Bus,
        config: QuestionConfig,
        ids: SharedIds,
        store: Arc<dyn Store>,
        role: StoreRole,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            registry: Registry::restore(bus, config.retain_resolved, ids, store, role).await?,
            config,
            account: None,
            actor: Identity::local(),
            follow_up: Arc::default(),
        })
    }

    /// The bus this service publishes on.
    pub fn bus(&self) -> &Bus {
        self.registry.bus()
    }

    /// The registry behind this service.
    pub(crate) fn registry(&self) -> &Registry<Questions> {
        &self.registry
    }

    /// Registers a request: what [`QuestionAsk::submit`] does.
    pub(crate) fn submit_request(
        &self,
        session_id: Arc<str>,
        questions: Vec<QuestionInfo>,
        tool: Option<ToolRef>,
        terms: Terms,
    ) -> Result<PendingQuestion, SubmitError> {
        let Terms {
            timeout,
            follow_up,
            locale,
        } = terms;
        validate::check_locale(locale.as_deref())?;
        validate::check_questions(&session_id, &questions)?;
        if let Some(tool) = &tool {
            validate::check_id_length("the tool call's id (`callID`)", &tool.call_id)?;
            validate::check_id_length(
                "the tool call's message id (`messageID`)",
                &tool.message_id,
            )?;
        }
        let plan = Plan::new(
            timeout,
            self.config.default_timeout,
            follow_up,
            self.follow_up.get().unwrap_or(&FollowUp::default()),
            |answers| {
                validate::check_answers(&questions, answers)
                    .map_err(ValidationError::in_default_answer)
            },
        )?;
        let call = tool
            .as_ref()
            .map(|tool| (Arc::clone(&session_id), tool.call_id.clone()));
        let charge = Charge {
            session: Arc::clone(&session_id),
            account: self.account.clone(),
            weight: 0,
        };
        let asker = self.actor.clone();
        let ticket = self.registry.register(
            &self.actor,
            call.clone(),
            charge,
            questions,
            |id, keys, questions| {
                let created_at = id.timestamp_ms();
                QuestionRequest {
                    id,
                    approval_key: keys.assign(&session_id, id),
                    session_id,
                    questions,
                    tool,
                    created_at,
                    expires_at: plan.expires_at(created_at),
                    asked_by: Some(asker),
                    remind_at: plan.remind_at(created_at),
                    escalate_at: plan.escalate_at(created_at),
                    escalate_to: plan.escalate_to.clone(),
                    on_timeout: plan.on_timeout.clone(),
                    locale,
                }
            },
            plan.timers,
        );
        match ticket {
            Ok(ticket) => Ok(PendingQuestion { ticket }),
            Err(Refused::CallReused(earlier)) => Err(ValidationError::call_reused(
                RequestId::Question(earlier),
                format!(
                    "tool call {:?} already asked question request {earlier} in this session, about other questions; give this ask a call id of its own, or leave it out",
                    call.map(|(_, call_id)| call_id).unwrap_or_default()
                ),
            )
            .into()),
            Err(Refused::OverQuota(exceeded)) => Err(exceeded.into()),
            Err(Refused::NotAllowed(refused)) => Err(refused.into()),
            Err(Refused::TooLarge { values, limit }) => {
                Err(ValidationError::too_many_values(values, limit).into())
            }
        }
    }

    /// Answers a pending request, one answer per question.
    ///
    /// The asker has the answers when this returns; the returned [`Durable`] completes
    /// once the answer is in the store (at once without one).
    ///
    /// # Errors
    ///
    /// [`ReplyError::NotFound`], [`ReplyError::AlreadyResolved`], or
    /// [`ReplyError::Invalid`] when the answers do not fit the questions.
    pub fn reply(&self, id: QuestionId, answers: Vec<Answer>) -> Result<Durable, ReplyError> {
        self.resolve(id, |request| {
            validate::check_answers(&request.questions, &answers)?;
            Ok(Outcome::Replied(answers.into()))
        })
    }

    /// Answers a pending request with the keyed form `{"<question text>": "A, B"}`:
    /// questions left out are skipped; multi-select values are joined with `", "`.
    ///
    /// # Errors
    ///
    /// As [`reply`](Self::reply); also [`ReplyError::Invalid`] for a key that is no
    /// question's text.
    pub fn reply_keyed(
        &self,
        id: QuestionId,
        keyed: &BTreeMap<String, String>,
    ) -> Result<Durable, ReplyError> {
        self.resolve(id, |request| {
            let answers = validate::answers_from_keyed(&request.questions, keyed)?;
            validate::check_answers(&request.questions, &answers)?;
            Ok(Outcome::Replied(answers.into()))
        })
    }

    /// Rejects a pending request: the asker gets [`AskError::Rejected`].
    ///
    /// # Errors
    ///
    /// [`ReplyError::NotFound`] or [`ReplyError::AlreadyResolved`].
    pub fn reject(&self, id: QuestionId, reason: Option<String>) -> Result<Durable, ReplyError> {
        self.resolve(id, |_| Ok(Outcome::Rejected { reason }))
    }

    /// Cancels a pending request: the asker gets [`AskError::Cancelled`].
    ///
    /// # Errors
    ///
    /// [`ReplyError::NotFound`] or [`ReplyError::AlreadyResolved`].
    pub fn cancel(&self, id: QuestionId) -> Result<Durable, ReplyError> {
        self.resolve(id, |_| Ok(Outcome::Cancelled))
    }

    /// Cancels every pending request of a session; returns how many were cancelled.
    pub fn cancel_session(&self, session_id: &str) -> usize {
        self.registry.cancel_session(session_id, &self.actor)
    }

    /// Pending requests in ascending id (creation) order, all or one session's.
    pub fn list(&self, session_id: Option<&str>) -> Vec<Arc<QuestionRequest>> {
        self.registry.page(session_id, None, usize::MAX)
    }

    /// One page of [`list`](Self::list): at most `limit` pending requests, all or one
    /// session's, with ids above `after` (the last id of the previous page). Ids ascend
    /// in creation order, so a page read after another continues it, whatever was asked
    /// or answered in between. In a [`RequestHub`](crate::RequestHub) both kinds draw
    /// their ids from one order, so an approval id is a cursor here too.
    ///
    /// Costs `O(log n + limit)` for `n` pending requests, with or without a session.
    ///
    /// # Examples
    ///
    /// ```
    /// use askbus_bus::Bus;
    /// use askbus_question::{QuestionInfo, QuestionOption, QuestionService, RequestId, Timeout};
    ///
    /// let questions = QuestionService::new(Bus::new());
    /// let ask = || {
    ///     let info = QuestionInfo::new("Deploy now?", "Deploy", [QuestionOption::new("Yes", "")]);
    ///     questions.ask("s1", vec![info]).timeout(Timeout::Never).submit().unwrap().detach()
    /// };
    /// let (first, second, third) = (ask(), ask(), ask());
    /// let page = questions.page(Some("s1"), None, 2);
    /// assert_eq!([page[0].id, page[1].id], [first.id, second.id]);
    /// let next = questions.page(Some("s1"), Some(RequestId::Question(page[1].id)), 2);
    /// assert_eq!(next.len(), 1);
    /// assert_eq!(next[0].id, third.id);
    /// ```
    pub fn page(
        &self,
        session_id: Option<&str>,
        after: Option<RequestId>,
        limit: usize,
    ) -> Vec<Arc<QuestionRequest>> {
        self.registry.page(session_id, after, limit)
    }

    /// Rejects every pending request of `session_id` with `reason`; returns each
    /// rejection's [`Durable`] (see [`RequestHub::reject_session`](crate::RequestHub::reject_session)).
    pub(crate) fn reject_session(
        &self,
        session_id: &str,
        reason: Option<&str>,
    ) -> Result<Vec<(OutcomeKind, Durable)>, NotAllowed> {
        self.registry
            .resolve_session(session_id, &self.actor, |_| Outcome::Rejected {
                reason: reason.map(str::to_owned),
            })
    }

    /// How many requests are pending.
    pub fn pending_count(&self) -> usize {
        self.registry.pending_count()
    }

    /// One request, pending or (if still remembered) resolved with its outcome.
    pub fn get(&self, id: QuestionId) -> Option<QuestionSnapshot> {
        self.registry.get(id)
    }

    /// The id of the request with this key (`{session_id}_{n}`, its `approval_key`), if it
    /// is pending or remembered.
    pub fn id_for_key(&self, approval_key: &str) -> Option<QuestionId> {
        self.registry
            .read_index(|keys| keys.id_for_key(approval_key))
    }

    /// Waits for a request's outcome without owning it: dropping this future does not
    /// cancel the request. Answers at once for a remembered resolved request.
    ///
    /// # Errors
    ///
    /// [`ReplyError::NotFound`] if the id is neither pending nor remembered;
    /// [`ReplyError::NotRecorded`] if the store could not record the outcome.
    pub async fn wait(&self, id: QuestionId) -> Result<QuestionOutcome, ReplyError> {
        self.registry
            .wait(id)
            .await
            .ok_or(ReplyError::NotFound(id))?
            .map_err(|why| ReplyError::NotRecorded { id, why })
    }

    /// The oldest pending request of a session.
    pub(crate) fn oldest_pending(&self, session_id: &str) -> Option<Arc<QuestionRequest>> {
        self.registry.oldest_pending(session_id)
    }

    /// Whether any pending or remembered request belongs to `session_id`.
    pub(crate) fn knows_session(&self, session_id: &str) -> bool {
        self.registry.knows_session(session_id)
    }

    fn resolve(
        &self,
        id: QuestionId,
        decide: impl FnOnce(&QuestionRequest) -> Result<Outcome<Answers>, ValidationError>,
    ) -> Result<Durable, ReplyError> {
        self.registry
            .resolve(id, Some(&self.actor), decide)
            .map_err(|error| match error {
                ResolveError::NotFound => ReplyError::NotFound(id),
                ResolveError::AlreadyResolved(outcome) => {
                    ReplyError::AlreadyResolved { id, outcome }
                }
                ResolveError::Refused(invalid) => ReplyError::Invalid(invalid),
                ResolveError::NotAllowed(refused) => ReplyError::NotAllowed(refused),
            })
    }
}

impl PendingQuestion {
    /// The request's id.
    pub fn id(&self) -> QuestionId {
        self.ticket.request().id
    }

    /// The request as registered.
    pub fn request(&self) -> &Arc<QuestionRequest> {
        self.ticket.request()
    }

    /// Completes once the request is durable in the service's store (at once without a
    /// store, or when this future joined an earlier request of the same tool call): await
    /// it before handing the id to a remote asker.
    pub fn recorded(&mut self) -> Durable {
        self.ticket.recorded()
    }

    /// Leaves the question pending without an in-process asker; its outcome can still be
    /// collected with [`QuestionService::wait`] or [`QuestionService::get`].
    pub fn detach(self) -> Arc<QuestionRequest> {
        self.ticket.detach()
    }
}

impl Future for PendingQuestion {
    type Output = Result<Vec<Answer>, AskError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let outcome = std::task::ready!(self.ticket.poll_outcome(cx));
        Poll::Ready(match outcome {
            Ok(Outcome::Replied(answers)) => Ok(answers.to_vec()),
            Ok(Outcome::Rejected { reason }) => Err(AskError::Rejected { reason }),
            Ok(Outcome::TimedOut) => Err(AskError::TimedOut),
            Ok(Outcome::Defaulted(answers)) => Err(AskError::DefaultApplied {
                answers: answers.to_vec(),
            }),
            Ok(Outcome::Cancelled) => Err(AskError::Cancelled),
            Err(unrecorded) => Err(AskError::NotRecorded(unrecorded)),
        })
    }
}

impl std::fmt::Debug for PendingQuestion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingQuestion")
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use askbus_bus::Bus;

    use crate::{QuestionInfo, QuestionOption, QuestionService, Timeout};

    /// A server-mode agent re-polls `wait` for as long as the human takes; each poll that
    /// runs out must not leave its waiter behind, or a question nobody answers grows
    /// without bound.
    #[tokio::test(start_paused = true)]
    async fn long_polls_that_run_out_leave_nothing_behind() {
        let service = QuestionService::new(Bus::new());
        let question = QuestionInfo::new("Ship it?", "Ship", [QuestionOption::new("Yes", "")]);
        let pending = service
            .ask("session", vec![question])
            .timeout(Timeout::Never)
            .submit()
            .expect("a valid question");
        let id = pending.id();
        for _ in 0..100 {
            let poll = tokio::time::timeout(Duration::from_secs(30), service.wait(id)).await;
            assert!(poll.is_err(), "nobody answered, so every poll runs out");
        }
        assert!(service.registry.watcher_count(id) <= 1);

        let waiting = tokio::spawn({
            let service = service.clone();
            async move { service.wait(id).await }
        });
        tokio::task::yield_now().await;
        drop(
            service
                .reply(id, vec![vec!["Yes".to_owned()]])
                .expect("pending"),
        );
        let outcome = waiting.await.expect("the wait ends").expect("a known id");
        assert!(matches!(outcome, crate::Outcome::Replied(_)), "{outcome:?}");
        assert_eq!(service.registry.watcher_count(id), 0);
        drop(pending);
    }
}
