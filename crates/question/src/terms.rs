//! [`Terms`]: what a request may carry beside its content, the same for both kinds.
//!
//! The builders of the `ask` module collect them; the services' `submit_request` take them.
//! Here, below both, so the services do not depend on their builders.

use std::sync::Arc;

use crate::follow_up::FollowUp;
use crate::timeout::Timeout;

/// What a request may carry beside its content, the same for both kinds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Terms {
    /// How long it may wait.
    pub(crate) timeout: Timeout,
    /// Reminders, escalation and what applies on timeout; parts left out are the service's.
    pub(crate) follow_up: FollowUp,
    /// The language its reader should see (a BCP 47 tag), if the asker knows it.
    pub(crate) locale: Option<Arc<str>>,
}
