//! Tool definitions in the shapes LLM APIs take.
//!
//! One [`ToolDefinition`] (name, description, JSON Schema of the arguments) renders to the
//! three shapes in common use: OpenAI's `{"type":"function","function":{…,"parameters"}}`,
//! Anthropic's `{…,"input_schema"}` and MCP's `{…,"inputSchema"}`. The schema is generated
//! from the Rust argument type, so what the model is told and what [`call`] accepts cannot
//! drift apart.
//!
//! [`call`]: crate::QuestionTool::call

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

/// A tool as an LLM sees it: what it is called, when to use it, and what it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The tool name the model calls.
    pub name: String,
    /// Tells the model what the tool does and when to use it.
    pub description: String,
    /// JSON Schema (draft-07, subschemas inlined) of the arguments object.
    pub parameters: Value,
}

impl ToolDefinition {
    /// A definition whose parameter schema is generated from `Args`.
    pub fn for_args<Args: JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: parameters_schema::<Args>(),
        }
    }

    /// The OpenAI Chat Completions / Responses tool shape.
    pub fn to_openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }

    /// The Anthropic Messages API tool shape.
    pub fn to_anthropic(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters,
        })
    }

    /// The MCP `tools/list` entry shape.
    pub fn to_mcp(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.parameters,
        })
    }
}

/// The JSON Schema of `Args`, self-contained (no `$ref`, no `$schema`): the form every LLM
/// API accepts.
fn parameters_schema<Args: JsonSchema>() -> Value {
    let mut schema = SchemaSettings::draft07()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<Args>();
    // The Rust type name means nothing to a model.
    schema.remove("title");
    schema.to_value()
}
