//! How WIT types and record fields read, for everything that maps them to
//! JSON: aliases followed to the definition that shapes a type, integer
//! bounds, and a field's JSON key and description. The lowest layer of the
//! WIT side: [`crate::schema`], [`crate::convert`] and [`crate::shape`]
//! build on it.

use crate::docs::split_tags;
use crate::names::json_name;
use wit_parser::{Field, Resolve, Type, TypeDefKind};

/// Follows type aliases to the definition that gives a type its shape.
pub fn resolve_alias<'a>(resolve: &'a Resolve, ty: &Type) -> Result<Type, &'a TypeDefKind> {
    let mut ty = *ty;
    loop {
        match ty {
            Type::Id(id) => match &resolve.types[id].kind {
                TypeDefKind::Type(inner) => ty = *inner,
                kind => return Err(kind),
            },
            other => return Ok(other),
        }
    }
}

/// Integer bounds of a primitive integer type.
pub fn int_bounds(ty: Type) -> Option<(i128, i128)> {
    Some(match ty {
        Type::U8 => (0, u8::MAX as i128),
        Type::U16 => (0, u16::MAX as i128),
        Type::U32 => (0, u32::MAX as i128),
        Type::U64 => (0, u64::MAX as i128),
        Type::S8 => (i8::MIN as i128, i8::MAX as i128),
        Type::S16 => (i16::MIN as i128, i16::MAX as i128),
        Type::S32 => (i32::MIN as i128, i32::MAX as i128),
        Type::S64 => (i64::MIN as i128, i64::MAX as i128),
        _ => return None,
    })
}

/// The JSON key of a record field: its `@key NAME` tag, else the snake_case
/// of its name.
pub fn field_key(field: &Field) -> String {
    field
        .docs
        .contents
        .as_deref()
        .and_then(|d| split_tags(d).arg("key").map(str::to_owned))
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| json_name(&field.name))
}

/// The HTTP header a record field is mirrored into (`Mcp-Param-NAME`, SEP-2243
/// `x-mcp-header`), from its `@header NAME` tag: a load balancer routes on a
/// session id without reading the body.
pub fn field_header(field: &Field) -> Option<String> {
    field
        .docs
        .contents
        .as_deref()
        .and_then(|d| split_tags(d).arg("header").map(str::to_owned))
}

/// The description of a record field: its doc comment without tag lines.
pub fn field_description(field: &Field) -> Option<String> {
    let text = split_tags(field.docs.contents.as_deref()?).text;
    (!text.is_empty()).then_some(text)
}
