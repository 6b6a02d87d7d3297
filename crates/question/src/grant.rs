//! Standing grants: a human's `always` (OpenCode's word) for a tool call, so that later
//! calls like it in the same session are approved without asking again.
//!
//! A grant is made by a human deciding an approval with
//! [`ApprovalService::reply_always`](crate::ApprovalService::reply_always): that request is
//! approved, and the grant covers the session's other requests (pending, and later ones)
//! whose every action
//! calls the same tool with a [pattern](pattern_of) that one of the grant's patterns
//! matches (`*` in a grant's pattern matches any run of characters, as in OpenCode).
//!
//! Policy, in exact words:
//!
//! - **Only a decider grants.** `reply_always` is a decision, checked as every decision is
//!   (the registry's `check_decider`): an agent's identity, or the asker's own under
//!   separation of duties, can no more grant than approve.
//! - **One place applies grants.** [`ApprovalService`](crate::ApprovalService) checks them
//!   when a request is made, whatever made it (HTTP, MCP, the tools, the guard), and on
//!   the session's pending requests when a grant is made. A covered
//!   request is still asked (`approval.asked`) and is then replied to at once, acting as the
//!   human who granted, with the grant named in the reply's `auto_approved_by`: an
//!   auto-approval is never a human's reply in disguise. A request the granter may not
//!   decide (it names other reviewers, or needs a quorum) waits for a human as usual.
//! - **Visible and revocable.** [`ApprovalService::grants`](crate::ApprovalService::grants)
//!   lists a session's grants; [`ApprovalService::revoke_grant`](crate::ApprovalService::revoke_grant)
//!   ends one. Both making and revoking are published (`approval.granted`,
//!   `approval.grant_revoked`).
//! - **Bounded, in memory.** A session holds at most
//!   [`ApprovalConfig::max_grants_per_session`](crate::ApprovalConfig::max_grants_per_session)
//!   grants; `always` beyond that is refused (the request stays pending). Grants live in
//!   this process only: a restart forgets them, and instances sharing a store do not share
//!   them (every request they cover is then asked of a human again, never approved wrongly).
//!
//! ```
//! use askbus_bus::Bus;
//! use askbus_question::{Action, ApprovalService, Timeout};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let approvals = ApprovalService::new(Bus::new());
//! let status = || vec![Action::new("bash", json!({"command": "git status"}))];
//! let first = approvals.submit("s", status(), vec![], Timeout::Never).unwrap();
//! approvals.reply_always(first.id()).unwrap();
//! first.await.unwrap();
//!
//! // The same call again: approved at once, by the grant.
//! let again = approvals.submit("s", status(), vec![], Timeout::Never).unwrap();
//! let reply = again.await.unwrap();
//! assert_eq!(reply.auto_approved_by.len(), 1);
//! assert_eq!(approvals.grants("s").len(), 1);
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use askbus_bus::Event;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval_model::{Action, ApprovalId, ApprovalRequest};
use crate::identity::Identity;
use crate::validate::ValidationError;

/// A human's standing approval of one tool's calls in one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Grant {
    /// The approval request whose `always` made the grant; it names the grant.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub id: ApprovalId,
    /// The session the grant covers.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub session_id: Arc<str>,
    /// The tool whose calls it covers.
    pub tool: String,
    /// What those calls may touch (see [`pattern_of`]); `*` matches any run of characters.
    pub patterns: Vec<String>,
    /// The human who granted it.
    pub granted_by: Identity,
    /// When, milliseconds since the Unix epoch.
    pub created_at: u64,
}

/// `approval.granted`: a human's `always` made a grant.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalGranted {
    /// The grant.
    #[serde(flatten)]
    pub grant: Grant,
}

/// `approval.grant_revoked`: a grant was revoked; later calls are asked again.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalGrantRevoked {
    /// The grant revoked.
    #[serde(flatten)]
    pub grant: Grant,
    /// Who revoked it.
    pub revoked_by: Identity,
}

/// The arguments whose value says what a call touches, in the order they are looked for.
pub const PATTERN_ARGUMENTS: [&str; 6] =
    ["command", "filePath", "file_path", "path", "url", "pattern"];

/// What `action` touches, as OpenCode names it: the first of [`PATTERN_ARGUMENTS`] that is
/// a string argument, else `*` (OpenCode's pattern of a tool without one).
///
/// # Examples
///
/// ```
/// use askbus_question::{Action, pattern_of};
/// use serde_json::json;
///
/// assert_eq!(pattern_of(&Action::new("bash", json!({"command": "ls"}))), "ls");
/// assert_eq!(pattern_of(&Action::new("deploy", json!({"env": "prod"}))), "*");
/// ```
pub fn pattern_of(action: &Action) -> String {
    PATTERN_ARGUMENTS
        .iter()
        .find_map(|name| action.args.get(name).and_then(Value::as_str))
        .unwrap_or("*")
        .to_owned()
}

/// Every session's grants, shared by the handles of one approval service.
#[derive(Debug, Clone, Default)]
pub(crate) struct Grants {
    /// Grants by session, oldest first. A session without grants has no entry.
    sessions: Arc<Mutex<HashMap<Arc<str>, Vec<Grant>>>>,
}

impl Grant {
    /// The grant an `always` on `request`, by `granted_by`, makes: its one tool, with the
    /// patterns of its actions.
    ///
    /// # Errors
    ///
    /// [`ValidationError`] when the request's actions call more than one tool: a grant
    /// names one, so such a request is answered once.
    pub(crate) fn of(
        request: &ApprovalRequest,
        granted_by: &Identity,
    ) -> Result<Self, ValidationError> {
        let tool = request
            .action_requests
            .first()
            .map(|action| action.name.clone())
            .unwrap_or_default();
        if request
            .action_requests
            .iter()
            .any(|action| action.name != tool)
        {
            return Err(ValidationError::request(
                "`always` grants one tool, and this request calls several: approve it once",
            ));
        }
        let mut patterns: Vec<String> = Vec::new();
        for pattern in request.action_requests.iter().map(pattern_of) {
            if !patterns.contains(&pattern) {
                patterns.push(pattern);
            }
        }
        Ok(Self {
            id: request.id,
            session_id: Arc::clone(&request.session_id),
            tool,
            patterns,
            granted_by: granted_by.clone(),
            created_at: now_ms(),
        })
    }

    /// Whether this grant covers `action`: the same tool, a pattern that matches.
    pub fn covers(&self, action: &Action) -> bool {
        let pattern = pattern_of(action);
        action.name == self.tool
            && self
                .patterns
                .iter()
                .any(|granted| wildcard_match(granted, &pattern))
    }
}

impl Grants {
    /// Fails when `session_id` holds `limit` grants already.
    pub(crate) fn check_room(&self, session_id: &str, limit: usize) -> Result<(), ValidationError> {
        let held = self.lock().get(session_id).map_or(0, Vec::len);
        if held >= limit {
            return Err(ValidationError::request(format!(
                "this session holds {held} of the {limit} grants it may: revoke one, or approve once"
            )));
        }
        Ok(())
    }

    /// Keeps `grant`.
    pub(crate) fn record(&self, grant: Grant) {
        self.lock()
            .entry(Arc::clone(&grant.session_id))
            .or_default()
            .push(grant);
    }

    /// The grants that cover `request` (one per action, each once), if every action is
    /// covered.
    pub(crate) fn covering(&self, request: &ApprovalRequest) -> Option<Vec<Grant>> {
        let sessions = self.lock();
        let grants = sessions.get(&request.session_id)?;
        let mut used: Vec<Grant> = Vec::new();
        for action in &request.action_requests {
            let grant = grants.iter().find(|grant| grant.covers(action))?;
            if !used.iter().any(|seen| seen.id == grant.id) {
                used.push(grant.clone());
            }
        }
        Some(used)
    }

    /// A session's grants, oldest first.
    pub(crate) fn list(&self, session_id: &str) -> Vec<Grant> {
        self.lock().get(session_id).cloned().unwrap_or_default()
    }

    /// Removes grant `id` of `session_id`; the grant removed, if there was one.
    pub(crate) fn revoke(&self, session_id: &str, id: ApprovalId) -> Option<Grant> {
        let mut sessions = self.lock();
        let grants = sessions.get_mut(session_id)?;
        let position = grants.iter().position(|grant| grant.id == id)?;
        let grant = grants.remove(position);
        if grants.is_empty() {
            sessions.remove(session_id);
        }
        Some(grant)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Vec<Grant>>> {
        // The map is consistent after every statement: a panic elsewhere cannot tear it.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Event for ApprovalGranted {
    const TYPE: &'static str = "approval.granted";

    fn session_id(&self) -> Option<&str> {
        Some(&self.grant.session_id)
    }
}

impl Event for ApprovalGrantRevoked {
    const TYPE: &'static str = "approval.grant_revoked";

    fn session_id(&self) -> Option<&str> {
        Some(&self.grant.session_id)
    }
}

/// Whether `text` fits `pattern`, where `*` stands for any run of characters (none too)
/// and every other character for itself.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return text.is_empty();
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*`: the whole text is the pattern.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Now, milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::wildcard_match;

    #[test]
    fn a_star_matches_any_run_of_characters() {
        for (pattern, text, expected) in [
            ("ls", "ls", true),
            ("ls", "ls -la", false),
            ("ls*", "ls -la", true),
            ("*", "", true),
            ("*", "anything", true),
            ("git * --force", "git push origin --force", true),
            ("git * --force", "git push origin", false),
            ("a*a", "a", false),
            ("*.rs", "src/main.rs", true),
        ] {
            assert_eq!(
                wildcard_match(pattern, text),
                expected,
                "{pattern} ~ {text}"
            );
        }
    }
}
