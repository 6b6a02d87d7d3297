//! The tools as `tools/list` shows them: names, descriptions and input schemas from
//! askbus-tool, plus what MCP hosts read besides: a `title`, the four behaviour
//! `annotations`, and an `outputSchema` that every result's `structuredContent` fits.
//!
//! Schemas are written for every SDK's validator, not only the JSON Schema standard: no
//! `"type": [X, "null"]` (a `null` is spelled `anyOf`, or an optional property is simply
//! left out), since some hosts refuse type arrays. The input schemas generated from the
//! Rust argument types use type arrays for `Option` fields, all of them optional, so their
//! nullability is dropped here ([`portable`]).
//!
//! `question` and `request_approval` take one argument more than their askbus-tool
//! definitions: an optional `locale` (a BCP 47 tag), which MCP has no other place for.
//! The call's request carries it, so the human sees the request in that language, and the
//! result's text is in it ([`take_locale`]); descriptions and schemas stay English.
//!
//! The output schemas are written by hand: they describe the JSON of
//! [`ToolOutcome`](askbus_tool::ToolOutcome) and
//! [`ApprovalToolOutcome`](askbus_tool::ApprovalToolOutcome), plus the `waiting` result of
//! a call that returned before the human answered. The MCP SDKs check every
//! `structuredContent` against them (the tests run both), so a drift fails there.

use std::sync::Arc;

use askbus_tool::{ToolDefinition, ToolError};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

/// The tool that waits again for a request whose call returned a waiting result.
pub(crate) const WAIT_TOOL_NAME: &str = "wait_for_answer";

/// What the model reads about [`WAIT_TOOL_NAME`].
const WAIT_TOOL_DESCRIPTION: &str = "Keep waiting for the human's answer to a question or \
approval request that is still pending. Call it with the `id` of a result whose `status` is \
`waiting` (the `question` and `request_approval` tools return one when the human takes \
long). It returns the answer, or another `waiting` result: then call it again. Do not \
assume or invent an answer meanwhile.";

/// The argument `question` and `request_approval` take besides their askbus-tool ones.
const LOCALE_ARGUMENT: &str = "locale";

/// The tools/list entries: `question`, `request_approval` and `wait_for_answer`.
pub(crate) fn listed(question: &ToolDefinition, approval: &ToolDefinition) -> Vec<Tool> {
    vec![
        tool(
            &with_locale_argument(question),
            "Ask the human",
            hints(Idempotent::No),
            question_output(),
        ),
        tool(
            &with_locale_argument(approval),
            "Ask the human to approve tool calls",
            // The same `tool_use_id` joins the same review instead of asking again.
            hints(Idempotent::Yes),
            approval_output(),
        ),
        tool(
            &ToolDefinition {
                name: WAIT_TOOL_NAME.to_owned(),
                description: WAIT_TOOL_DESCRIPTION.to_owned(),
                parameters: json!({
                    "type": "object",
                    "properties": {"id": {
                        "type": "string",
                        "description": "The `id` of the `waiting` result (`que_…` or `apr_…`).",
                    }},
                    "required": ["id"],
                    "additionalProperties": false,
                }),
            },
            "Wait for the human's answer",
            hints(Idempotent::Yes),
            wait_output(),
        ),
    ]
}

/// `definition` with the optional `locale` argument in its schema.
fn with_locale_argument(definition: &ToolDefinition) -> ToolDefinition {
    let mut definition = definition.clone();
    if let Some(Value::Object(properties)) = definition.parameters.get_mut("properties") {
        properties.insert(
            LOCALE_ARGUMENT.to_owned(),
            json!({
                "type": "string",
                "description": "The human's language as a BCP 47 tag (\"vi\", \"zh-CN\", \"en\"), if you know it: the human sees the request in it, and this tool's result is written in it (English, Vietnamese and Chinese are spoken; any other is English).",
            }),
        );
    }
    definition
}

/// Takes the optional `locale` argument out of the `args` of a call of `tool` (`question`
/// or `request_approval`), leaving the arguments its askbus-tool counterpart takes. A tag
/// that is no BCP 47 tag is refused when the request is made.
///
/// # Errors
///
/// [`ToolError::InvalidArguments`] when `locale` is not a string (`null` is no locale).
pub(crate) fn take_locale(
    tool: &str,
    mut args: Value,
) -> Result<(Value, Option<String>), ToolError> {
    let locale = match args
        .as_object_mut()
        .and_then(|args| args.remove(LOCALE_ARGUMENT))
    {
        None | Some(Value::Null) => None,
        Some(Value::String(locale)) => Some(locale),
        Some(other) => {
            return Err(ToolError::InvalidArguments {
                tool: tool.to_owned(),
                message: format!(
                    "`{LOCALE_ARGUMENT}` must be a BCP 47 language tag string such as \"vi\", not {other}"
                ),
            });
        }
    };
    Ok((args, locale))
}

/// Whether calling a tool again with the same arguments has no further effect.
enum Idempotent {
    Yes,
    No,
}

/// The annotations of an askbus tool. None changes anything of the host's: they ask a
/// human, show them a request and wait (`readOnlyHint`, not destructive); the human is
/// outside the host (`openWorldHint`).
fn hints(idempotent: Idempotent) -> ToolAnnotations {
    let mut hints = ToolAnnotations::default();
    hints.read_only_hint = Some(true);
    hints.destructive_hint = Some(false);
    hints.idempotent_hint = Some(matches!(idempotent, Idempotent::Yes));
    hints.open_world_hint = Some(true);
    hints
}

fn tool(
    definition: &ToolDefinition,
    title: &str,
    annotations: ToolAnnotations,
    output: Value,
) -> Tool {
    let mut tool: Tool = serde_json::from_value(definition.to_mcp())
        .unwrap_or_else(|error| unreachable!("the MCP tool shape is an MCP tool: {error}"));
    tool.title = Some(title.to_owned());
    tool.input_schema = Arc::new(object(portable(Value::Object(
        tool.input_schema.as_ref().clone(),
    ))));
    tool.output_schema = Some(Arc::new(object(output)));
    tool.annotations = Some(annotations);
    tool
}

/// `schema` without `"type": [X, "null"]`: each such type becomes `X`. Only optional
/// properties are nullable in askbus's argument types, and leaving one out means the same
/// as `null`.
pub(crate) fn portable(schema: Value) -> Value {
    match schema {
        Value::Object(mut object) => {
            if let Some(Value::Array(types)) = object.get("type") {
                let mut kept: Vec<Value> = types
                    .iter()
                    .filter(|kind| kind.as_str() != Some("null"))
                    .cloned()
                    .collect();
                let replacement = if kept.len() == 1 {
                    kept.remove(0)
                } else {
                    Value::Array(kept)
                };
                object.insert("type".to_owned(), replacement);
            }
            if object.get("default") == Some(&Value::Null) {
                object.remove("default");
            }
            Value::Object(
                object
                    .into_iter()
                    .map(|(key, value)| (key, portable(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(portable).collect()),
        other => other,
    }
}

/// The structured content of `question`.
fn question_output() -> Value {
    outcome_schema(
        &[
            "answered",
            "rejected",
            "timed_out",
            "default_applied",
            "cancelled",
        ],
        question_properties(),
    )
}

/// The structured content of `request_approval`.
fn approval_output() -> Value {
    outcome_schema(
        &["decided", "timed_out", "cancelled"],
        approval_properties(),
    )
}

/// The structured content of `wait_for_answer`: either tool's.
fn wait_output() -> Value {
    let mut properties = question_properties();
    properties.extend(approval_properties());
    outcome_schema(
        &[
            "answered",
            "rejected",
            "timed_out",
            "default_applied",
            "cancelled",
            "decided",
        ],
        properties,
    )
}

/// An object with a `status` among `statuses` or `waiting`, and `properties` besides.
fn outcome_schema(statuses: &[&str], mut properties: Map<String, Value>) -> Value {
    let mut statuses: Vec<&str> = statuses.to_vec();
    statuses.push("waiting");
    properties.insert(
        "status".to_owned(),
        json!({
            "type": "string",
            "enum": statuses,
            "description": "How the request ended, or `waiting`: the human has not answered yet, call `wait_for_answer` with `id`.",
        }),
    );
    properties.insert(
        "id".to_owned(),
        json!({"type": "string", "description": "With `waiting`: the request to wait for."}),
    );
    properties.insert(
        "kind".to_owned(),
        json!({"type": "string", "enum": ["question", "approval"], "description": "With `waiting`: what the request is."}),
    );
    json!({
        "type": "object",
        "properties": properties,
        "required": ["status"],
    })
}

fn question_properties() -> Map<String, Value> {
    let properties = json!({
        "answers": {
            "type": "array",
            "description": "With `answered` or `default_applied`: each question with its answer.",
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "answer": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["question", "answer"],
            },
        },
        "reason": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "With `rejected`: the human's reason, if given.",
        },
    });
    object(properties)
}

fn approval_properties() -> Map<String, Value> {
    let decision = json!({
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["approve", "edit", "reject", "respond"]},
            "message": {"type": "string"},
            "edited_action": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "args": {"type": "object"}},
                "required": ["name", "args"],
            },
        },
        "required": ["type"],
    });
    let properties = json!({
        "decisions": {
            "type": "array",
            "description": "With `decided`: one decision per action, in order.",
            "items": decision,
        },
        "user_edit_content": {"type": "string", "description": "Free text the human added."},
        "votes": {
            "type": "array",
            "description": "Under a quorum: every reviewer's decisions.",
            "items": {"type": "object"},
        },
    });
    object(properties)
}

/// The map of a JSON object literal.
fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => unreachable!("a JSON Schema object, not {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_types_lose_their_null_and_nothing_else_changes() {
        let schema = json!({
            "type": "object",
            "properties": {
                "description": {"type": ["string", "null"], "default": null},
                "either": {"type": ["string", "integer", "null"]},
                "items": {"type": "array", "items": {"type": ["object", "null"]}},
                "kept": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": ""},
            },
        });
        assert_eq!(
            portable(schema),
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "either": {"type": ["string", "integer"]},
                    "items": {"type": "array", "items": {"type": "object"}},
                    "kept": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": ""},
                },
            })
        );
    }
}
