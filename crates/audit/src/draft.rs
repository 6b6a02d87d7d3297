//! What an audit entry says: [`AuditDraft`], the receipt of one decision.

use askbus_store::{OutcomeRecord, OutcomeState, RequestKind, RequestRecord};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The receipt of one decision: who asked, who decided, what was shown, what was decided,
/// when. Its JSON ([`to_json`](Self::to_json)) is the *draft* a resolution carries to the
/// store ([`Write::Resolve`](askbus_store::Write::Resolve)'s `audit`), which appends it to
/// the audit log if the resolution wins.
///
/// What was shown is not copied: `request_sha256` is the SHA-256 of the request's JSON
/// exactly as the store keeps it ([`RequestRecord::body`]), so the receipt names the exact
/// content without holding it (the request itself may be deleted by retention; a copy kept
/// elsewhere is proven to be the one shown by its hash).
///
/// # Examples
///
/// ```
/// use askbus_audit::AuditDraft;
/// use askbus_store::{OutcomeRecord, OutcomeState, RequestKind, RequestRecord};
///
/// let request = RequestRecord {
///     id: "que_1".into(),
///     kind: RequestKind::Question,
///     session_id: "s".into(),
///     call_id: None,
///     created_at_ms: 1,
///     expires_at_ms: None,
///     body: r#"{"questions":[]}"#.into(),
/// };
/// let outcome = OutcomeRecord::new(OutcomeState::Replied, r#"[["Yes"]]"#, 2)
///     .decided_by(Some(r#"{"name":"alice","role":"reviewer"}"#.into()));
/// let draft = AuditDraft::new(&request, &outcome, None);
/// assert_eq!(draft.decided_by.unwrap()["name"], "alice");
/// assert_eq!(draft.decision, serde_json::json!([["Yes"]]));
/// assert_eq!(draft.request_sha256.len(), 64);
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AuditDraft {
    /// The request decided (`que_…`, `apr_…`).
    pub request_id: String,
    /// `question` or `approval`.
    pub kind: RequestKind,
    /// The session that asked.
    pub session_id: String,
    /// Who asked (an agent's identity), if known; `null` otherwise.
    pub asked_by: Option<Value>,
    /// Who decided ([`OutcomeRecord::decided_by`]); `null` when nobody did (a timeout, a
    /// cancel) or nobody was named.
    pub decided_by: Option<Value>,
    /// Lowercase hex SHA-256 of the request's stored JSON, byte for byte.
    pub request_sha256: String,
    /// `replied`, `rejected`, `timed_out` or `cancelled`; `grant_revoked` for a standing
    /// grant revoked ([`grant_revoked`](Self::grant_revoked)).
    pub outcome: AuditOutcome,
    /// The outcome's data (answers, decisions, a reason), as stored.
    pub decision: Value,
    /// When it was decided, milliseconds since the Unix epoch.
    pub resolved_at_ms: u64,
}

impl AuditDraft {
    /// The receipt of `outcome` ending `request`, asked by `asked_by`.
    ///
    /// Stored JSON that does not parse (the store does not check what it keeps) is kept as
    /// a JSON string rather than refused: a receipt is never lost to a malformed field.
    pub fn new(request: &RequestRecord, outcome: &OutcomeRecord, asked_by: Option<Value>) -> Self {
        Self::of_digest(
            RequestShown {
                id: request.id.clone(),
                kind: request.kind,
                session_id: request.session_id.clone(),
                digest: request_digest(&request.body),
            },
            outcome,
            asked_by,
        )
    }

    /// As [`new`](Self::new), for a request whose stored JSON was hashed when it was
    /// stored ([`request_digest`]), so that deciding it need not write it again.
    pub fn of_digest(
        request: RequestShown,
        outcome: &OutcomeRecord,
        asked_by: Option<Value>,
    ) -> Self {
        Self {
            request_id: request.id,
            kind: request.kind,
            session_id: request.session_id,
            asked_by,
            decided_by: outcome.decided_by.as_deref().map(json_or_text),
            request_sha256: hex::encode(request.digest),
            outcome: outcome.state.into(),
            decision: json_or_text(&outcome.body),
            resolved_at_ms: outcome.resolved_at_ms,
        }
    }

    /// The receipt of a standing grant revoked: a decision that ends no request, appended
    /// on its own ([`Write::Audit`](askbus_store::Write::Audit)). It names the approval
    /// request whose `always` made the grant (`request_id`), who asked the calls it covered
    /// (`asked_by`) and who revoked it (`decided_by`); `decision` is the grant as it was
    /// listed, and `request_sha256` that JSON's SHA-256 (the request itself was receipted
    /// when it was approved).
    pub fn grant_revoked(
        request_id: String,
        session_id: String,
        grant: Value,
        asked_by: Option<Value>,
        revoked_by: Value,
        revoked_at_ms: u64,
    ) -> Self {
        Self {
            request_id,
            kind: RequestKind::Approval,
            session_id,
            asked_by,
            decided_by: Some(revoked_by),
            request_sha256: hex::encode(request_digest(&grant.to_string())),
            outcome: AuditOutcome::GrantRevoked,
            decision: grant,
            resolved_at_ms: revoked_at_ms,
        }
    }

    /// The draft's JSON, as the store keeps it and the chain hashes it.
    pub fn to_json(&self) -> String {
        // Strings, numbers and parsed values only: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What an audit entry records: how a request ended, or a standing grant revoked.
///
/// A request's outcomes are the store's [`OutcomeState`]s, spelled the same; the audit log
/// also receipts a decision that ends no request, so it has a state of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    /// A human answered.
    Replied,
    /// A human refused.
    Rejected,
    /// Nobody answered in time.
    TimedOut,
    /// The asker went away or the session was cancelled.
    Cancelled,
    /// A human revoked a standing grant (an OpenCode `always`): later calls it covered are
    /// asked again.
    GrantRevoked,
}

impl From<OutcomeState> for AuditOutcome {
    fn from(state: OutcomeState) -> Self {
        match state {
            OutcomeState::Replied => Self::Replied,
            OutcomeState::Rejected => Self::Rejected,
            OutcomeState::TimedOut => Self::TimedOut,
            OutcomeState::Cancelled => Self::Cancelled,
        }
    }
}

/// What a receipt says of the request decided: which one, and the SHA-256 of its stored
/// JSON ([`request_digest`]), what the human was shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestShown {
    /// The request's id (`que_…`, `apr_…`).
    pub id: String,
    /// Its kind.
    pub kind: RequestKind,
    /// The session that asked.
    pub session_id: String,
    /// [`request_digest`] of its stored JSON.
    pub digest: [u8; 32],
}

/// The SHA-256 of a request's stored JSON (`RequestRecord::body`), byte for byte: what a
/// receipt's `request_sha256` is the hex of.
pub fn request_digest(body: &str) -> [u8; 32] {
    Sha256::digest(body.as_bytes()).into()
}

/// `text` parsed as JSON, or as a JSON string if it is not JSON.
fn json_or_text(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}
