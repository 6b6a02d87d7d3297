//! A request's follow-up as sent on `POST /question` and `POST /approval`: reminders, an
//! escalation, the fallback on expiry (see `askbus_question::FollowUp`).
//!
//! What only the server can check is checked here: the names a request escalates to are
//! credentials of this server that may decide requests (reviewers, admins). Without tokens
//! the only credential is `local`.

use std::time::Duration;

use askbus_question::{FollowUp, OnTimeout};

use crate::AppState;
use crate::error::ApiError;

/// The follow-up fields of a create body, as sent.
pub(crate) struct FollowUpFields {
    /// Seconds before the reminder, and its field's name.
    pub(crate) remind_after: (Option<f64>, &'static str),
    /// Seconds before the escalation, and its field's name.
    pub(crate) escalate_after: (Option<f64>, &'static str),
    /// Who the request escalates to, and the field's name.
    pub(crate) escalate_to: (Vec<String>, &'static str),
    /// The fallback on expiry.
    pub(crate) on_timeout: Option<OnTimeout>,
}

impl FollowUpFields {
    /// The follow-up asked for.
    ///
    /// # Errors
    ///
    /// 422 for a negative or non-finite number of seconds, or a name to escalate to that is
    /// no credential of this server allowed to decide.
    pub(crate) fn follow_up(self, state: &AppState) -> Result<FollowUp, ApiError> {
        let (names, field) = self.escalate_to;
        for name in &names {
            check_decider(state, name, field)?;
        }
        Ok(FollowUp {
            remind_after: seconds(self.remind_after)?,
            escalate_after: seconds(self.escalate_after)?,
            escalate_to: names,
            on_timeout: self.on_timeout,
        })
    }
}

/// A number of seconds as a duration; absent: none.
fn seconds((value, field): (Option<f64>, &'static str)) -> Result<Option<Duration>, ApiError> {
    match value {
        None => Ok(None),
        Some(seconds) if seconds.is_finite() && seconds >= 0.0 => Ok(Some(
            Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX),
        )),
        Some(_) => Err(ApiError::invalid(format!(
            "`{field}` must be a number of seconds, at least 0 and before the request's deadline"
        ))),
    }
}

/// Whether `name` is a credential of this server that may decide requests: only then may a
/// request escalate to it. (Its asker never decides it all the same, where the server's
/// duties say so: the registry's one check keeps that.)
fn check_decider(state: &AppState, name: &str, field: &str) -> Result<(), ApiError> {
    let tokens = &state.inner.config.tokens;
    let decides = if tokens.is_empty() {
        name == askbus_question::Identity::local().name.as_ref()
    } else {
        tokens
            .iter()
            .any(|token| *token.identity().name == *name && token.identity().may_decide())
    };
    if !decides {
        return Err(ApiError::invalid(format!(
            "`{field}` names {name:?}, which is no credential of this server that may decide requests (a reviewer or an admin)"
        )));
    }
    Ok(())
}
