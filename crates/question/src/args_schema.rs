//! The `args_schema` of an approval action: the JSON Schema its arguments, and any edit of
//! them, must fit.
//!
//! An action may carry the schema of its tool's parameters ([`Action::args_schema`]). It is
//! checked twice, in the approval service, so every way in (HTTP, MCP, the tools, the
//! guard) passes the same check:
//!
//! - **When the request is made**: the schema must be a valid JSON Schema, and the
//!   action's own `args` must fit it (an agent proposing arguments its own schema refuses
//!   asks a human to review a call that could not run).
//! - **When a human edits the action**: the edited `args` must fit it, so a tool never runs
//!   with arguments it does not take.
//!
//! **Nothing is fetched.** A schema is compiled offline: a `$ref` (or `$schema`) that points
//! outside the schema itself is not retrieved, and the schema is refused. Patterns use the
//! linear-time `regex` engine, so a hostile pattern cannot make a check backtrack for long.
//! A schema's size is bounded as the rest of the request is (it counts toward the
//! request's weight), and so is what it stands for once its `$ref`s are followed (see
//! `expansion`): references that fan out would make each check exponential. The
//! validator is compiled for each check; schemas of tool parameters are small, and a
//! reply is checked once.
//!
//! **Without the `args-schema` feature** (jsonschema and its 60-odd crates left out), a
//! schema cannot be checked, so an action that carries one is refused when the request is
//! made, with a message naming the feature: never let through unchecked.
//!
//! [`Action::args_schema`]: crate::Action::args_schema

#[cfg(feature = "args-schema")]
mod expansion;

#[cfg(feature = "args-schema")]
use jsonschema::{PatternOptions, Validator};
use serde_json::Value;

/// Nothing to compile a schema into, in a build that cannot check one.
#[cfg(not(feature = "args-schema"))]
pub(crate) enum Validator {}

#[cfg(feature = "args-schema")]
/// The longest validation message quoted, in characters: a message quotes the value that
/// failed, which may be the whole arguments.
const MAX_MESSAGE_CHARS: usize = 300;

#[cfg(feature = "args-schema")]
/// Compiles `schema` without fetching anything.
///
/// # Errors
///
/// Why `schema` is not a JSON Schema this service can use: it does not fit its
/// meta-schema, or it refers to a document outside itself.
pub(crate) fn compile(schema: &Value) -> Result<Validator, String> {
    expansion::check_expansion(schema)?;
    jsonschema::options()
        .offline()
        .with_pattern_options(PatternOptions::regex())
        .build(schema)
        .map_err(|error| shorten(&error.to_string()))
}

#[cfg(feature = "args-schema")]
/// Checks `args` against `validator`; `field` is where the arguments are in the client's
/// JSON (`decisions[0].edited_action.args`), so the message names the field that failed.
///
/// # Errors
///
/// `field.path: what is wrong`, for the first value that does not fit.
pub(crate) fn check(validator: &Validator, args: &Value, field: &str) -> Result<(), String> {
    validator.validate(args).map_err(|error| {
        let mut path = field.to_owned();
        for segment in error.instance_path().segments() {
            match segment {
                jsonschema::paths::LocationSegment::Property(name) if is_identifier(&name) => {
                    path.push('.');
                    path.push_str(&name);
                }
                jsonschema::paths::LocationSegment::Property(name) => {
                    path.push_str(&format!("[{name:?}]"));
                }
                jsonschema::paths::LocationSegment::Index(index) => {
                    path.push_str(&format!("[{index}]"));
                }
            }
        }
        format!("{path}: {}", shorten(&error.to_string()))
    })
}

#[cfg(feature = "args-schema")]
/// Whether `name` reads unquoted after a dot: letters, digits and `_`, not starting with a
/// digit.
fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|first| first.is_alphabetic() || first == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(feature = "args-schema")]
/// `message`, cut to [`MAX_MESSAGE_CHARS`].
fn shorten(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message.to_owned(),
    }
}

/// Refuses every schema: this build cannot check one.
///
/// # Errors
///
/// Always, naming the feature that checks schemas.
#[cfg(not(feature = "args-schema"))]
pub(crate) fn compile(_schema: &Value) -> Result<Validator, String> {
    Err(
        "this askbus cannot check an args_schema (built without askbus-question's \
         `args-schema` feature), so it takes no action that carries one"
            .to_owned(),
    )
}

/// Never called: no [`Validator`] exists in a build that cannot check a schema.
#[cfg(not(feature = "args-schema"))]
pub(crate) fn check(validator: &Validator, _args: &Value, _field: &str) -> Result<(), String> {
    match *validator {}
}
