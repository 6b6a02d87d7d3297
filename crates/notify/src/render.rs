//! A request event told in words, for the channels people read (Slack, email) rather than
//! programs (webhooks, which get the payload itself).
//!
//! Every channel reads the same payload the outbox keeps (`{"type", "timestamp", "data"}`,
//! `data` as the event stream shows it), so a message queued before a restart is told the
//! same after it. What cannot be read (a payload of an unknown shape) is told as its type
//! and request id, never dropped: the channel still hears that something happened.
//!
//! The agent's text is shown with its hidden characters marked (`askbus_question::visible`:
//! `⟨U+202E⟩`, and `\u202e` in arguments), as the web UI shows it: [`shown`] for text,
//! [`shown_line`] for names and labels, [`shown_args`] for a call's arguments.

use std::borrow::Cow;

use askbus_question::visible::{visible_json, visible_text};
use serde_json::Value;

/// The longest a tool call's arguments are shown, in characters: enough to judge a call,
/// and far below Slack's 3,000 per text block.
pub(crate) const MAX_ARGS: usize = 600;

/// A request event, as read from an outbox payload.
#[derive(Debug, Clone)]
pub(crate) struct Told {
    /// Its type: `question.asked`, `approval.replied`, …
    pub(crate) kind: String,
    /// Its properties.
    pub(crate) data: Value,
}

impl Told {
    /// The event of `payload`; `None` if it is not an outbox payload at all.
    pub(crate) fn parse(payload: &str) -> Option<Self> {
        let mut message: Value = serde_json::from_str(payload).ok()?;
        let kind = message.get("type")?.as_str()?.to_owned();
        let data = message.get_mut("data").map(Value::take).unwrap_or_default();
        Some(Self { kind, data })
    }

    /// Whether it asks something (`question.asked`, `approval.asked`).
    pub(crate) fn is_asked(&self) -> bool {
        self.kind.ends_with(".asked")
    }

    /// Whether it is about an approval (else a question).
    pub(crate) fn is_approval(&self) -> bool {
        self.kind.starts_with("approval.")
    }

    /// The id of the request it is about (`que_…`, `apr_…`).
    pub(crate) fn request_id(&self) -> &str {
        let data = &self.data;
        [&data["id"], &data["requestID"], &data["request_id"]]
            .into_iter()
            .find_map(Value::as_str)
            .unwrap_or("(unknown request)")
    }

    /// When the request expires, if it does (asked events only).
    pub(crate) fn expires_at(&self) -> Option<u64> {
        self.data["expiresAt"]
            .as_u64()
            .or_else(|| self.data["expires_at"].as_u64())
    }

    /// The session the request is in, as shown (hidden characters marked).
    pub(crate) fn session(&self) -> Cow<'_, str> {
        visible_text(
            [&self.data["sessionID"], &self.data["session_id"]]
                .into_iter()
                .find_map(Value::as_str)
                .unwrap_or("?"),
            false,
        )
    }

    /// The subject of an asked request: `Question: <its header or text>` or
    /// `Approval: <the tools>`.
    pub(crate) fn asked_title(&self) -> String {
        if self.is_approval() {
            let tools: Vec<Cow<'_, str>> = self
                .actions()
                .iter()
                .map(|action| shown_line(&action["name"]))
                .collect();
            truncate(&format!("Approval: {}", tools.join(", ")), 140)
        } else {
            let first = &self.questions().first().cloned().unwrap_or_default();
            let header = first["header"].as_str().filter(|header| !header.is_empty());
            let text = header.or_else(|| first["question"].as_str()).unwrap_or("");
            truncate(&format!("Question: {}", visible_text(text, false)), 140)
        }
    }

    /// An asked request in plain text: each question and its options, or each tool call
    /// and its arguments.
    pub(crate) fn asked_text(&self) -> String {
        let mut text = format!("Session {}", self.session());
        if let Some(by) = who(&self.data["askedBy"]).or_else(|| who(&self.data["asked_by"])) {
            text.push_str(&format!(", asked by {by}"));
        }
        text.push_str(&format!(" ({})\n", self.request_id()));
        if self.is_approval() {
            for action in self.actions() {
                text.push_str(&format!("\nTool call: {}\n", shown_line(&action["name"])));
                if action["description"].is_string() {
                    text.push_str(&format!("{}\n", shown(&action["description"])));
                }
                text.push_str(&format!("Arguments: {}\n", args_of(action)));
            }
        } else {
            for question in self.questions() {
                text.push('\n');
                if let Some(header) = question["header"].as_str().filter(|h| !h.is_empty()) {
                    text.push_str(&format!("{}\n", visible_text(header, false)));
                }
                text.push_str(&format!("{}\n", shown(&question["question"])));
                for option in question["options"].as_array().into_iter().flatten() {
                    let label = shown_line(&option["label"]);
                    match option["description"].as_str().filter(|d| !d.is_empty()) {
                        Some(description) => text.push_str(&format!(
                            "  - {label}: {}\n",
                            visible_text(description, true)
                        )),
                        None => text.push_str(&format!("  - {label}\n")),
                    }
                }
            }
        }
        text
    }

    /// An outcome, a vote or any other event in one line: what happened to which request,
    /// and who decided.
    pub(crate) fn outcome_line(&self) -> String {
        let id = self.request_id();
        let what = if self.is_approval() {
            "Approval"
        } else {
            "Question"
        };
        let by = who(&self.data["answeredBy"])
            .or_else(|| who(&self.data["answered_by"]))
            .or_else(|| who(&self.data["decided_by"]));
        let by = by.map(|by| format!(" by {by}")).unwrap_or_default();
        match self.kind.as_str() {
            "question.replied" => {
                let answers: Vec<String> = self.data["answers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|answer| match answer.as_array() {
                        Some(labels) => labels
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|label| visible_text(label, false))
                            .collect::<Vec<_>>()
                            .join(", "),
                        None => answer.to_string(),
                    })
                    .collect();
                truncate(
                    &format!("{what} {id} was answered{by}: {}", answers.join(" / ")),
                    2_000,
                )
            }
            "question.rejected" => {
                let reason = self.data["reason"]
                    .as_str()
                    .map(|reason| format!(": {}", visible_text(reason, true)))
                    .unwrap_or_default();
                truncate(&format!("{what} {id} was rejected{by}{reason}"), 2_000)
            }
            "approval.replied" => format!(
                "{what} {id} was decided{by}: {}",
                decisions(&self.data["decisions"])
            ),
            "approval.decided" => format!(
                "{what} {id}: {by_name} voted {} ({} of {} alike)",
                decisions(&self.data["decisions"]),
                self.data["agreeing"].as_u64().unwrap_or(0),
                self.data["quorum"].as_u64().unwrap_or(0),
                by_name = who(&self.data["decided_by"]).unwrap_or_else(|| "someone".into()),
            ),
            kind if kind.ends_with(".timed_out") => {
                format!("{what} {id} timed out: nobody answered in time")
            }
            kind if kind.ends_with(".cancelled") => format!("{what} {id} was cancelled{by}"),
            kind => format!("{what} {id}: {kind}{by}"),
        }
    }

    /// The questions of a `question.asked`.
    pub(crate) fn questions(&self) -> &[Value] {
        self.data["questions"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The tool calls of an `approval.asked`.
    pub(crate) fn actions(&self) -> &[Value] {
        self.data["action_requests"]
            .as_array()
            .map_or(&[], Vec::as_slice)
    }
}

/// A tool call's arguments as compact JSON, at most [`MAX_ARGS`] characters.
pub(crate) fn args_of(action: &Value) -> String {
    truncate(&shown_args(action), MAX_ARGS)
}

/// A tool call's arguments as compact JSON, whole, with hidden characters as `\uXXXX`.
pub(crate) fn shown_args(action: &Value) -> String {
    let json = action["args"].to_string();
    visible_json(&json).into_owned()
}

/// The agent's text `value` (a string, else empty) as shown: hidden characters marked,
/// newlines kept.
pub(crate) fn shown(value: &Value) -> Cow<'_, str> {
    visible_text(value.as_str().unwrap_or(""), true)
}

/// The agent's one-line text `value` (a name, a label; else `?`) as shown: hidden
/// characters and newlines marked.
pub(crate) fn shown_line(value: &Value) -> Cow<'_, str> {
    visible_text(value.as_str().unwrap_or("?"), false)
}

/// `name (role)` of an identity's JSON, if it is one.
pub(crate) fn who(identity: &Value) -> Option<String> {
    let name = identity["name"].as_str()?;
    Some(match identity["role"].as_str() {
        Some(role) => format!("{name} ({role})"),
        None => name.to_owned(),
    })
}

/// The decisions of an approval's reply, by type: `approve, reject`.
fn decisions(decisions: &Value) -> String {
    let types: Vec<&str> = decisions
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|decision| decision["type"].as_str())
        .collect();
    if types.is_empty() {
        "no decision".to_owned()
    } else {
        types.join(", ")
    }
}

/// `text` cut to at most `max` characters, the cut marked with `…`.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn told(kind: &str, data: Value) -> Told {
        Told::parse(&serde_json::json!({"type": kind, "timestamp": "", "data": data}).to_string())
            .unwrap()
    }

    #[test]
    fn outcomes_name_the_request_what_happened_and_who_decided() {
        let check = |kind, data: Value, expected: &str| {
            assert_eq!(told(kind, data).outcome_line(), expected);
        };
        let alice = serde_json::json!({"name": "alice", "role": "reviewer"});
        check(
            "question.replied",
            serde_json::json!({"requestID": "que_1", "answers": [["eu"], ["a", "b"]], "answeredBy": alice}),
            "Question que_1 was answered by alice (reviewer): eu / a, b",
        );
        check(
            "question.rejected",
            serde_json::json!({"requestID": "que_1", "reason": "no", "answeredBy": alice}),
            "Question que_1 was rejected by alice (reviewer): no",
        );
        check(
            "approval.replied",
            serde_json::json!({"request_id": "apr_1", "decisions": [{"type": "approve"}], "answered_by": alice}),
            "Approval apr_1 was decided by alice (reviewer): approve",
        );
        check(
            "approval.timed_out",
            serde_json::json!({"request_id": "apr_1"}),
            "Approval apr_1 timed out: nobody answered in time",
        );
        check(
            "question.cancelled",
            serde_json::json!({"requestID": "que_1"}),
            "Question que_1 was cancelled",
        );
    }

    #[test]
    fn truncation_counts_characters_not_bytes() {
        assert_eq!(truncate("ééééé", 5), "ééééé");
        assert_eq!(truncate("éééééé", 5), "éééé…");
    }
}
