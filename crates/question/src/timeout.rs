//! How long a request may wait for a human: [`Timeout`], its bound [`MAX_TIMEOUT`], and the
//! [`Deadline`] a new request gets from it and its service's default.
//!
//! Below the services and the follow-up planning, which both turn a caller's `Timeout`
//! into a deadline the same way (one rule, one place).

use std::time::Duration;

use tokio::time::Instant;

use crate::validate::ValidationError;

/// The longest [`Timeout::After`] a request may have: one year. Longer waits are
/// [`Timeout::Never`]; a bound keeps every `expires_at` a time any client can read (a
/// JavaScript number holds milliseconds exactly only up to 2^53).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// How long a request may wait for a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timeout {
    /// The service's configured default ([`QuestionConfig::default_timeout`](crate::QuestionConfig::default_timeout)).
    #[default]
    Default,
    /// Wait forever.
    Never,
    /// Time out after this long: at most [`MAX_TIMEOUT`].
    After(Duration),
}

impl From<Duration> for Timeout {
    /// [`Timeout::After`] this long.
    fn from(after: Duration) -> Self {
        Self::After(after)
    }
}

/// A request's timeout, from its [`Timeout`] and the service default.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    /// The timeout, if the request has one.
    timeout: Option<Duration>,
}

impl Deadline {
    /// The deadline of a request made now with `timeout`, where `Timeout::Default` means
    /// `default`.
    ///
    /// # Errors
    ///
    /// [`ValidationError`] for a [`Timeout::After`] longer than [`MAX_TIMEOUT`].
    pub(crate) fn after(
        timeout: Timeout,
        default: Option<Duration>,
    ) -> Result<Self, ValidationError> {
        let timeout = match timeout {
            Timeout::Default => default,
            Timeout::Never => None,
            Timeout::After(duration) if duration > MAX_TIMEOUT => {
                return Err(ValidationError::request(format!(
                    "a timeout is at most one year ({} s); wait forever instead (no timeout)",
                    MAX_TIMEOUT.as_secs()
                )));
            }
            Timeout::After(duration) => Some(duration),
        };
        // A timeout too long to represent is, in practice, no timeout.
        let timeout = timeout.filter(|&duration| Instant::now().checked_add(duration).is_some());
        Ok(Self { timeout })
    }

    /// The timeout, if the request has one.
    pub(crate) fn duration(self) -> Option<Duration> {
        self.timeout
    }
}
