//! Follow-ups: what happens to a request nobody answers, before and at its deadline.
//!
//! A request may carry a [`FollowUp`]: remind after `remind_after`, escalate to other
//! deciders (`escalate_to`) after `escalate_after`, and on expiry apply a fallback
//! ([`OnTimeout`]): reject (the default, as without a follow-up), a default answer
//! (questions only), or escalate. The policy, in exact words:
//!
//! - **Reminders and escalations are events**, never outcomes: `question.reminded`,
//!   `question.escalated`, `approval.reminded`, `approval.escalated`, each published once,
//!   recorded in the session's history and told to the outbox (webhooks). They fire from
//!   the registry's one timer, in the same index as the deadlines, never a task per
//!   request.
//! - **Over a shared store only the instance that registered a request fires its
//!   follow-ups** (the others would repeat them); it writes each one to the store, and
//!   every instance publishes it when it reads it in the change log. A request whose
//!   instance is gone is not reminded; its expiry happens as ever (every instance runs it).
//!   A restarted instance does not fire again a follow-up that fell due before it started.
//! - **Who may decide follows the clock, not the event.** From the request's `escalate_at`
//!   on, the deciders it names in `escalate_to` may decide it too (for an approval whose
//!   review configs name reviewers: in addition to them; nobody else), on every instance,
//!   whether or not the event was fired.
//! - **A fallback is its own outcome.** A default answer ends the request as
//!   [`Outcome::Defaulted`](crate::Outcome::Defaulted), never as a human's reply: the asker
//!   gets [`AskError::DefaultApplied`](crate::AskError::DefaultApplied), the events, the
//!   status and the audit receipt say `default_answer`. **An approval never takes a default
//!   answer**: an agent must never get its own tool call approved by waiting.
//! - **`escalate` on expiry** escalates at the original deadline (unless it escalated
//!   before), and gives the deciders the original timeout once more; then the request is
//!   rejected. Both times are fixed when the request is made (its `expires_at` is the
//!   second deadline from the start), so every instance and every client agree on them
//!   without the request ever changing.

use std::time::Duration;

use tokio::time::Instant;

use crate::model::{Answer, OnTimeout};
use crate::timeout::{Deadline, MAX_TIMEOUT, Timeout};
use crate::validate::{self, ValidationError};

/// What happens to a request nobody answers: a reminder, an escalation, a fallback on
/// expiry. Every part is optional; the default is what a request without one does (reject
/// on expiry).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use askbus_question::{FollowUp, OnTimeout};
///
/// let follow_up = FollowUp::default()
///     .remind_after(Duration::from_secs(60))
///     .escalate_after(Duration::from_secs(120), ["bob"])
///     .on_timeout(OnTimeout::Answer(vec![vec!["No".into()]]));
/// assert_eq!(follow_up.escalate_to, ["bob"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FollowUp {
    /// Remind (`*.reminded`) this long after the request was made; before its deadline.
    pub remind_after: Option<Duration>,
    /// Escalate (`*.escalated`) this long after the request was made; before its deadline.
    pub escalate_after: Option<Duration>,
    /// The deciders (credential names) an escalation hands the request to as well.
    pub escalate_to: Vec<String>,
    /// What applies when nobody answered by the deadline; `None`: the service's default
    /// (reject, unless the server says otherwise).
    pub on_timeout: Option<OnTimeout>,
}

/// One step of a request's follow-up, which the registry's timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Due {
    /// Remind.
    Remind,
    /// Escalate.
    Escalate,
    /// Time out (apply the fallback).
    Expire,
}

impl FollowUp {
    /// Reminds after `after`.
    #[must_use]
    pub fn remind_after(mut self, after: Duration) -> Self {
        self.remind_after = Some(after);
        self
    }

    /// Escalates to `to` after `after`.
    #[must_use]
    pub fn escalate_after(
        mut self,
        after: Duration,
        to: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.escalate_after = Some(after);
        self.escalate_to = to.into_iter().map(Into::into).collect();
        self
    }

    /// Applies `fallback` on expiry.
    #[must_use]
    pub fn on_timeout(mut self, fallback: OnTimeout) -> Self {
        self.on_timeout = Some(fallback);
        self
    }

    /// This follow-up, with each part it leaves out taken from `defaults`.
    #[must_use]
    pub fn or(self, defaults: &Self) -> Self {
        Self {
            remind_after: self.remind_after.or(defaults.remind_after),
            escalate_after: self.escalate_after.or(defaults.escalate_after),
            escalate_to: if self.escalate_to.is_empty() {
                defaults.escalate_to.clone()
            } else {
                self.escalate_to
            },
            on_timeout: self.on_timeout.or_else(|| defaults.on_timeout.clone()),
        }
    }
}

/// The most deciders a request may escalate to: more than any team names, few enough that
/// what a request carries stays small (they are not counted in its weight).
pub const MAX_ESCALATE_TO: usize = 64;

/// Checks the names a request escalates to: at most [`MAX_ESCALATE_TO`], each an id of at
/// most [`MAX_ID_BYTES`](crate::MAX_ID_BYTES), none twice.
fn check_escalate_to(names: &[String]) -> Result<(), ValidationError> {
    if names.len() > MAX_ESCALATE_TO {
        return Err(ValidationError::request(format!(
            "`escalate_to` names {} deciders; a request may escalate to at most {MAX_ESCALATE_TO}",
            names.len()
        )));
    }
    for (index, name) in names.iter().enumerate() {
        validate::check_id_length("a name in `escalate_to`", name)?;
        if names[..index].contains(name) {
            return Err(ValidationError::request(format!(
                "`escalate_to` names {name:?} twice"
            )));
        }
    }
    Ok(())
}

/// A new request's deadline and follow-up, planned when it is made from what was asked
/// and the service's defaults: the timers to index and the fields to record.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The timers, on this process's clock.
    pub(crate) timers: Timers,
    /// Milliseconds after creation: expiry, reminder, escalation.
    expires_in: Option<u64>,
    remind_in: Option<u64>,
    escalate_in: Option<u64>,
    /// Who it escalates to; empty without an escalation.
    pub(crate) escalate_to: Vec<String>,
    /// Its fallback on expiry, unless that is a plain rejection.
    pub(crate) on_timeout: Option<OnTimeout>,
}

impl Plan {
    /// Plans a request made now with `timeout` (`default_timeout` for
    /// [`Timeout::Default`]) and `asked`, whose parts left out are `defaults`' (those of
    /// the defaults that cannot apply to this request, such as a reminder after its
    /// deadline, are left out). `check_answer` checks a default answer (the questions'
    /// reply check; an approval refuses any).
    ///
    /// # Errors
    ///
    /// [`ValidationError`] for a timeout longer than [`MAX_TIMEOUT`](crate::MAX_TIMEOUT), a
    /// reminder or escalation not before the deadline, an escalation with nobody to
    /// escalate to (or someone to escalate to and no escalation), a fallback without a
    /// deadline, or a default answer `check_answer` refuses.
    pub(crate) fn new(
        timeout: Timeout,
        default_timeout: Option<Duration>,
        asked: FollowUp,
        defaults: &FollowUp,
        check_answer: impl FnOnce(&[Answer]) -> Result<(), ValidationError>,
    ) -> Result<Self, ValidationError> {
        let deadline = Deadline::after(timeout, default_timeout)?;
        let limit = deadline.duration();
        let before_deadline = |after: Duration| limit.is_none_or(|limit| after < limit);
        for (field, after) in [
            ("remind_after", asked.remind_after),
            ("escalate_after", asked.escalate_after),
        ] {
            if let Some(after) = after
                && (!before_deadline(after) || after > MAX_TIMEOUT)
            {
                return Err(ValidationError::request(format!(
                    "`{field}` ({} s) must come before the request's deadline ({})",
                    after.as_secs_f64(),
                    limit.map_or_else(
                        || "none".to_owned(),
                        |limit| format!("{} s", limit.as_secs_f64())
                    )
                )));
            }
        }
        if let Some(name) = asked.escalate_to.iter().find(|name| name.trim().is_empty()) {
            return Err(ValidationError::request(format!(
                "`escalate_to` names {name:?}: a credential's name, not empty"
            )));
        }
        check_escalate_to(&asked.escalate_to)?;
        match &asked.on_timeout {
            Some(OnTimeout::Answer(answer)) => check_answer(answer)?,
            Some(OnTimeout::Escalate) if limit.is_none() => {
                return Err(ValidationError::request(
                    "`on_timeout: escalate` needs a deadline: give a timeout, or leave the fallback out",
                ));
            }
            _ => {}
        }
        if limit.is_none()
            && let Some(OnTimeout::Answer(_)) = &asked.on_timeout
        {
            return Err(ValidationError::request(
                "a default answer (`on_timeout`) needs a deadline: give a timeout, or leave the fallback out",
            ));
        }
        let asks_escalation =
            asked.escalate_after.is_some() || asked.on_timeout == Some(OnTimeout::Escalate);
        if asks_escalation && asked.escalate_to.is_empty() && defaults.escalate_to.is_empty() {
            return Err(ValidationError::request(
                "an escalation needs someone to escalate to: name them in `escalate_to`",
            ));
        }
        // The defaults that fit this request.
        let defaults = FollowUp {
            remind_after: defaults
                .remind_after
                .filter(|&after| before_deadline(after)),
            escalate_after: defaults
                .escalate_after
                .filter(|&after| before_deadline(after)),
            escalate_to: defaults.escalate_to.clone(),
            on_timeout: defaults
                .on_timeout
                .clone()
                .filter(|fallback| limit.is_some() || *fallback == OnTimeout::Reject),
        };
        let asked_escalate_to = !asked.escalate_to.is_empty();
        let FollowUp {
            remind_after,
            escalate_after,
            escalate_to,
            on_timeout,
        } = asked.or(&defaults);
        let (escalate_after, expires_after) = match (&on_timeout, limit) {
            (Some(OnTimeout::Escalate), Some(limit)) => (
                Some(escalate_after.map_or(limit, |after| after.min(limit))),
                Some(limit.saturating_mul(2)),
            ),
            _ => (escalate_after, limit),
        };
        let escalates = escalate_after.is_some() && !escalate_to.is_empty();
        if asked_escalate_to && !escalates {
            return Err(ValidationError::request(
                "`escalate_to` is given but nothing escalates: give `escalate_after`, or `on_timeout: escalate`",
            ));
        }
        let escalate_after = escalate_after.filter(|_| escalates);
        let now = Instant::now();
        let at = |after: Option<Duration>| after.and_then(|after| now.checked_add(after));
        let ms = |after: Option<Duration>| {
            after.map(|after| u64::try_from(after.as_millis()).unwrap_or(u64::MAX))
        };
        Ok(Self {
            timers: Timers {
                deadline: at(expires_after),
                remind: at(remind_after),
                escalate: at(escalate_after),
            },
            expires_in: ms(expires_after).filter(|_| at(expires_after).is_some()),
            remind_in: ms(remind_after),
            escalate_in: ms(escalate_after),
            escalate_to: if escalates { escalate_to } else { Vec::new() },
            on_timeout: on_timeout.filter(|fallback| *fallback != OnTimeout::Reject),
        })
    }

    /// When the request expires, milliseconds since the epoch, if it was made at
    /// `created_at`.
    pub(crate) fn expires_at(&self, created_at: u64) -> Option<u64> {
        self.expires_in.map(|ms| created_at.saturating_add(ms))
    }

    /// When its reminder falls due.
    pub(crate) fn remind_at(&self, created_at: u64) -> Option<u64> {
        self.remind_in.map(|ms| created_at.saturating_add(ms))
    }

    /// When it escalates.
    pub(crate) fn escalate_at(&self, created_at: u64) -> Option<u64> {
        self.escalate_in.map(|ms| created_at.saturating_add(ms))
    }
}

/// When a new request's timer steps fall due, on this process's clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Timers {
    /// When it times out, if ever.
    pub(crate) deadline: Option<Instant>,
    /// When it reminds, if ever.
    pub(crate) remind: Option<Instant>,
    /// When it escalates, if ever.
    pub(crate) escalate: Option<Instant>,
}
