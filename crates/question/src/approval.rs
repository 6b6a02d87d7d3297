//! The approval service: request a human's review of tool calls, and deliver their decisions.
//!
//! It runs on the same [registry](crate::registry) as questions, as a second kind: same
//! ordering, same single outcome per request, same timer, same drop-cancels rule. What is
//! its own: the `approval_key`, the decisions, and their validation.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use askbus_bus::Bus;
use askbus_bus::Event;
use askbus_store::{RequestKind, SessionEvent, Store, StoreError};

use crate::approval_model::{
    Action, ApprovalAsked, ApprovalCancelled, ApprovalDecided, ApprovalEscalated,
    ApprovalGrantRevoked, ApprovalGranted, ApprovalNotRecorded, ApprovalReminded, ApprovalReplied,
    ApprovalReply, ApprovalRequest, ApprovalTimedOut, ApprovalVote, Decision, DecisionType,
    EditedAction, Grant, ReviewConfig,
};
use crate::args_schema;
use crate::durable::Durable;
use crate::error::{ApprovalError, ApprovalReplyError, SubmitError};
use crate::follow_up::{Due, FollowUp, Plan};
use crate::grant::Grants;
use crate::identity::{Identity, NotAllowed};
use crate::ids::{ApprovalId, ApprovalIdPrefix, RequestId};
use crate::keys::RequestKeys;
use crate::model::OnTimeout;
use crate::notify::EventSink;
use crate::outcome::{NeverRejected, Outcome, OutcomeKind, Snapshot, Vote};
use crate::quota::{Charge, Weight};
use crate::registry::{
    self, Refused, Registry, RequestType, ResolveError, SharedIds, StoreRole, Ticket, VoteOn,
};
use crate::terms::Terms;
use crate::validate;
use crate::validate::ValidationError;

/// Asks humans to approve tool calls and hands their decisions back to the asking task.
///
/// Cloning gives another handle to the same pending requests. To serve approvals and
/// questions together (one HTTP router, one session interrupt state), hold a
/// [`RequestHub`](crate::RequestHub), which owns one of each.
///
/// # Examples
///
/// ```
/// use askbus_bus::Bus;
/// use askbus_question::{Action, ApprovalReply, ApprovalService, Decision, Timeout};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let approvals = ApprovalService::new(Bus::new());
/// let trade = Action::new("execute_trade", json!({"symbol": "VNM", "quantity": 100}));
/// let pending = approvals.request("abc-123", vec![trade]).submit().unwrap();
/// assert_eq!(&*pending.request().approval_key, "abc-123_1");
///
/// // Elsewhere, a human approves (in a real system: over HTTP, by id or by key).
/// let id = approvals.id_for_key("abc-123_1").unwrap();
/// approvals.reply(id, ApprovalReply::new([Decision::Approve])).unwrap();
///
/// assert_eq!(pending.await.unwrap().decisions, vec![Decision::Approve]);
/// # }
/// ```
#[derive(Clone)]
pub struct ApprovalService {
    /// The pending and recently resolved approval requests.
    registry: Registry<Approvals>,
    /// Defaults applied to every request.
    config: ApprovalConfig,
    /// The account new requests are charged to
    /// ([`RequestHub::for_account`](crate::RequestHub::for_account)).
    pub(crate) account: Option<Arc<str>>,
    /// Who this handle acts as: the asker of its new requests, the decider of its replies
    /// ([`RequestHub::acting_as`](crate::RequestHub::acting_as)); [`Identity::local`] by
    /// default.
    pub(crate) actor: Identity,
    /// The operator's least quorum per tool, once set
    /// ([`RequestHub::with_quorum_floor`](crate::RequestHub::with_quorum_floor)); shared by
    /// every handle on this service.
    pub(crate) quorum_floor: Arc<OnceLock<QuorumFloor>>,
    /// The follow-up of requests that leave parts of theirs out, once set
    /// ([`RequestHub::with_follow_up`](crate::RequestHub::with_follow_up)); shared by every
    /// handle on this service. Never a default answer.
    pub(crate) follow_up: Arc<OnceLock<FollowUp>>,
    /// Every session's standing grants (`always`), shared by every handle on this service.
    grants: Grants,
}

/// The least quorum an operator requires of approvals: for every tool, and per tool. A
/// request may ask for more reviewers (`review_configs[].quorum`), never fewer: the
/// request's review configs are raised to the floor when it is made, so what reviewers see
/// (and what the store keeps) is what is enforced. The agent writes its requests, and is
/// not trusted to ask for its own reviewers: this is how the server's operator does.
///
/// # Examples
///
/// ```
/// use askbus_question::QuorumFloor;
///
/// let floor: QuorumFloor = "drop_table=2".parse().unwrap();
/// let floor = floor.and("*=1".parse().unwrap());
/// assert_eq!((floor.of("drop_table"), floor.of("read_file")), (2, 1));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumFloor {
    /// The least quorum of every tool (`*=M`); 1 when unset.
    every_tool: u32,
    /// The least quorum of tools by name (`NAME=M`).
    tools: BTreeMap<String, u32>,
}

/// Settings of an [`ApprovalService`].
#[derive(Debug, Clone, Copy)]
pub struct ApprovalConfig {
    /// Timeout applied by [`Timeout::Default`](crate::Timeout::Default); `None` waits forever. Default: 300 s.
    pub default_timeout: Option<Duration>,
    /// How many resolved requests are remembered (for `get`, `wait`, 409 answers and
    /// addressing by key). Default: 10,000. The oldest are forgotten first.
    pub retain_resolved: usize,
    /// How many standing grants (`always`, see the `grant` module) one session may hold;
    /// `always` beyond is refused. Default: 32.
    pub max_grants_per_session: usize,
    /// How many standing grants every session together may hold; `always` beyond is
    /// refused. A grant keeps the arguments it approved, and sessions come and go, so
    /// without it grants would only grow. Default: 1,000.
    pub max_grants: usize,
}

/// The future of one approval request; resolves to one decision per action, or the reason
/// there are none.
///
/// # Cancel safety
///
/// Dropping it before it completes **cancels the request** (`approval.cancelled`). Use
/// [`PendingApproval::detach`] to leave it pending for someone else to collect.
#[must_use = "dropping a PendingApproval cancels the request"]
pub struct PendingApproval {
    /// The registered request and where its outcome arrives.
    ticket: Ticket<Approvals>,
}

/// An approval request with its outcome (`None` while pending). A replied outcome holds
/// exactly one decision per action.
pub type ApprovalSnapshot = Snapshot<ApprovalRequest, Arc<ApprovalReply>, NeverRejected>;

/// An approval request's terminal outcome.
pub type ApprovalOutcome = Outcome<Arc<ApprovalReply>, NeverRejected>;

/// Plugs approvals into the generic registry.
pub(crate) enum Approvals {}

/// The approval keys of the requests a registry remembers.
pub(crate) type ApprovalKeys = RequestKeys<ApprovalIdPrefix>;

impl RequestType for Approvals {
    type IdPrefix = ApprovalIdPrefix;
    type Request = ApprovalRequest;
    type Reply = Arc<ApprovalReply>;
    type Rejection = NeverRejected;
    type Index = ApprovalKeys;

    fn new_index(ids: &SharedIds) -> Self::Index {
        RequestKeys::new(Arc::clone(&ids.keys))
    }

    const RECORD_KIND: RequestKind = RequestKind::Approval;

    fn id(request: &ApprovalRequest) -> ApprovalId {
        request.id
    }

    fn request_id(id: ApprovalId) -> RequestId {
        RequestId::Approval(id)
    }

    fn session_id(request: &ApprovalRequest) -> &Arc<str> {
        &request.session_id
    }

    /// The `tool_use_id` of the first action: the model's call that asked for review.
    fn call_id(request: &ApprovalRequest) -> Option<&str> {
        request
            .action_requests
            .first()
            .and_then(|action| action.tool_use_id.as_deref())
    }

    /// The calls, their review configs, and whom the request escalates to: everything that
    /// says what a decision decides and who may take it.
    type Content = (Vec<Action>, Vec<ReviewConfig>, Vec<String>);

    fn content_weight((actions, review_configs, _): &Self::Content) -> Weight {
        Weight::of(&(actions, review_configs))
    }

    fn weight(request: &ApprovalRequest) -> Weight {
        Weight::of(&(&request.action_requests, &request.review_configs))
    }

    /// The same calls (names, arguments, call ids, descriptions) in the same order, under
    /// the same review configs and escalating to the same people: a decision allowed by
    /// other configs, taken on other arguments, or by someone the ask did not name, is not
    /// one this ask allows (an agent asking first with `escalate_to` of its choosing must
    /// not add deciders to the call its runtime's guard then asks about).
    fn asks(
        request: &ApprovalRequest,
        (actions, review_configs, escalate_to): &Self::Content,
    ) -> bool {
        request.action_requests == *actions
            && request.review_configs == *review_configs
            && request.escalate_to == *escalate_to
    }

    fn expires_at(request: &ApprovalRequest) -> Option<u64> {
        request.expires_at
    }

    fn remember(keys: &mut ApprovalKeys, request: &ApprovalRequest) {
        keys.remember(&request.session_id, &request.approval_key, request.id);
    }

    fn forget(keys: &mut ApprovalKeys, request: &ApprovalRequest) {
        keys.forget(&request.session_id, &request.approval_key, request.id);
    }

    fn announce_asked(to: &mut impl EventSink, request: &Arc<ApprovalRequest>) {
        to.announce(ApprovalAsked {
            request: Arc::clone(request),
        });
    }

    fn asked_by(request: &ApprovalRequest) -> Option<&Identity> {
        request.asked_by.as_ref()
    }

    fn announce_outcome(
        to: &mut impl EventSink,
        request: &Arc<ApprovalRequest>,
        outcome: &ApprovalOutcome,
        by: Option<&Identity>,
    ) {
        let session_id = Arc::clone(&request.session_id);
        let request_id = request.id;
        let approval_key = Arc::clone(&request.approval_key);
        match outcome {
            Outcome::Replied(reply) => to.announce(ApprovalReplied {
                session_id,
                request_id,
                approval_key,
                reply: Arc::clone(reply),
                answered_by: by.cloned(),
            }),
            Outcome::Rejected { reason } => match *reason {},
            // An approval never takes a default answer (refused when it is made): should one
            // reach here, every action is rejected all the same.
            Outcome::TimedOut | Outcome::Defaulted(_) => {
                to.announce(ApprovalTimedOut {
                    session_id,
                    request_id,
                    approval_key,
                    decisions: request.rejections(),
                    fallback: request.on_timeout.as_ref().map(OnTimeout::as_str),
                });
            }
            Outcome::Cancelled => to.announce(ApprovalCancelled {
                session_id,
                request_id,
                approval_key,
            }),
        };
    }

    fn announce_not_recorded(
        to: &mut impl EventSink,
        request: &Arc<ApprovalRequest>,
        outcome: OutcomeKind,
    ) {
        to.announce(ApprovalNotRecorded {
            session_id: Arc::clone(&request.session_id),
            request_id: request.id,
            approval_key: Arc::clone(&request.approval_key),
            outcome,
        });
    }

    fn follow_up_at(request: &ApprovalRequest) -> (Option<u64>, Option<u64>) {
        (request.remind_at, request.escalate_at)
    }

    fn escalates_to(request: &ApprovalRequest, by: &Identity) -> bool {
        request.escalate_to.iter().any(|name| **name == *by.name)
    }

    fn on_timeout(request: &ApprovalRequest) -> Option<&OnTimeout> {
        request.on_timeout.as_ref()
    }

    /// Always a timeout: an approval has no default answer.
    fn timeout_outcome(_: &ApprovalRequest) -> ApprovalOutcome {
        Outcome::TimedOut
    }

    /// No approval is rejected as a whole, so none was ever stored so; should a store hold
    /// one all the same, it reads back as what it was announced as: every action rejected,
    /// as on expiry.
    fn read_rejection(_: Option<String>) -> ApprovalOutcome {
        Outcome::TimedOut
    }

    fn announce_follow_up(to: &mut impl EventSink, request: &Arc<ApprovalRequest>, due: Due) {
        let session_id = Arc::clone(&request.session_id);
        let request_id = request.id;
        let approval_key = Arc::clone(&request.approval_key);
        match due {
            Due::Remind => to.announce(ApprovalReminded {
                session_id,
                request_id,
                approval_key,
            }),
            Due::Escalate => to.announce(ApprovalEscalated {
                session_id,
                request_id,
                approval_key,
                escalated_to: request.escalate_to.clone(),
            }),
            Due::Expire => {}
        }
    }

    fn quorum(request: &ApprovalRequest) -> u32 {
        request.quorum()
    }

    fn names_decider(request: &ApprovalRequest, by: &Identity) -> bool {
        request.names_reviewer(&by.name)
    }

    /// A vote that runs nothing needs no quorum: no one reviewer can make a tool run, but
    /// any one can stop it.
    fn vetoes(reply: &Arc<ApprovalReply>) -> bool {
        reply.runs_nothing()
    }

    fn granted(reply: &Arc<ApprovalReply>) -> bool {
        !reply.auto_approved_by.is_empty()
    }

    fn agree(one: &Arc<ApprovalReply>, other: &Arc<ApprovalReply>) -> bool {
        one.agrees_with(other)
    }

    fn settle(
        deciding: &Arc<ApprovalReply>,
        votes: &[Vote<Arc<ApprovalReply>>],
    ) -> Arc<ApprovalReply> {
        let mut reply = ApprovalReply::clone(deciding);
        reply.votes = votes.iter().map(ApprovalVote::from).collect();
        Arc::new(reply)
    }

    fn vote_record(
        request: &ApprovalRequest,
        vote: &Vote<Arc<ApprovalReply>>,
        agreeing: u32,
    ) -> Option<SessionEvent> {
        let decided = ApprovalDecided::of(request, vote, agreeing);
        Some(SessionEvent {
            session_id: request.session_id.to_string(),
            event_type: ApprovalDecided::TYPE.to_owned(),
            properties: serde_json::to_string(&decided).ok()?,
        })
    }

    fn read_vote(event: &SessionEvent) -> Option<VoteOn<Self>> {
        if event.event_type != ApprovalDecided::TYPE {
            return None;
        }
        let decided: ApprovalDecided = serde_json::from_str(&event.properties).ok()?;
        let ApprovalVote {
            id,
            decided_by,
            decisions,
            user_edit_content,
            ..
        } = decided.vote;
        let reply = ApprovalReply {
            decisions,
            user_edit_content,
            ..ApprovalReply::default()
        };
        Some((
            decided.request_id,
            Vote {
                by: decided_by,
                reply: Arc::new(reply),
                id,
            },
        ))
    }

    fn publish_vote(
        bus: &Bus,
        request: &Arc<ApprovalRequest>,
        vote: &Vote<Arc<ApprovalReply>>,
        agreeing: u32,
    ) {
        bus.publish(ApprovalDecided::of(request, vote, agreeing));
    }
}

impl ApprovalDecided {
    /// The event of `vote` on `request`, with `agreeing` votes alike so far.
    fn of(request: &ApprovalRequest, vote: &Vote<Arc<ApprovalReply>>, agreeing: u32) -> Self {
        Self {
            session_id: Arc::clone(&request.session_id),
            request_id: request.id,
            approval_key: Arc::clone(&request.approval_key),
            vote: ApprovalVote::from(vote),
            agreeing,
            quorum: request.quorum(),
        }
    }
}

impl From<&Vote<Arc<ApprovalReply>>> for ApprovalVote {
    fn from(vote: &Vote<Arc<ApprovalReply>>) -> Self {
        Self {
            decided_by: vote.by.clone(),
            decisions: vote.reply.decisions.clone(),
            user_edit_content: vote.reply.user_edit_content.clone(),
            id: vote.id,
            decided_at: vote.id.timestamp_ms(),
        }
    }
}

impl From<SubmitError> for ApprovalError {
    fn from(error: SubmitError) -> Self {
        match error {
            SubmitError::Invalid(invalid) => Self::Invalid(invalid),
            SubmitError::OverQuota(exceeded) => Self::OverQuota(exceeded),
            SubmitError::NotAllowed(refused) => Self::NotAllowed(refused),
        }
    }
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            default_timeout: Some(Duration::from_secs(300)),
            retain_resolved: 10_000,
            max_grants_per_session: 32,
            max_grants: 1_000,
        }
    }
}

impl ApprovalService {
    /// A service publishing on `bus`, with the default [`ApprovalConfig`].
    pub fn new(bus: Bus) -> Self {
        Self::with_config(bus, ApprovalConfig::default())
    }

    /// A service publishing on `bus` with `config`.
    pub fn with_config(bus: Bus, config: ApprovalConfig) -> Self {
        Self::sharing_ids(bus, config, registry::new_ids())
    }

    /// As [`with_config`](Self::with_config), drawing ids from `ids` (shared with the other
    /// kind's service of a hub).
    pub(crate) fn sharing_ids(bus: Bus, config: ApprovalConfig, ids: SharedIds) -> Self {
        Self {
            registry: Registry::new(bus, config.retain_resolved, ids),
            config,
            account: None,
            actor: Identity::local(),
            quorum_floor: Arc::default(),
            follow_up: Arc::default(),
            grants: Grants::default(),
        }
    }

    /// A service that records every request and decision in `store`, and starts with what
    /// the store already holds (as [`QuestionService::with_store`](crate::QuestionService::with_store)
    /// does for questions); approval keys continue where each session's left off.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the store cannot be read.
    pub async fn with_store(
        bus: Bus,
        config: ApprovalConfig,
        store: Arc<dyn Store>,
    ) -> Result<Self, StoreError> {
        Self::restore_sharing_ids(bus, config, registry::new_ids(), store, StoreRole::Record).await
    }

    /// As [`with_store`](Self::with_store), drawing ids from `ids`.
    pub(crate) async fn restore_sharing_ids(
        bus: Bus,
        config: ApprovalConfig,
        ids: SharedIds,
        store: Arc<dyn Store>,
        role: StoreRole,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            registry: Registry::restore(bus, config.retain_resolved, ids, store, role).await?,
            config,
            account: None,
            actor: Identity::local(),
            quorum_floor: Arc::default(),
            follow_up: Arc::default(),
            grants: Grants::default(),
        })
    }

    /// The bus this service publishes on.
    pub fn bus(&self) -> &Bus {
        self.registry.bus()
    }

    /// The registry behind this service.
    pub(crate) fn registry(&self) -> &Registry<Approvals> {
        &self.registry
    }

    /// Registers a request: what [`ApprovalAsk::submit`] does.
    pub(crate) fn submit_request(
        &self,
        session_id: Arc<str>,
        actions: Vec<Action>,
        review_configs: Vec<ReviewConfig>,
        terms: Terms,
    ) -> Result<PendingApproval, SubmitError> {
        let Terms {
            timeout,
            follow_up,
            locale,
        } = terms;
        validate::check_locale(locale.as_deref())?;
        let mut review_configs = review_configs;
        if let Some(floor) = self.quorum_floor.get() {
            floor.raise(&actions, &mut review_configs);
        }
        check_request(&session_id, &actions, &review_configs)?;
        let plan = Plan::new(
            timeout,
            self.config.default_timeout,
            follow_up,
            self.follow_up.get().unwrap_or(&FollowUp::default()),
            |_| Err(ValidationError::request(NO_DEFAULT_APPROVAL)),
        )?;
        let call = actions
            .first()
            .and_then(|action| action.tool_use_id.clone())
            .map(|call_id| (Arc::clone(&session_id), call_id));
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
            (actions, review_configs, plan.escalate_to.clone()),
            |id, keys, (actions, review_configs, escalate_to)| {
                let created_at = id.timestamp_ms();
                ApprovalRequest {
                    id,
                    approval_key: keys.assign(&session_id, id),
                    session_id,
                    action_requests: actions,
                    review_configs,
                    created_at,
                    expires_at: plan.expires_at(created_at),
                    asked_by: Some(asker),
                    remind_at: plan.remind_at(created_at),
                    escalate_at: plan.escalate_at(created_at),
                    escalate_to,
                    on_timeout: plan.on_timeout.clone(),
                    locale,
                }
            },
            plan.timers,
        );
        match ticket {
            Ok(ticket) => {
                self.apply_grants(ticket.request());
                Ok(PendingApproval { ticket })
            }
            Err(Refused::CallReused(earlier)) => Err(ValidationError::call_reused(
                RequestId::Approval(earlier),
                format!(
                    "tool_use_id {:?} already names approval request {earlier} of other calls, review or escalation in this session; give these calls a new tool_use_id, or leave it out",
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

    /// Answers a pending request.
    ///
    /// Fewer decisions than actions: the first decision fills the rest, unless it is an
    /// `edit` (an edit replaces one call, never several). An `edit` keeps the action's
    /// tool and gives it other arguments: a JSON object, fitting the action's
    /// `args_schema` when it has one. These checks are here, so every way a reply comes
    /// in (HTTP, MCP, a session resume, the tools, the guard) passes them. The stored and published reply
    /// always holds one decision per action.
    ///
    /// # Errors
    ///
    /// [`ApprovalReplyError::NotFound`], [`ApprovalReplyError::AlreadyResolved`], or
    /// [`ApprovalReplyError::Invalid`] (naming the action) for no decision, more decisions
    /// than actions, a lone `edit` for several actions, a decision the action's review
    /// config does not allow, or an `edit` that names another tool, whose `args` are not a
    /// JSON object, or whose `args` do not fit the action's `args_schema` (the message names
    /// the field). A refused reply changes nothing: the request stays pending.
    pub fn reply(
        &self,
        id: ApprovalId,
        reply: ApprovalReply,
    ) -> Result<Durable, ApprovalReplyError> {
        self.resolve(id, |request| {
            Ok(Outcome::Replied(Arc::new(complete_reply(request, reply)?)))
        })
    }

    /// Approves a pending request, and grants its tool calls for the rest of the session:
    /// the session's requests whose every action calls the same tool with a pattern the
    /// grant matches, pending now or asked later, are approved without asking (see the
    /// `grant` module).
    /// Returns the grant with the [`Durable`] of the approval. With a store the grant
    /// stands once the approval is durable (as that `Durable` completes, or in the
    /// background if it is dropped), and never if the store could not record it.
    ///
    /// The grant is this handle's identity's: it must be one that may decide the request
    /// (the same check as every reply), and it is published as `approval.granted`.
    ///
    /// # Errors
    ///
    /// As [`reply`](Self::reply) for an approval of every action; also
    /// [`ApprovalReplyError::Invalid`] when the request calls more than one tool, needs a
    /// quorum, or its session holds
    /// [`max_grants_per_session`](ApprovalConfig::max_grants_per_session) grants already
    /// (or all sessions [`max_grants`](ApprovalConfig::max_grants)),
    /// or the store is shared with other instances (which could not see the grant).
    /// A refused `always` changes nothing: the request stays pending.
    pub fn reply_always(&self, id: ApprovalId) -> Result<(Durable, Grant), ApprovalReplyError> {
        if self.registry.is_shared() {
            // Grants live in one process: over a shared store another instance could
            // neither show nor revoke one, yet this one would go on applying it.
            return Err(ValidationError::request(
                "`always` is not available when several servers share the store (a grant would live in one of them): approve once",
            )
            .into());
        }
        let limits = (self.config.max_grants_per_session, self.config.max_grants);
        let mut made = None;
        let durable = self.resolve(id, |request| {
            if request.quorum() > 1 {
                return Err(ValidationError::request(
                    "`always` cannot stand for a quorum of reviewers: approve it once",
                ));
            }
            let grant = Grant::of(request, &self.actor)?;
            self.grants.check_room(&request.session_id, limits)?;
            let mut reply = complete_reply(request, ApprovalReply::new([Decision::Approve]))?;
            reply.granted = Some(Box::new(grant.clone()));
            made = Some(grant);
            Ok(Outcome::Replied(Arc::new(reply)))
        })?;
        // `resolve` succeeds only through the closure's `Ok`, which set it.
        let grant = made.ok_or(ApprovalReplyError::NotFound(id))?;
        if self.registry.store().is_none() {
            self.stand(&grant);
            return Ok((durable, grant));
        }
        // With a store, the grant stands once its approval is durable, whether or not
        // anyone awaits this: an approval the store could not record reaches no agent, and
        // must not go on approving calls.
        let (service, standing) = (self.clone(), grant.clone());
        let durable = Durable::decided(async move {
            durable.await?;
            service.stand(&standing);
            Ok(())
        });
        Ok((durable, grant))
    }

    /// Makes `grant` stand: listed, published as `approval.granted`, and applied at once to
    /// what its session has pending that it covers, as OpenCode's `always` does, not only
    /// to what the session asks later.
    fn stand(&self, grant: &Grant) {
        self.grants.record(grant.clone());
        self.bus().publish(ApprovalGranted {
            grant: grant.clone(),
        });
        for pending in self.list(Some(&grant.session_id)) {
            self.apply_grants(&pending);
        }
    }

    /// A session's standing grants, oldest first.
    pub fn grants(&self, session_id: &str) -> Vec<Grant> {
        self.grants.list(session_id)
    }

    /// Revokes grant `id` (the id of the request that made it) of `session_id`, as this
    /// handle's identity: later calls are asked of a human again. Publishes
    /// `approval.grant_revoked` and appends its receipt to the store's audit log; returns
    /// the grant with the [`Durable`] of that receipt, or `None` if the session holds no
    /// such grant.
    pub fn revoke_grant(&self, session_id: &str, id: ApprovalId) -> Option<(Grant, Durable)> {
        // Under the registry's lock, as a grant's approvals are made: one made before is
        // queued before this receipt, and none is made after it (see `apply_grants`).
        let (grant, receipt) = self.registry.exclusively(|| {
            let grant = self.grants.revoke(session_id, id)?;
            let receipt = self
                .registry
                .record_audit(|| grant.revocation_receipt(&self.actor));
            Some((grant, receipt))
        })?;
        self.bus().publish(ApprovalGrantRevoked {
            grant: grant.clone(),
            revoked_by: self.actor.clone(),
        });
        Some((grant, receipt))
    }

    /// Approves the new `request` at once if the session's grants cover it, acting as the
    /// human who granted: the one place grants apply, whichever way the request came.
    /// A request the granter may not decide (it names other reviewers, or needs a quorum)
    /// stays pending for a human, as does one already resolved (a joined request).
    fn apply_grants(&self, request: &ApprovalRequest) {
        if request.quorum() > 1 {
            return;
        }
        let Some(grants) = self.grants.covering(request) else {
            return;
        };
        let Some(granter) = grants.first().map(|grant| grant.granted_by.clone()) else {
            return;
        };
        // One human stands behind the whole approval, or none does: calls granted by
        // different people are asked again, since each may decide only what they saw.
        if grants.iter().any(|grant| grant.granted_by != granter) {
            return;
        }
        let approved = self
            .registry
            .resolve(request.id, Some(&granter), |request| {
                // Read again under the registry's lock, which revoking holds too: a grant
                // revoked since the read above approves nothing.
                if self.grants.covering(request).as_ref() != Some(&grants) {
                    return Err(ValidationError::request(
                        "a grant covering it was revoked meanwhile",
                    ));
                }
                let mut reply = complete_reply(request, ApprovalReply::new([Decision::Approve]))?;
                reply.auto_approved_by = grants;
                Ok::<_, ValidationError>(Outcome::Replied(Arc::new(reply)))
            });
        match approved {
            // The asker is told once the store has the outcome, on its own time.
            Ok(durable) => drop(durable),
            Err(refused) => tracing::debug!(
                "approval request {} is covered by a grant but stays pending for a human: {refused:?}",
                request.id
            ),
        }
    }

    /// Cancels a pending request: the asker gets [`ApprovalError::Cancelled`].
    ///
    /// # Errors
    ///
    /// [`ApprovalReplyError::NotFound`] or [`ApprovalReplyError::AlreadyResolved`].
    pub fn cancel(&self, id: ApprovalId) -> Result<Durable, ApprovalReplyError> {
        self.resolve(id, |_| Ok(Outcome::Cancelled))
    }

    /// Cancels every pending request of a session; returns how many were cancelled.
    pub fn cancel_session(&self, session_id: &str) -> usize {
        self.registry.cancel_session(session_id, &self.actor)
    }

    /// Pending requests in ascending id (creation) order, all or one session's.
    pub fn list(&self, session_id: Option<&str>) -> Vec<Arc<ApprovalRequest>> {
        self.registry.page(session_id, None, usize::MAX)
    }

    /// One page of [`list`](Self::list): at most `limit` pending requests, all or one
    /// session's, with ids above `after` (the last id of the previous page; in a
    /// [`RequestHub`](crate::RequestHub) a question id is a cursor here too), as
    /// [`QuestionService::page`](crate::QuestionService::page) pages questions. Costs
    /// `O(log n + limit)`.
    pub fn page(
        &self,
        session_id: Option<&str>,
        after: Option<RequestId>,
        limit: usize,
    ) -> Vec<Arc<ApprovalRequest>> {
        self.registry.page(session_id, after, limit)
    }

    /// Refuses every pending request of `session_id`, so that none of its actions runs: a
    /// request whose every action allows `reject` is answered with a `reject` per action
    /// (`reason` as its message), any other one is cancelled (its review config does not
    /// let a reply refuse it all). Returns each outcome's kind with its [`Durable`].
    pub(crate) fn reject_session(
        &self,
        session_id: &str,
        reason: Option<&str>,
    ) -> Result<Vec<(OutcomeKind, Durable)>, NotAllowed> {
        self.registry
            .resolve_session(session_id, &self.actor, |request| {
                let rejectable = (0..request.action_requests.len()).all(|index| {
                    request
                        .allowed_decisions(index)
                        .contains(&DecisionType::Reject)
                });
                if !rejectable {
                    return Outcome::Cancelled;
                }
                let reject = Decision::Reject {
                    message: reason.map(str::to_owned),
                };
                let decisions = vec![reject; request.action_requests.len()];
                Outcome::Replied(Arc::new(ApprovalReply::new(decisions)))
            })
    }

    /// How many requests are pending.
    pub fn pending_count(&self) -> usize {
        self.registry.pending_count()
    }

    /// One request, pending or (if still remembered) resolved with its outcome.
    pub fn get(&self, id: ApprovalId) -> Option<ApprovalSnapshot> {
        self.registry.get(id)
    }

    /// The id of the request with this `approval_key`, if it is pending or remembered.
    pub fn id_for_key(&self, approval_key: &str) -> Option<ApprovalId> {
        self.registry
            .read_index(|keys| keys.id_for_key(approval_key))
    }

    /// Waits for a request's outcome without owning it: dropping this future does not
    /// cancel the request. Answers at once for a remembered resolved request.
    ///
    /// # Errors
    ///
    /// [`ApprovalReplyError::NotFound`] if the id is neither pending nor remembered;
    /// [`ApprovalReplyError::NotRecorded`] if the store could not record the outcome.
    pub async fn wait(&self, id: ApprovalId) -> Result<ApprovalOutcome, ApprovalReplyError> {
        self.registry
            .wait(id)
            .await
            .ok_or(ApprovalReplyError::NotFound(id))?
            .map_err(|why| ApprovalReplyError::NotRecorded { id, why })
    }

    /// The oldest pending request of a session.
    pub(crate) fn oldest_pending(&self, session_id: &str) -> Option<Arc<ApprovalRequest>> {
        self.registry.oldest_pending(session_id)
    }

    /// Whether any pending or remembered request belongs to `session_id`.
    pub(crate) fn knows_session(&self, session_id: &str) -> bool {
        self.registry.knows_session(session_id)
    }

    fn resolve(
        &self,
        id: ApprovalId,
        decide: impl FnOnce(&ApprovalRequest) -> Result<ApprovalOutcome, ValidationError>,
    ) -> Result<Durable, ApprovalReplyError> {
        self.registry
            .resolve(id, Some(&self.actor), decide)
            .map_err(|error| match error {
                ResolveError::NotFound => ApprovalReplyError::NotFound(id),
                ResolveError::AlreadyResolved(outcome) => {
                    ApprovalReplyError::AlreadyResolved { id, outcome }
                }
                ResolveError::Refused(invalid) => ApprovalReplyError::Invalid(invalid),
                ResolveError::NotAllowed(refused) => ApprovalReplyError::NotAllowed(refused),
            })
    }
}

impl ApprovalRequest {
    /// A `reject` decision for every action: what expiry means.
    pub fn rejections(&self) -> Vec<Decision> {
        vec![Decision::Reject { message: None }; self.action_requests.len()]
    }
}

impl PendingApproval {
    /// The request's id.
    pub fn id(&self) -> ApprovalId {
        self.ticket.request().id
    }

    /// The request as registered (with its `approval_key`).
    pub fn request(&self) -> &Arc<ApprovalRequest> {
        self.ticket.request()
    }

    /// Completes once the request is durable in the service's store (at once without a
    /// store, or when this future joined an earlier request of the same tool call).
    pub fn recorded(&mut self) -> Durable {
        self.ticket.recorded()
    }

    /// Leaves the request pending without an in-process asker; its outcome can still be
    /// collected with [`ApprovalService::wait`] or [`ApprovalService::get`].
    pub fn detach(self) -> Arc<ApprovalRequest> {
        self.ticket.detach()
    }
}

impl Future for PendingApproval {
    type Output = Result<ApprovalReply, ApprovalError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let outcome = std::task::ready!(self.ticket.poll_outcome(cx));
        Poll::Ready(match outcome {
            Ok(Outcome::Replied(reply)) => Ok(Arc::unwrap_or_clone(reply)),
            Ok(Outcome::TimedOut | Outcome::Defaulted(_)) => Err(ApprovalError::TimedOut),
            Ok(Outcome::Cancelled) => Err(ApprovalError::Cancelled),
            Err(unrecorded) => Err(ApprovalError::NotRecorded(unrecorded)),
        })
    }
}

impl std::fmt::Debug for PendingApproval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingApproval")
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

impl QuorumFloor {
    /// The larger floor of each tool, of `self` and `other`.
    #[must_use]
    pub fn and(mut self, other: Self) -> Self {
        self.every_tool = self.every_tool.max(other.every_tool);
        for (tool, quorum) in other.tools {
            let floor = self.tools.entry(tool).or_insert(quorum);
            *floor = (*floor).max(quorum);
        }
        self
    }

    /// The least quorum of approvals of `tool`: 1 (any one reviewer) unless set.
    pub fn of(&self, tool: &str) -> u32 {
        let named = self.tools.get(tool).copied().unwrap_or(1);
        named.max(self.every_tool).max(1)
    }

    /// The largest floor of any tool: how many reviewers a server needs at least.
    pub fn highest(&self) -> u32 {
        self.tools
            .values()
            .fold(self.every_tool.max(1), |highest, &quorum| {
                highest.max(quorum)
            })
    }

    /// Raises the quorum of each of `actions`' tools in `review_configs` to the floor,
    /// adding a config (every decision allowed) for a tool that has none.
    fn raise(&self, actions: &[Action], review_configs: &mut Vec<ReviewConfig>) {
        let mut seen = HashSet::new();
        for action in actions {
            let floor = self.of(&action.name);
            if floor <= 1 || !seen.insert(action.name.as_str()) {
                continue;
            }
            match review_configs
                .iter_mut()
                .find(|config| config.action_name == action.name)
            {
                Some(config) => {
                    config.quorum = Some(config.quorum.unwrap_or(1).max(floor));
                }
                None => review_configs.push(
                    ReviewConfig::new(action.name.clone(), DecisionType::ALL).with_quorum(floor),
                ),
            }
        }
    }
}

impl std::str::FromStr for QuorumFloor {
    type Err = String;

    /// `TOOL=M` (approvals of `TOOL` need `M` reviewers alike), or `*=M` (every tool's do).
    fn from_str(text: &str) -> Result<Self, String> {
        let (tool, quorum) = text
            .split_once('=')
            .ok_or_else(|| format!("expected TOOL=M or *=M, got {text:?}"))?;
        let quorum: u32 = quorum
            .trim()
            .parse()
            .ok()
            .filter(|quorum| (1..=MAX_QUORUM).contains(quorum))
            .ok_or_else(|| format!("{text:?}: M must be a whole number from 1 to {MAX_QUORUM}"))?;
        let tool = tool.trim();
        if tool.is_empty() {
            return Err(format!("{text:?}: name a tool, or `*` for every tool"));
        }
        Ok(if tool == "*" {
            Self {
                every_tool: quorum,
                tools: BTreeMap::new(),
            }
        } else {
            Self {
                every_tool: 1,
                tools: BTreeMap::from([(tool.to_owned(), quorum)]),
            }
        })
    }
}

/// Why an approval refuses a default answer on expiry.
const NO_DEFAULT_APPROVAL: &str = "an approval request cannot take a default answer on timeout (`on_timeout`): an agent must never get its own tool call approved by waiting; use `reject` or `escalate`";

/// The largest quorum a review config may ask for: more reviewers than any team has.
pub const MAX_QUORUM: u32 = 100;

/// Checks a new request: a session, at least one action, each named, and review configs
/// that each name an action's tool, once, and allow at least one decision (a request that
/// allows none could only time out).
fn check_request(
    session_id: &str,
    actions: &[Action],
    review_configs: &[ReviewConfig],
) -> Result<(), ValidationError> {
    if session_id.is_empty() {
        return Err(ValidationError::request("the session id is empty"));
    }
    validate::check_id_length("the session id", session_id)?;
    for action in actions {
        if let Some(call_id) = &action.tool_use_id {
            validate::check_id_length("a tool call's id (`tool_use_id`)", call_id)?;
        }
    }
    if actions.is_empty() {
        return Err(ValidationError::request(
            "an approval request needs at least one action",
        ));
    }
    if let Some(index) = actions
        .iter()
        .position(|action| action.name.trim().is_empty())
    {
        return Err(ValidationError::request(format!(
            "action {}: the action name is empty",
            index + 1
        )));
    }
    for (position, config) in review_configs.iter().enumerate() {
        let Some(index) = actions
            .iter()
            .position(|action| action.name == config.action_name)
        else {
            return Err(ValidationError::request(format!(
                "review config {} names {:?}, which is no action of this request",
                position + 1,
                config.action_name
            )));
        };
        if review_configs[..position]
            .iter()
            .any(|earlier| earlier.action_name == config.action_name)
        {
            return Err(ValidationError::request(format!(
                "{:?} has more than one review config",
                config.action_name
            )));
        }
        if config.quorum == Some(0) || config.quorum > Some(MAX_QUORUM) {
            return Err(ValidationError::action(
                index,
                format!(
                    "action {}: review_configs[{position}].quorum must be between 1 and {MAX_QUORUM} reviewers",
                    describe(index, &actions[index])
                ),
            ));
        }
        if config.allowed_decisions.is_empty() {
            return Err(ValidationError::action(
                index,
                format!(
                    "action {}: its review config allows no decision (`allowed_decisions` is empty), so nobody could ever decide it; list at least one, or leave `allowed_decisions` out to allow every decision",
                    describe(index, &actions[index])
                ),
            ));
        }
    }
    check_reviewers(review_configs)?;
    for (index, action) in actions.iter().enumerate() {
        if let Some(number) = inexact_integer(&action.args) {
            let path = format!("action_requests[{index}].args");
            return Err(ValidationError::action(
                index,
                format!(
                    "action {}: {}",
                    describe(index, action),
                    inexact_message(&action.args, number, &path)
                ),
            ));
        }
        check_args_schema(index, action)?;
    }
    Ok(())
}

/// The largest integer every JSON reader holds exactly: JavaScript's
/// `Number.MAX_SAFE_INTEGER`, 2^53 - 1.
const MAX_EXACT_INTEGER: u64 = (1 << 53) - 1;

/// An integer in `args` that a JavaScript reader, a browser above all, would round: the
/// reviewer would see `10000000000000000` and approve `10000000000000001`, so such a number
/// is refused (it must be sent as a string). Walked with a stack of its own: a value built
/// in process may nest deeper than a parser allows. No path is built unless one is found.
fn inexact_integer(args: &serde_json::Value) -> Option<&serde_json::Number> {
    let mut stack = vec![args];
    while let Some(value) = stack.pop() {
        match value {
            serde_json::Value::Number(number) if !is_exact(number) => return Some(number),
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(fields) => stack.extend(fields.values()),
            _ => {}
        }
    }
    None
}

/// Why `number`, found in `args` (named `path`) by [`inexact_integer`], is refused.
fn inexact_message(args: &serde_json::Value, number: &serde_json::Number, path: &str) -> String {
    format!(
        "{} is the integer {number}, which a browser or any JavaScript client rounds (it would show {}): the reviewer would not see the number that runs. Send integers beyond ±{MAX_EXACT_INTEGER} as strings",
        path_to(args, number, path),
        number.as_f64().unwrap_or_default()
    )
}

/// Whether every JSON reader holds `number` as it is.
fn is_exact(number: &serde_json::Number) -> bool {
    number
        .as_u64()
        .map(|n| n <= MAX_EXACT_INTEGER)
        .or_else(|| {
            number
                .as_i64()
                .map(|n| n.unsigned_abs() <= MAX_EXACT_INTEGER)
        })
        .unwrap_or(true)
}

/// The JSON path, from `root` named `path`, of the value that is `number` (by address).
fn path_to(root: &serde_json::Value, number: &serde_json::Number, path: &str) -> String {
    let mut stack = vec![(root, path.to_owned())];
    while let Some((value, path)) = stack.pop() {
        match value {
            serde_json::Value::Number(found) if std::ptr::eq(found, number) => return path,
            serde_json::Value::Array(items) => stack.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(index, item)| (item, format!("{path}[{index}]"))),
            ),
            serde_json::Value::Object(fields) => stack.extend(
                fields
                    .iter()
                    .map(|(name, field)| (field, format!("{path}.{name}"))),
            ),
            _ => {}
        }
    }
    path.to_owned()
}

/// Checks that the reviewers the review configs name could approve the request: a
/// reviewer must be named by every config that names reviewers, and the request needs as
/// many as its largest quorum (configs name only actions of the request: checked before).
fn check_reviewers(review_configs: &[ReviewConfig]) -> Result<(), ValidationError> {
    let mut named = review_configs
        .iter()
        .filter_map(|config| config.reviewers.as_ref());
    let Some(first) = named.next() else {
        return Ok(());
    };
    let mut eligible: HashSet<&str> = first
        .iter()
        .map(String::as_str)
        .filter(|name| !name.trim().is_empty())
        .collect();
    for reviewers in named {
        eligible.retain(|name| reviewers.iter().any(|reviewer| reviewer == name));
    }
    let quorum = review_configs
        .iter()
        .filter_map(|config| config.quorum)
        .fold(1, u32::max);
    if eligible.len() < usize::try_from(quorum).unwrap_or(usize::MAX) {
        return Err(ValidationError::request(format!(
            "the review configs need a quorum of {quorum}, but only {} distinct reviewer(s) are named by every config that names reviewers, so the request could never be approved",
            eligible.len()
        )));
    }
    Ok(())
}

/// Checks an action's `args_schema`, if it has one: a JSON Schema that refers to nothing
/// outside itself, and one the action's own `args` fit.
fn check_args_schema(index: usize, action: &Action) -> Result<(), ValidationError> {
    let Some(schema) = &action.args_schema else {
        return Ok(());
    };
    let validator = args_schema::compile(schema).map_err(|why| {
        ValidationError::action(
            index,
            format!(
                "action {}: action_requests[{index}].args_schema is not a JSON Schema this server can use (it must fit its meta-schema and refer to nothing outside itself): {why}",
                describe(index, action)
            ),
        )
    })?;
    args_schema::check(
        &validator,
        &action.args,
        &format!("action_requests[{index}].args"),
    )
    .map_err(|why| {
        ValidationError::action(
            index,
            format!(
                "action {}: its args do not fit its own args_schema: {why}",
                describe(index, action)
            ),
        )
    })
}

/// Checks a reply against its request and fills it to one decision per action with the
/// first decision.
///
/// The one check of an approval's reply, whichever way it came (HTTP, a link, Slack, MCP,
/// resume, the guard): a decision its review config allows for each action, a lone `edit`
/// for several actions refused (never copied), and every edit passing [`check_edit`]. A
/// refused reply changes nothing.
fn complete_reply(
    request: &ApprovalRequest,
    mut reply: ApprovalReply,
) -> Result<ApprovalReply, ValidationError> {
    let actions = &request.action_requests;
    let Some(first) = reply.decisions.first().cloned() else {
        return Err(ValidationError::request(format!(
            "expected a decision for each of the {} actions (or one for all), but got none",
            actions.len()
        )));
    };
    if reply.decisions.len() > actions.len() {
        return Err(ValidationError::request(format!(
            "decision {} has no action: got {} decisions for {} actions ({})",
            actions.len() + 1,
            reply.decisions.len(),
            actions.len(),
            describe_all(actions)
        )));
    }
    if reply.decisions.len() < actions.len() && matches!(first, Decision::Edit { .. }) {
        // An edit replaces one call with another; copied over the others, it would put
        // that call in place of tools the human never edited.
        return Err(ValidationError::request(format!(
            "an `edit` decision stands for one action only: give a decision for each of the {} actions ({})",
            actions.len(),
            describe_all(actions)
        )));
    }
    reply.decisions.resize(actions.len(), first);
    // The votes of a quorum and the grants are the service's to list, never a client's to
    // claim.
    reply.votes.clear();
    reply.granted = None;
    reply.auto_approved_by.clear();
    for (index, (action, decision)) in actions.iter().zip(&reply.decisions).enumerate() {
        let allowed = request.allowed_decisions(index);
        let decision_type = decision.decision_type();
        if !allowed.contains(&decision_type) {
            let allowed: Vec<&str> = allowed.iter().map(|allowed| allowed.as_str()).collect();
            return Err(ValidationError::action(
                index,
                format!(
                    "action {}: `{decision_type}` is not allowed; allowed: {}",
                    describe(index, action),
                    allowed.join(", ")
                ),
            ));
        }
        if let Decision::Edit { edited_action } = decision {
            check_edit(index, action, edited_action)?;
        }
    }
    Ok(reply)
}

/// Checks the edit of the action at `index`: it calls the same tool, with a JSON object
/// of arguments that fits the action's `args_schema`, if it has one. An edit replaces the
/// arguments a human reviewed, never the tool: a reviewer may not turn a call to one tool
/// into a call to another the agent never proposed (and its review config never covered).
fn check_edit(
    index: usize,
    action: &Action,
    edited_action: &EditedAction,
) -> Result<(), ValidationError> {
    let refuse = |problem: String| {
        ValidationError::action(
            index,
            format!("action {}: {problem}", describe(index, action)),
        )
    };
    if edited_action.name != action.name {
        return Err(refuse(format!(
            "decisions[{index}].edited_action.name is {:?}, but an `edit` keeps the action's tool {:?}: edit its args, or reject it",
            edited_action.name, action.name
        )));
    }
    if !edited_action.args.is_object() {
        return Err(refuse(format!(
            "decisions[{index}].edited_action.args must be a JSON object of arguments, not {}",
            json_type(&edited_action.args)
        )));
    }
    if let Some(number) = inexact_integer(&edited_action.args) {
        let path = format!("decisions[{index}].edited_action.args");
        return Err(refuse(inexact_message(&edited_action.args, number, &path)));
    }
    let Some(schema) = &action.args_schema else {
        return Ok(());
    };
    // Checked when the request was made; a request read back from a store may predate it.
    let validator = args_schema::compile(schema).map_err(|why| {
        refuse(format!(
            "its args_schema cannot be used, so no edit can be checked: {why}"
        ))
    })?;
    args_schema::check(
        &validator,
        &edited_action.args,
        &format!("decisions[{index}].edited_action.args"),
    )
    .map_err(|why| refuse(format!("the edited args do not fit its args_schema: {why}")))
}

/// `an array`: how a message names the type of a JSON value.
fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// `1 ("read"), 2 ("execute_trade")`: every action, as [`describe`] names one.
fn describe_all(actions: &[Action]) -> String {
    let described: Vec<String> = actions
        .iter()
        .enumerate()
        .map(|(index, action)| describe(index, action))
        .collect();
    described.join(", ")
}

/// `2 ("execute_trade")`: an action by one-based position and name.
fn describe(index: usize, action: &Action) -> String {
    format!("{} ({:?})", index + 1, action.name)
}
