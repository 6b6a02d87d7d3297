//! The name of every key a Redis store keeps, under its prefix.

use crate::RequestKind;
use crate::history::SharedHistoryLimit;

/// Key names under one prefix, and the one setting the scripts take from the store.
#[derive(Debug)]
pub(super) struct Keys {
    /// Prepended, with a `:`, to every key and channel.
    pub(super) prefix: String,
    /// How much a session's history keeps.
    pub(super) history_limit: SharedHistoryLimit,
}

impl Keys {
    pub(super) fn schema(&self) -> String {
        format!("{}:schema", self.prefix)
    }

    pub(super) fn request(&self, id: &str) -> String {
        format!("{}:req:{id}", self.prefix)
    }

    pub(super) fn pending(&self, kind: RequestKind) -> String {
        format!("{}:pending:{}", self.prefix, kind.as_str())
    }

    pub(super) fn resolved(&self, kind: RequestKind) -> String {
        format!("{}:resolved:{}", self.prefix, kind.as_str())
    }

    pub(super) fn resolved_at(&self) -> String {
        format!("{}:resolved_at", self.prefix)
    }

    pub(super) fn calls(&self, kind: RequestKind) -> String {
        format!("{}:calls:{}", self.prefix, kind.as_str())
    }

    pub(super) fn events(&self) -> String {
        format!("{}:events", self.prefix)
    }

    pub(super) fn log(&self) -> String {
        format!("{}:log", self.prefix)
    }

    pub(super) fn log_counter(&self) -> String {
        format!("{}:log:seq", self.prefix)
    }

    /// What a session's history key is named after: the session id follows.
    pub(super) fn history_prefix(&self) -> String {
        format!("{}:hist:", self.prefix)
    }

    pub(super) fn history(&self, session_id: &str) -> String {
        format!("{}:hist:{session_id}", self.prefix)
    }

    pub(super) fn histories(&self) -> String {
        format!("{}:histories", self.prefix)
    }

    pub(super) fn waiting(&self) -> String {
        format!("{}:waiting", self.prefix)
    }

    pub(super) fn history_bytes(&self) -> String {
        format!("{}:history_bytes", self.prefix)
    }

    pub(super) fn audit(&self) -> String {
        format!("{}:audit", self.prefix)
    }

    pub(super) fn audit_counter(&self) -> String {
        format!("{}:audit:seq", self.prefix)
    }

    pub(super) fn audit_seals(&self) -> String {
        format!("{}:audit:seals", self.prefix)
    }

    pub(super) fn outbox_due(&self) -> String {
        format!("{}:outbox:due", self.prefix)
    }

    pub(super) fn outbox_settled(&self) -> String {
        format!("{}:outbox:settled", self.prefix)
    }

    pub(super) fn outbox_order(&self) -> String {
        format!("{}:outbox:order", self.prefix)
    }

    /// What a delivery's hash key is named after: its member name follows (see
    /// [`delivery_member`]).
    pub(super) fn delivery_prefix(&self) -> String {
        format!("{}:dlv:", self.prefix)
    }

    pub(super) fn delivery(&self, member: &str) -> String {
        format!("{}:dlv:{member}", self.prefix)
    }
}

/// The `calls:{kind}` field of a tool call: JSON, so no session or call id can collide.
pub(super) fn call_field(session_id: &str, call_id: &str) -> String {
    serde_json::json!([session_id, call_id]).to_string()
}

/// The name of a delivery in the outbox's sets: its message id, a tab, its target. Message
/// ids hold no tab, so the names sort as the message ids do, then as the targets.
pub(super) fn delivery_member(message_id: &str, target: &str) -> String {
    format!("{message_id}\t{target}")
}
