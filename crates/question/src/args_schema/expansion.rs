//! How far a schema's `$ref`s expand it: bounded before it is compiled.
//!
//! A validator does, for each value it checks, the work of the schema with every reference
//! followed. References can share: `a0` refers twice to `a1`, `a1` twice to `a2`, and so
//! on, so a schema of a few hundred bytes can stand for millions of subschemas. jsonschema
//! follows each reference each time (22 such levels took it 22 s to reject one number),
//! and an agent chooses its actions' schemas. So the expansion is walked first, within a
//! budget, and a schema past it is refused.
//!
//! The walk visits only where JSON Schema has subschemas (so a property named `enum` or
//! `$ref` is walked as the schema it is, and `enum`'s values are not), and follows the
//! references jsonschema would resolve here: JSON pointers into the schema itself
//! (`#/$defs/row`). Anything it could not follow the same way (an anchor, a dynamic
//! reference, a subschema with an `$id` of its own, which moves where `#` points) is
//! refused rather than left unbounded. A reference met again while it is being followed is
//! recursion: it descends into the value checked, and is walked once.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// How many subschemas a schema may stand for once its references are followed.
pub(super) const MAX_EXPANDED_SUBSCHEMAS: usize = 10_000;

/// Whether `schema` stays within [`MAX_EXPANDED_SUBSCHEMAS`] when its references are
/// followed.
///
/// # Errors
///
/// What makes it too large, or a reference it makes that cannot be followed.
pub(super) fn check_expansion(schema: &Value) -> Result<(), String> {
    Expansion {
        root: schema,
        left: MAX_EXPANDED_SUBSCHEMAS,
        following: Vec::new(),
    }
    .schema(schema, true)
}

/// A walk of a schema's expansion.
struct Expansion<'a> {
    /// What `#` points at.
    root: &'a Value,
    /// How many more subschemas the walk may visit.
    left: usize,
    /// The references being followed, outermost first.
    following: Vec<&'a str>,
}

impl<'a> Expansion<'a> {
    /// Walks the subschema `node`; `at_root` says whether it is the whole schema.
    fn schema(&mut self, node: &'a Value, at_root: bool) -> Result<(), String> {
        self.left = self.left.checked_sub(1).ok_or_else(|| {
            format!(
                "with its `$ref`s followed it stands for more than {MAX_EXPANDED_SUBSCHEMAS} \
                 subschemas, which would make checking arguments against it slow"
            )
        })?;
        let Value::Object(keywords) = node else {
            // `true`, `false`, or not a schema (which compiling it refuses).
            return Ok(());
        };
        for (keyword, value) in keywords {
            match keyword.as_str() {
                "$ref" => match value {
                    Value::String(reference) => self.follow(reference)?,
                    _ => return Err("a `$ref` that is not a string".to_owned()),
                },
                "$dynamicRef" | "$recursiveRef" => {
                    return Err(format!(
                        "`{keyword}` is not taken: give references as `#/...` pointers"
                    ));
                }
                "$id" | "id" if !at_root && value.is_string() => {
                    return Err(format!(
                        "a subschema has an `{keyword}` of its own: only the whole schema may"
                    ));
                }
                "not"
                | "if"
                | "then"
                | "else"
                | "additionalItems"
                | "additionalProperties"
                | "contains"
                | "propertyNames"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contentSchema" => self.schema(value, false)?,
                // An array of schemas; `items` is one schema since draft 2020-12, a list
                // before.
                "allOf" | "anyOf" | "oneOf" | "prefixItems" | "items" => match value {
                    Value::Array(schemas) => self.each(schemas)?,
                    schema => self.schema(schema, false)?,
                },
                "properties" | "patternProperties" | "dependentSchemas" => {
                    if let Value::Object(schemas) = value {
                        self.each_of(schemas)?;
                    }
                }
                // Draft 7's: each a schema, or a list of property names.
                "dependencies" => {
                    if let Value::Object(schemas) = value {
                        for schema in schemas.values().filter(|value| value.is_object()) {
                            self.schema(schema, false)?;
                        }
                    }
                }
                // Annotations and assertions on values (`enum`, `const`, `type`, ...), and
                // `$defs`, whose schemas count where they are referred to.
                _ => {}
            }
        }
        Ok(())
    }

    fn each(&mut self, schemas: &'a [Value]) -> Result<(), String> {
        schemas
            .iter()
            .try_for_each(|schema| self.schema(schema, false))
    }

    fn each_of(&mut self, schemas: &'a Map<String, Value>) -> Result<(), String> {
        schemas
            .values()
            .try_for_each(|schema| self.schema(schema, false))
    }

    /// Walks what `reference` points at, unless it is being followed already.
    fn follow(&mut self, reference: &'a str) -> Result<(), String> {
        if self.following.contains(&reference) {
            return Ok(());
        }
        let pointer = reference
            .strip_prefix('#')
            .filter(|pointer| pointer.is_empty() || pointer.starts_with('/'))
            .ok_or_else(|| {
                format!("`$ref` {reference:?} is not a pointer into the schema (`#/...`)")
            })?;
        let pointer: Cow<'_, str> = percent_encoding::percent_decode_str(pointer)
            .decode_utf8()
            .map_err(|_| format!("`$ref` {reference:?} is not UTF-8 once decoded"))?;
        let target = self
            .root
            .pointer(&pointer)
            .ok_or_else(|| format!("`$ref` {reference:?} points at nothing in the schema"))?;
        self.following.push(reference);
        let walked = self.schema(target, false);
        self.following.pop();
        walked
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::check_expansion;

    // Fan-outs, within the bound and past it, are tested through the HTTP API
    // (`tests/http/approvals.rs`), as an agent sends them.

    #[test]
    fn tool_schemas_as_generators_write_them_pass() {
        // Pydantic's shape: `$defs` and `#/$defs/...` references, recursion included.
        let schema = json!({
            "$defs": {
                "Row": {"type": "object", "properties": {
                    "id": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Row"}},
                }},
                "My Filter": {"enum": [{"$ref": "not a reference, a value"}]},
            },
            "type": "object",
            "properties": {
                "rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}},
                "filter": {"$ref": "#/$defs/My%20Filter"},
                "enum": {"type": "string"},
                "$ref": {"type": "integer"},
            },
            "required": ["rows"],
        });
        assert_eq!(check_expansion(&schema), Ok(()));
        assert_eq!(check_expansion(&json!({"$ref": "#"})), Ok(()));
        assert_eq!(check_expansion(&json!(true)), Ok(()));
    }

    #[test]
    fn references_it_cannot_follow_as_jsonschema_would_are_refused() {
        for (schema, expected) in [
            (json!({"$ref": "#row"}), "is not a pointer into the schema"),
            (
                json!({"$ref": "other.json"}),
                "is not a pointer into the schema",
            ),
            (json!({"$ref": "#/$defs/missing"}), "points at nothing"),
            (
                json!({"$dynamicRef": "#meta"}),
                "`$dynamicRef` is not taken",
            ),
            (
                json!({"properties": {"a": {"$id": "https://example.com/a", "$ref": "#/x"}}}),
                "has an `$id` of its own",
            ),
        ] {
            let Err(refused) = check_expansion(&schema) else {
                panic!("{schema} was taken");
            };
            assert!(refused.contains(expected), "{schema}: {refused}");
        }
    }
}
