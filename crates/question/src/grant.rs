//! Standing grants: a human's `always` (OpenCode's word) for a tool call, so that later
//! calls like it in the same session are approved without asking again.
//!
//! A grant is made by a human deciding an approval with
//! [`ApprovalService::reply_always`](crate::ApprovalService::reply_always): that request is
//! approved, and the grant covers the session's other requests (pending, and later ones)
//! whose every action is one the human approved: the same tool with the same arguments.
//!
//! Policy, in exact words:
//!
//! - **A grant covers what the human saw, exactly.** A call is covered when its tool and its
//!   whole arguments equal those of a call the grant approved, and the same asker makes
//!   it. Nothing in the arguments is
//!   read as a pattern: they come from the agent, so a `*` in an approved `ls *` must not
//!   stand for `ls *; rm -rf ~`, and arguments the [pattern](pattern_of) leaves out (a
//!   `cwd`, a `deploy`'s `env`) must not change unseen. The patterns are what OpenCode
//!   clients show of a grant, never what it matches.
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
//!   grants, and all sessions together at most
//!   [`ApprovalConfig::max_grants`](crate::ApprovalConfig::max_grants); `always` beyond
//!   either is refused (the request stays pending). Grants live in
//!   this process only, so a restart forgets them, and over a store shared by several
//!   instances `always` is refused: another instance could neither list nor revoke the
//!   grant while this one went on applying it.
//! - **One granter per approval.** A request whose calls are covered by grants of
//!   different humans is asked again: each may decide only what they saw.
//!
//! ```
//! use askbus_bus::Bus;
//! use askbus_question::{Action, ApprovalService, Timeout};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let approvals = ApprovalService::new(Bus::new());
//! let status = || vec![Action::new("bash", json!({"command": "git status"}))];
//! let first = approvals.request("s", status()).timeout(Timeout::Never).submit().unwrap();
//! approvals.reply_always(first.id()).unwrap();
//! first.await.unwrap();
//!
//! // The same call again: approved at once, by the grant.
//! let again = approvals.request("s", status()).timeout(Timeout::Never).submit().unwrap();
//! let reply = again.await.unwrap();
//! assert_eq!(reply.auto_approved_by.len(), 1);
//! assert_eq!(approvals.grants("s").len(), 1);
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use askbus_audit::AuditDraft;
use serde_json::Value;

use crate::approval_model::{Action, ApprovalRequest, Grant, pattern_of};
use crate::identity::Identity;
use crate::ids::ApprovalId;
use crate::validate::ValidationError;

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
        let mut args: Vec<Value> = Vec::new();
        for action in &request.action_requests {
            let pattern = pattern_of(action);
            if !patterns.contains(&pattern) {
                patterns.push(pattern);
            }
            if !args.contains(&action.args) {
                args.push(action.args.clone());
            }
        }
        Ok(Self {
            id: request.id,
            session_id: Arc::clone(&request.session_id),
            tool,
            patterns,
            args,
            asked_by: request.asked_by.clone(),
            granted_by: granted_by.clone(),
            created_at: now_ms(),
        })
    }

    /// Whether this grant covers `action`: the same tool with the same arguments as a call
    /// the human approved (JSON equality: the order of an object's keys does not matter).
    pub fn covers(&self, action: &Action) -> bool {
        action.name == self.tool && self.args.contains(&action.args)
    }
}

impl Grants {
    /// Fails when `session_id` holds `per_session` grants already, or every session
    /// together `in_all`.
    pub(crate) fn check_room(
        &self,
        session_id: &str,
        (per_session, in_all): (usize, usize),
    ) -> Result<(), ValidationError> {
        let sessions = self.lock();
        let held = sessions.get(session_id).map_or(0, Vec::len);
        if held >= per_session {
            return Err(ValidationError::request(format!(
                "this session holds {held} of the {per_session} grants it may: revoke one, or approve once"
            )));
        }
        // Summed when a grant is asked for, which a human does: no count to keep in step.
        let held: usize = sessions.values().map(Vec::len).sum();
        if held >= in_all {
            return Err(ValidationError::request(format!(
                "the server holds {held} of the {in_all} grants it may, in all sessions: revoke one, or approve once"
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
            let grant = grants
                .iter()
                .find(|grant| grant.asked_by == request.asked_by && grant.covers(action))?;
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

impl Grant {
    /// The audit receipt of this grant revoked by `revoked_by`, now: it names the request
    /// that made the grant, who asked its calls, who revoked it, and the grant as listed.
    pub(crate) fn revocation_receipt(&self, revoked_by: &Identity) -> AuditDraft {
        AuditDraft::grant_revoked(
            self.id.to_string(),
            self.session_id.to_string(),
            serde_json::to_value(self).unwrap_or(Value::Null),
            self.asked_by
                .as_ref()
                .and_then(|who| serde_json::to_value(who).ok()),
            serde_json::to_value(revoked_by).unwrap_or(Value::Null),
            now_ms(),
        )
    }
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
    use serde_json::json;

    use super::*;

    fn grant_of(args: Value) -> Grant {
        Grant {
            id: askbus_bus::IdGenerator::new().next_id(),
            session_id: "s".into(),
            tool: "bash".to_owned(),
            patterns: Vec::new(),
            args: vec![args],
            asked_by: None,
            granted_by: Identity::local(),
            created_at: 0,
        }
    }

    #[test]
    fn a_grant_covers_the_very_call_approved_and_nothing_else() {
        let grant = grant_of(json!({"command": "ls *", "cwd": "/work"}));
        let call = |name: &str, args: Value| grant.covers(&Action::new(name, args));
        assert!(call("bash", json!({"cwd": "/work", "command": "ls *"})));
        // A `*` the agent wrote is a character, not a wildcard.
        assert!(!call(
            "bash",
            json!({"command": "ls *; rm -rf ~", "cwd": "/work"})
        ));
        // Arguments the pattern leaves out count as much as the pattern.
        assert!(!call("bash", json!({"command": "ls *", "cwd": "/"})));
        assert!(!call("bash", json!({"command": "ls *"})));
        assert!(!call("sh", json!({"command": "ls *", "cwd": "/work"})));
    }
}
