//! The one way to make a request: [`QuestionService::ask`] and [`ApprovalService::request`].
//!
//! Each returns a builder that holds what the request needs (the session and what to ask)
//! and takes the rest as methods with defaults: the tool call it belongs to, its timeout,
//! its follow-up, its language. Awaiting the builder makes the request and waits for the
//! outcome; [`submit`](QuestionAsk::submit) makes it now and hands back the pending request
//! (its id is known before anyone answers), to await, detach or drop.
//!
//! ```
//! use std::time::Duration;
//!
//! use askbus_bus::Bus;
//! use askbus_question::{AskError, QuestionInfo, QuestionOption, QuestionService};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let questions = QuestionService::new(Bus::new());
//! let deploy = QuestionInfo::new("Deploy now?", "Deploy", [QuestionOption::new("Yes", "ship it")]);
//! let asked = questions
//!     .ask("session-1", vec![deploy])
//!     .timeout(Duration::from_secs(30))
//!     .locale("vi");
//! // Nobody answers: after 30 s (of paused, auto-advancing test time) the ask times out.
//! assert_eq!(asked.await, Err(AskError::TimedOut));
//! # }
//! ```
//!
//! Why builders: a request has one or two things every caller gives and four that most
//! leave as they are. Positional defaults (`None, Timeout::Default`) made every call
//! spell out what it did not care about, and each new option (follow-ups, then languages)
//! would have added a method or a parameter to every caller.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::terms::Terms;
use crate::{
    Action, Answer, ApprovalError, ApprovalReply, ApprovalService, AskError, FollowUp,
    PendingApproval, PendingQuestion, QuestionInfo, QuestionService, ReviewConfig, SubmitError,
    Timeout, ToolRef,
};

impl QuestionService {
    /// Asks `questions` on behalf of `session_id`: await the returned [`QuestionAsk`] for
    /// the answers, after setting what differs from the defaults (the tool call, the
    /// timeout, a follow-up, the language), or [`submit`](QuestionAsk::submit) it to have
    /// the pending request (and its id) first.
    ///
    /// Awaiting publishes `question.asked`, then resolves when a human replies or rejects,
    /// the timeout passes, or the session is cancelled.
    ///
    /// # Errors
    ///
    /// [`AskError::Invalid`] at once if the questions cannot be asked;
    /// [`AskError::OverQuota`] at once if too many requests are pending;
    /// [`AskError::NotRecorded`] if the service's store could not record them (nobody
    /// could see them) or the answer (nothing to act on); otherwise the non-answer outcome: [`AskError::Rejected`],
    /// [`AskError::TimedOut`], [`AskError::Cancelled`].
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the question (see [`PendingQuestion`]).
    pub fn ask(
        &self,
        session_id: impl Into<Arc<str>>,
        questions: Vec<QuestionInfo>,
    ) -> QuestionAsk<'_> {
        QuestionAsk::new(self, session_id.into(), questions)
    }
}

impl ApprovalService {
    /// Asks a human to approve `actions` (tool calls) on behalf of `session_id`: await the
    /// returned [`ApprovalAsk`] for the decisions, after setting what differs from the
    /// defaults (review configs, the timeout, a follow-up, the language), or
    /// [`submit`](ApprovalAsk::submit) it to have the pending request (its id and key)
    /// first.
    ///
    /// Awaiting publishes `approval.asked`, then resolves when a human replies (one
    /// decision per action, by position), the timeout passes, or the session is cancelled.
    /// An action may run only if its decision [runs](crate::Decision::runs).
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Invalid`] at once if the request cannot be made;
    /// [`ApprovalError::OverQuota`] at once if too many requests are pending;
    /// [`ApprovalError::NotRecorded`] if the service's store could not record it (nobody
    /// could see it) or the decisions (none may run); otherwise [`ApprovalError::TimedOut`] (every action rejected) or
    /// [`ApprovalError::Cancelled`].
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the request (see [`PendingApproval`]).
    pub fn request(
        &self,
        session_id: impl Into<Arc<str>>,
        actions: Vec<Action>,
    ) -> ApprovalAsk<'_> {
        ApprovalAsk::new(self, session_id.into(), actions)
    }
}

/// A question request being made: [`QuestionService::ask`]. Await it for the answers, or
/// [`submit`](Self::submit) it to have the pending request first.
#[must_use = "nothing is asked until the request is awaited or submitted"]
pub struct QuestionAsk<'a> {
    service: &'a QuestionService,
    session_id: Arc<str>,
    questions: Vec<QuestionInfo>,
    tool: Option<ToolRef>,
    terms: Terms,
}

impl<'a> QuestionAsk<'a> {
    pub(crate) fn new(
        service: &'a QuestionService,
        session_id: Arc<str>,
        questions: Vec<QuestionInfo>,
    ) -> Self {
        Self {
            service,
            session_id,
            questions,
            tool: None,
            terms: Terms::default(),
        }
    }

    /// The tool call that asks (or `None`). A call that already asked in this session
    /// joins its request instead of asking again (see [`submit`](Self::submit)).
    pub fn tool(mut self, tool: impl Into<Option<ToolRef>>) -> Self {
        self.tool = tool.into();
        self
    }

    /// How long a human has: a [`Duration`](std::time::Duration), [`Timeout::Never`], or
    /// [`Timeout::Default`] (the service's, 600 s unless configured; the default).
    pub fn timeout(mut self, timeout: impl Into<Timeout>) -> Self {
        self.terms.timeout = timeout.into();
        self
    }

    /// Reminders, an escalation, and what applies when nobody answered by the deadline
    /// (see [`FollowUp`]). Its parts left out are the service's defaults
    /// ([`RequestHub::with_follow_up`](crate::RequestHub::with_follow_up)).
    pub fn follow_up(mut self, follow_up: FollowUp) -> Self {
        self.terms.follow_up = follow_up;
        self
    }

    /// The language of the questions, as a BCP 47 tag (`"vi"`, `"zh-CN"`): the web UI and
    /// the tool speak it to whoever reads the request. Without it, each reader's own.
    pub fn locale(mut self, locale: impl Into<Arc<str>>) -> Self {
        self.terms.locale = Some(locale.into());
        self
    }

    /// Registers the request now and returns the future of its answers. Unlike awaiting
    /// the builder, the request exists (and `question.asked` is published) before this
    /// returns, so its id can be handed out first.
    ///
    /// **One request per tool call.** When the [tool call](Self::tool) already asked in
    /// this session, and that request is pending or still remembered, nothing new is
    /// asked: the future joins that request (an agent that re-asks after a restart, or
    /// retries a tool call, gets the one answer instead of a second prompt). The joining
    /// future cancels the request on drop only if the request had no live asker. It joins
    /// only a request of the same questions: the answer was given to what the human saw.
    /// Joining is never refused for quota: it adds no request.
    ///
    /// # Errors
    ///
    /// [`SubmitError::Invalid`] if the questions cannot be asked (or the timeout is longer
    /// than [`MAX_TIMEOUT`](crate::MAX_TIMEOUT), the locale is no language tag, a
    /// reminder or escalation is not before the deadline, an escalation has nobody to
    /// escalate to, a fallback has no deadline, or a default answer does not fit the
    /// questions), or if the tool call already asked other questions in this session
    /// ([`conflicting_request`](crate::ValidationError::conflicting_request) names that
    /// request, which is left as it was); [`SubmitError::OverQuota`] if a
    /// [limit](crate::PendingLimits) of pending requests is reached;
    /// [`SubmitError::NotAllowed`] if this handle's identity may not ask. Nothing was
    /// asked.
    pub fn submit(self) -> Result<PendingQuestion, SubmitError> {
        self.service
            .submit_request(self.session_id, self.questions, self.tool, self.terms)
    }
}

impl fmt::Debug for QuestionAsk<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("QuestionAsk")
            .field("session_id", &self.session_id)
            .field("questions", &self.questions)
            .field("tool", &self.tool)
            .field("terms", &self.terms)
            .finish_non_exhaustive()
    }
}

impl IntoFuture for QuestionAsk<'_> {
    type Output = Result<Vec<Answer>, AskError>;
    type IntoFuture = Asked<PendingQuestion, AskError>;

    /// Asks, and resolves when a human replies or rejects, the timeout passes, or the
    /// session is cancelled. Dropping the future cancels the question.
    fn into_future(self) -> Self::IntoFuture {
        Asked::new(self.submit().map_err(AskError::from))
    }
}

/// An approval request being made: [`ApprovalService::request`]. Await it for the
/// decisions, or [`submit`](Self::submit) it to have the pending request first.
#[must_use = "nothing is asked until the request is awaited or submitted"]
pub struct ApprovalAsk<'a> {
    service: &'a ApprovalService,
    session_id: Arc<str>,
    actions: Vec<Action>,
    review_configs: Vec<ReviewConfig>,
    terms: Terms,
}

impl<'a> ApprovalAsk<'a> {
    pub(crate) fn new(
        service: &'a ApprovalService,
        session_id: Arc<str>,
        actions: Vec<Action>,
    ) -> Self {
        Self {
            service,
            session_id,
            actions,
            review_configs: Vec::new(),
            terms: Terms::default(),
        }
    }

    /// Who decides each action and how ([`ReviewConfig`]); actions without one allow
    /// every decision, by anyone who may decide.
    pub fn review(mut self, review_configs: Vec<ReviewConfig>) -> Self {
        self.review_configs = review_configs;
        self
    }

    /// How long the reviewers have: a [`Duration`](std::time::Duration),
    /// [`Timeout::Never`], or [`Timeout::Default`] (the service's; the default).
    pub fn timeout(mut self, timeout: impl Into<Timeout>) -> Self {
        self.terms.timeout = timeout.into();
        self
    }

    /// Reminders, an escalation (whose `escalate_to` may decide the request from then on,
    /// beside the reviewers its review configs name), and `escalate` on expiry (see
    /// [`FollowUp`]). Its parts left out are the service's defaults.
    pub fn follow_up(mut self, follow_up: FollowUp) -> Self {
        self.terms.follow_up = follow_up;
        self
    }

    /// The language of the request, as a BCP 47 tag (`"vi"`, `"zh-CN"`): the web UI and
    /// the tool speak it to whoever reads it. Without it, each reader's own.
    pub fn locale(mut self, locale: impl Into<Arc<str>>) -> Self {
        self.terms.locale = Some(locale.into());
        self
    }

    /// Registers the request now and returns the future of its decisions. Unlike awaiting
    /// the builder, the request exists (and `approval.asked` is published) before this
    /// returns, so its id and key can be handed out first.
    ///
    /// **One request per tool call.** When the first action's `tool_use_id` already asked
    /// in this session, and that request is pending or still remembered, nothing new is
    /// asked: the future joins that request, but only if it reviews the same calls (the
    /// same actions with the same arguments, under the same review configs), since its
    /// decision was taken on what the human saw. Joining is never refused for quota: it
    /// adds no request.
    ///
    /// # Errors
    ///
    /// [`SubmitError::Invalid`] if the request cannot be made: no session, no action, an
    /// action without a name, an `args_schema` that is no JSON Schema (or refers to a
    /// document outside itself: nothing is fetched) or that the action's own `args` do not
    /// fit, a review config naming no action, repeating one, or allowing no decision, a
    /// timeout longer than [`MAX_TIMEOUT`](crate::MAX_TIMEOUT), a locale that is no
    /// language tag, a default answer ([`OnTimeout::Answer`](crate::OnTimeout::Answer):
    /// an agent must never get its own tool call approved by waiting), a reminder or
    /// escalation not before the deadline, an escalation with nobody to escalate to, a
    /// fallback without a deadline, or a `tool_use_id` that already asked about other calls
    /// in this session ([`conflicting_request`](crate::ValidationError::conflicting_request)
    /// names that request, which is left as it was); [`SubmitError::OverQuota`] if a
    /// [limit](crate::PendingLimits) of pending requests is reached;
    /// [`SubmitError::NotAllowed`] if this handle's identity may not ask. Nothing was
    /// asked.
    pub fn submit(self) -> Result<PendingApproval, SubmitError> {
        self.service.submit_request(
            self.session_id,
            self.actions,
            self.review_configs,
            self.terms,
        )
    }
}

impl fmt::Debug for ApprovalAsk<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ApprovalAsk")
            .field("session_id", &self.session_id)
            .field("actions", &self.actions)
            .field("review_configs", &self.review_configs)
            .field("terms", &self.terms)
            .finish_non_exhaustive()
    }
}

impl IntoFuture for ApprovalAsk<'_> {
    type Output = Result<ApprovalReply, ApprovalError>;
    type IntoFuture = Asked<PendingApproval, ApprovalError>;

    /// Asks, and resolves when the reviewers decide (one decision per action, by position),
    /// the timeout passes, or the session is cancelled. An action may run only if its
    /// decision [runs](crate::Decision::runs). Dropping the future cancels the request.
    fn into_future(self) -> Self::IntoFuture {
        Asked::new(self.submit().map_err(ApprovalError::from))
    }
}

/// The future of an awaited [`QuestionAsk`] or [`ApprovalAsk`]: the request's outcome, or
/// at once why it was not made. Dropping it cancels the request.
#[must_use = "dropping the future cancels the request"]
#[derive(Debug)]
pub struct Asked<P, E> {
    /// The pending request, or why there is none (taken when it is returned).
    state: Result<P, Option<E>>,
}

impl<P, E> Asked<P, E> {
    fn new(submitted: Result<P, E>) -> Self {
        Self {
            state: submitted.map_err(Some),
        }
    }
}

impl<P, T, E> Future for Asked<P, E>
where
    P: Future<Output = Result<T, E>> + Unpin,
    E: Unpin,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            Ok(pending) => Pin::new(pending).poll(context),
            Err(refused) => match refused.take() {
                Some(error) => Poll::Ready(Err(error)),
                None => panic!("`Asked` polled after it completed"),
            },
        }
    }
}
