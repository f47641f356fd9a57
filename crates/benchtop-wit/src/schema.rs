//! JSON Schemas for WIT types (docs/design.md, Contract 1).
//!
//! Schemas are inlined (no `$defs`): WIT types are not recursive, and inline
//! schemas are what MCP clients render and validate most reliably.

use crate::names::json_name;
use crate::types::{field_description, field_header, field_key};
use crate::types::{int_bounds, resolve_alias};
use serde_json::{Map, Value, json};
use wit_parser::{Handle, Resolve, Type, TypeDefKind};

/// Whether a schema describes arguments (what we accept) or results (what we emit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Tool arguments.
    Input,
    /// Structured results.
    Output,
}

/// A WIT type that cannot cross JSON.
#[derive(Debug, thiserror::Error)]
#[error(
    "type `{0}` cannot be expressed in JSON (resources, futures and streams are not supported in tool signatures)"
)]
pub struct Unsupported(pub String);

fn bound_json(n: i128) -> Value {
    if n < 0 {
        json!(n as i64)
    } else {
        json!(n as u64)
    }
}

/// The JSON Schema of `ty`.
pub fn schema(resolve: &Resolve, ty: &Type, dir: Direction) -> Result<Value, Unsupported> {
    let kind = match resolve_alias(resolve, ty) {
        Ok(prim) => return Ok(primitive(prim, dir)),
        Err(kind) => kind,
    };
    Ok(match kind {
        TypeDefKind::Record(record) => {
            let mut props = Map::new();
            let mut required = Vec::new();
            for field in &record.fields {
                // Both directions use the field's `@key` (`convert.rs`
                // also takes the snake_case name); results leave a `none`
                // out (`shape.rs`).
                let (name, (mut s, optional)) = match dir {
                    Direction::Input => (field_key(field), property(resolve, &field.ty, dir)?),
                    Direction::Output => (field_key(field), omissible(resolve, &field.ty)?),
                };
                if let Some(doc) = field_description(field) {
                    add_description(&mut s, &doc);
                }
                if dir == Direction::Input
                    && let Some(header) = field_header(field)
                    && let Value::Object(o) = &mut s
                {
                    o.insert("x-mcp-header".into(), Value::String(header));
                }
                if !optional {
                    required.push(Value::String(name.clone()));
                }
                props.insert(name, s);
            }
            object(props, required)
        }
        TypeDefKind::Tuple(tuple) => {
            let items = tuple
                .types
                .iter()
                .map(|t| schema(resolve, t, dir))
                .collect::<Result<Vec<_>, _>>()?;
            let n = items.len();
            // maxItems forbids extra items; a bare `"items": false` says the
            // same but is refused by clients' strict schema checks (the
            // MCP Inspector's --strict) as unportable.
            json!({"type": "array", "prefixItems": items, "minItems": n, "maxItems": n})
        }
        TypeDefKind::Flags(flags) => {
            let names: Vec<String> = flags.flags.iter().map(|f| json_name(&f.name)).collect();
            json!({"type": "array", "items": {"type": "string", "enum": names}, "uniqueItems": true})
        }
        TypeDefKind::Enum(e) => {
            let names: Vec<String> = e.cases.iter().map(|c| json_name(&c.name)).collect();
            json!({"type": "string", "enum": names})
        }
        TypeDefKind::Variant(v) => {
            let mut one_of = Vec::new();
            let bare: Vec<String> = v
                .cases
                .iter()
                .filter(|c| c.ty.is_none())
                .map(|c| json_name(&c.name))
                .collect();
            if !bare.is_empty() {
                one_of.push(json!({"type": "string", "enum": bare}));
            }
            for case in &v.cases {
                if let Some(t) = &case.ty {
                    let name = json_name(&case.name);
                    let mut payload = schema(resolve, t, dir)?;
                    if let Some(doc) = &case.docs.contents {
                        add_description(&mut payload, doc);
                    }
                    let mut props = Map::new();
                    props.insert(name.clone(), payload);
                    one_of.push(object(props, vec![Value::String(name)]));
                }
            }
            json!({ "oneOf": one_of })
        }
        TypeDefKind::Option(inner) => nullable(schema(resolve, inner, dir)?),
        TypeDefKind::Result(r) => {
            let arm = |name: &str, t: &Option<Type>| -> Result<Value, Unsupported> {
                let payload = match t {
                    Some(t) => schema(resolve, t, dir)?,
                    None => json!({"type": "null"}),
                };
                let mut props = Map::new();
                props.insert(name.to_owned(), payload);
                Ok(object(props, vec![Value::String(name.to_owned())]))
            };
            json!({"oneOf": [arm("ok", &r.ok)?, arm("err", &r.err)?]})
        }
        TypeDefKind::List(t) => json!({"type": "array", "items": schema(resolve, t, dir)?}),
        TypeDefKind::FixedLengthList(t, n) => {
            json!({"type": "array", "items": schema(resolve, t, dir)?, "minItems": n, "maxItems": n})
        }
        TypeDefKind::Map(k, v) => {
            if matches!(resolve_alias(resolve, k), Ok(Type::String)) {
                json!({"type": "object", "additionalProperties": schema(resolve, v, dir)?})
            } else {
                let pair = json!({"type": "array", "prefixItems": [schema(resolve, k, dir)?, schema(resolve, v, dir)?], "minItems": 2, "maxItems": 2});
                json!({"type": "array", "items": pair})
            }
        }
        TypeDefKind::Resource
        | TypeDefKind::Handle(Handle::Own(_) | Handle::Borrow(_))
        | TypeDefKind::Future(_)
        | TypeDefKind::Stream(_)
        | TypeDefKind::Unknown
        | TypeDefKind::Type(_) => return Err(Unsupported(type_name(resolve, ty))),
    })
}

/// The schema of a record field or parameter, and whether it may be omitted.
pub fn property(
    resolve: &Resolve,
    ty: &Type,
    dir: Direction,
) -> Result<(Value, bool), Unsupported> {
    if let Err(TypeDefKind::Option(inner)) = resolve_alias(resolve, ty) {
        // An optional argument is simply not required; results spell absence
        // as null, so output schemas must admit it.
        let s = schema(resolve, inner, dir)?;
        return Ok((
            match dir {
                Direction::Input => s,
                Direction::Output => nullable(s),
            },
            true,
        ));
    }
    Ok((schema(resolve, ty, dir)?, false))
}

/// The schema of a result record's field, and whether it may be missing: an
/// `option` field that is `none` is left out of the object, never `null`.
fn omissible(resolve: &Resolve, ty: &Type) -> Result<(Value, bool), Unsupported> {
    match resolve_alias(resolve, ty) {
        Err(TypeDefKind::Option(inner)) => Ok((schema(resolve, inner, Direction::Output)?, true)),
        _ => Ok((schema(resolve, ty, Direction::Output)?, false)),
    }
}

fn primitive(ty: Type, dir: Direction) -> Value {
    if let Some((min, max)) = int_bounds(ty) {
        return json!({"type": "integer", "minimum": bound_json(min), "maximum": bound_json(max)});
    }
    match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::F32 | Type::F64 => match dir {
            Direction::Input => json!({"type": "number"}),
            // JSON has no NaN or infinity: results spell them as strings.
            Direction::Output => json!({"anyOf": [
                {"type": "number"},
                {"type": "string", "enum": ["NaN", "Infinity", "-Infinity"]}
            ]}),
        },
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        _ => json!({}),
    }
}

fn object(props: Map<String, Value>, required: Vec<Value>) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), json!("object"));
    o.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        o.insert("required".into(), Value::Array(required));
    }
    o.insert("additionalProperties".into(), json!(false));
    Value::Object(o)
}

fn nullable(s: Value) -> Value {
    json!({"anyOf": [s, {"type": "null"}]})
}

fn add_description(schema: &mut Value, doc: &str) {
    if let Value::Object(o) = schema {
        o.insert("description".into(), Value::String(doc.trim().to_owned()));
    }
}

/// A readable name for a type, for error messages.
pub fn type_name(resolve: &Resolve, ty: &Type) -> String {
    match ty {
        Type::Id(id) => {
            let def = &resolve.types[*id];
            match (&def.name, &def.kind) {
                (Some(n), _) => n.clone(),
                (None, TypeDefKind::Handle(_)) => "resource handle".into(),
                (None, TypeDefKind::Future(_)) => "future".into(),
                (None, TypeDefKind::Stream(_)) => "stream".into(),
                (None, k) => k.as_str().to_owned(),
            }
        }
        Type::ErrorContext => "error-context".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// Builds the input schema of a tool: the fields of a lone record parameter,
/// or one property per parameter.
pub fn input_schema(
    resolve: &Resolve,
    params: &[wit_parser::Param],
    flatten: bool,
) -> Result<Value, Unsupported> {
    if flatten {
        return schema(resolve, &params[0].ty, Direction::Input);
    }
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in params {
        let name = json_name(&p.name);
        let (s, optional) = property(resolve, &p.ty, Direction::Input)?;
        if !optional {
            required.push(Value::String(name.clone()));
        }
        props.insert(name, s);
    }
    Ok(object(props, required))
}

/// Checks the `x-mcp-header` annotations (`@header NAME` tags) of a tool's
/// input schema as SEP-2243 asks and clients enforce: each an HTTP token,
/// unique in the tool (case-insensitively), on a string, integer or boolean
/// property reached through `properties` alone (never inside an array or a
/// variant), since a client drops a tool whose annotations it rejects.
pub fn check_headers(input_schema: &Value) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    check_header_properties(input_schema, &mut Vec::new(), &mut seen)?;
    Ok(())
}

fn check_header_properties(
    schema: &Value,
    path: &mut Vec<String>,
    seen: &mut std::collections::HashSet<String>,
) -> Result<(), String> {
    off_chain(schema, path)?;
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Ok(());
    };
    for (name, prop) in props {
        path.push(name.clone());
        let at = path.join(".");
        if let Some(header) = prop.get("x-mcp-header") {
            let header = header.as_str().unwrap_or_default();
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if header.is_empty() || !header.chars().all(token) {
                return Err(format!(
                    "`{at}`: `@header {header}` must name an HTTP header: letters, digits and `-`"
                ));
            }
            if !seen.insert(header.to_ascii_lowercase()) {
                return Err(format!(
                    "`{at}`: `@header {header}` is given to two fields of this tool"
                ));
            }
            if !matches!(
                prop.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "boolean")
            ) {
                return Err(format!(
                    "`{at}`: `@header {header}` needs a string, integer or bool field (a header carries one value)"
                ));
            }
        }
        check_header_properties(prop, path, seen)?;
        path.pop();
    }
    Ok(())
}

/// Fails when a part of `schema` other than its own annotation and its
/// `properties` holds an `x-mcp-header`: inside an array's items or a
/// variant's cases a field has no single value to mirror.
fn off_chain(schema: &Value, path: &[String]) -> Result<(), String> {
    fn holds_header(v: &Value) -> bool {
        match v {
            Value::Object(o) => o
                .iter()
                .any(|(k, v)| k == "x-mcp-header" || holds_header(v)),
            Value::Array(items) => items.iter().any(holds_header),
            _ => false,
        }
    }
    let nested = schema.as_object().is_some_and(|o| {
        o.iter()
            .any(|(k, v)| k != "properties" && k != "x-mcp-header" && holds_header(v))
    });
    if nested {
        Err(format!(
            "`{}`: `@header` is only for fields reached through records, not inside lists, tuples or variants",
            path.join(".")
        ))
    } else {
        Ok(())
    }
}
