//! How a result's WIT type spells itself in JSON (docs/design.md, Contract 1).
//!
//! [`convert::to_json`](crate::convert::to_json) reads a value alone, which
//! is enough for arguments echoed back and errors. A typed tool result also
//! needs what only its type knows: a record field's JSON key may be given by
//! a `@key NAME` tag (for keys WIT cannot spell, such as Spice86's
//! `CarryFlag` or `generalPurpose`), and an `option` field that is `none` is
//! left out rather than written as `null`, the way hand-written JSON (and
//! serde's `skip_serializing_if`) does it. [`Shape`] is that knowledge, taken
//! from the type once when the plugin loads.

use crate::convert::to_json;
use crate::names::json_name;
use crate::types::{field_key, resolve_alias};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use wasmtime::component::Val;
use wit_parser::{Resolve, Type, TypeDefKind};

/// The parts of a type that change how its values read as JSON.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Shape {
    /// Nothing to know beyond the value (primitives, enums, flags, and any
    /// container of them).
    #[default]
    Plain,
    /// A record: each field's key and shape, in the type's order (the order
    /// of a record value's fields).
    Record(Vec<FieldShape>),
    /// A list (or fixed-length list) of one element shape.
    List(Box<Shape>),
    /// A tuple's element shapes.
    Tuple(Vec<Shape>),
    /// An option's payload shape (`none` is `null` outside records).
    Option(Box<Shape>),
    /// A variant's payload shapes by case name.
    Variant(HashMap<String, Shape>),
    /// A result's `ok` and `err` payload shapes.
    Result(Box<Shape>, Box<Shape>),
}

/// One record field as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldShape {
    /// The JSON key ([`field_key`]).
    pub key: String,
    /// Whether the field is an `option`, left out when `none`.
    pub optional: bool,
    /// The shape of the field's value.
    pub shape: Shape,
}

impl Shape {
    /// The shape of `ty`.
    pub fn of(resolve: &Resolve, ty: &Type) -> Shape {
        let Err(kind) = resolve_alias(resolve, ty) else {
            return Shape::Plain;
        };
        let of_opt = |t: &Option<Type>| t.as_ref().map_or(Shape::Plain, |t| Shape::of(resolve, t));
        let shape = match kind {
            TypeDefKind::Record(r) => Shape::Record(
                r.fields
                    .iter()
                    .map(|f| FieldShape {
                        key: field_key(f),
                        optional: matches!(
                            resolve_alias(resolve, &f.ty),
                            Err(TypeDefKind::Option(_))
                        ),
                        shape: Shape::of(resolve, &f.ty),
                    })
                    .collect(),
            ),
            TypeDefKind::List(t) | TypeDefKind::FixedLengthList(t, _) => {
                Shape::List(Box::new(Shape::of(resolve, t)))
            }
            TypeDefKind::Tuple(t) => {
                Shape::Tuple(t.types.iter().map(|t| Shape::of(resolve, t)).collect())
            }
            TypeDefKind::Option(t) => Shape::Option(Box::new(Shape::of(resolve, t))),
            TypeDefKind::Variant(v) => Shape::Variant(
                v.cases
                    .iter()
                    .map(|c| (c.name.clone(), of_opt(&c.ty)))
                    .collect(),
            ),
            TypeDefKind::Result(r) => {
                Shape::Result(Box::new(of_opt(&r.ok)), Box::new(of_opt(&r.err)))
            }
            _ => Shape::Plain,
        };
        // Keep the tree small: a container of plain things is plain.
        if shape.is_plain_inside() {
            Shape::Plain
        } else {
            shape
        }
    }

    fn is_plain_inside(&self) -> bool {
        match self {
            Shape::Plain => true,
            Shape::Record(_) => false,
            Shape::List(s) | Shape::Option(s) => **s == Shape::Plain,
            Shape::Tuple(items) => items.iter().all(|s| *s == Shape::Plain),
            Shape::Variant(cases) => cases.values().all(|s| *s == Shape::Plain),
            Shape::Result(ok, err) => **ok == Shape::Plain && **err == Shape::Plain,
        }
    }

    /// `val` (a value of the type this shape was taken from) as JSON.
    pub fn to_json(&self, val: &Val) -> Value {
        match (self, val) {
            (Shape::Record(fields), Val::Record(values)) if fields.len() == values.len() => {
                let mut o = Map::new();
                for (field, (_, v)) in fields.iter().zip(values) {
                    if field.optional && matches!(v, Val::Option(None)) {
                        continue;
                    }
                    o.insert(field.key.clone(), field.shape.to_json(v));
                }
                Value::Object(o)
            }
            (Shape::List(item), Val::List(items) | Val::FixedLengthList(items)) => {
                Value::Array(items.iter().map(|v| item.to_json(v)).collect())
            }
            (Shape::Tuple(shapes), Val::Tuple(items)) if shapes.len() == items.len() => {
                Value::Array(
                    shapes
                        .iter()
                        .zip(items)
                        .map(|(s, v)| s.to_json(v))
                        .collect(),
                )
            }
            (Shape::Option(inner), Val::Option(v)) => {
                v.as_deref().map_or(Value::Null, |v| inner.to_json(v))
            }
            (Shape::Variant(cases), Val::Variant(case, Some(payload))) => {
                let inner = cases
                    .get(case)
                    .map_or_else(|| to_json(payload), |s| s.to_json(payload));
                let mut o = Map::new();
                o.insert(json_name(case), inner);
                Value::Object(o)
            }
            (Shape::Result(ok, err), Val::Result(r)) => {
                let (key, shape, inner) = match r {
                    Ok(v) => ("ok", ok, v),
                    Err(v) => ("err", err, v),
                };
                json!({ key: inner.as_deref().map_or(Value::Null, |v| shape.to_json(v)) })
            }
            // Plain, or a value that does not match the shape (a host bug,
            // better shown plainly than dropped).
            _ => to_json(val),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::field_description;

    fn resolve_with(wit: &str) -> (Resolve, Type) {
        let mut resolve = Resolve::default();
        let pkg = resolve.push_str("test.wit", wit).unwrap();
        let iface = resolve.packages[pkg].interfaces["i"];
        let id = resolve.interfaces[iface].types["out"];
        (resolve, Type::Id(id))
    }

    const WIT: &str = r#"
        package t:t;
        interface i {
            record flags-out {
                /// The carry flag.
                /// @key CarryFlag
                carry: bool,
                zero: bool,
            }
            record out {
                session-id: string,
                /// Only after a reset.
                note: option<string>,
                state: flags-out,
                history: list<flags-out>,
                last: option<flags-out>,
            }
        }
    "#;

    fn flags(carry: bool) -> Val {
        Val::Record(vec![
            ("carry".into(), Val::Bool(carry)),
            ("zero".into(), Val::Bool(false)),
        ])
    }

    #[test]
    fn keys_follow_tags_and_none_fields_are_left_out() {
        let (resolve, ty) = resolve_with(WIT);
        let shape = Shape::of(&resolve, &ty);
        let val = Val::Record(vec![
            ("session-id".into(), Val::String("a".into())),
            ("note".into(), Val::Option(None)),
            ("state".into(), flags(true)),
            ("history".into(), Val::List(vec![flags(false)])),
            ("last".into(), Val::Option(Some(Box::new(flags(true))))),
        ]);
        assert_eq!(
            shape.to_json(&val),
            json!({
                "session_id": "a",
                "state": {"CarryFlag": true, "zero": false},
                "history": [{"CarryFlag": false, "zero": false}],
                "last": {"CarryFlag": true, "zero": false},
            })
        );
    }

    #[test]
    fn a_present_option_field_is_written() {
        let (resolve, ty) = resolve_with(WIT);
        let shape = Shape::of(&resolve, &ty);
        let val = Val::Record(vec![
            ("session-id".into(), Val::String("a".into())),
            (
                "note".into(),
                Val::Option(Some(Box::new(Val::String("reset".into())))),
            ),
            ("state".into(), flags(false)),
            ("history".into(), Val::List(vec![])),
            ("last".into(), Val::Option(None)),
        ]);
        let json = shape.to_json(&val);
        assert_eq!(json["note"], "reset");
        assert!(json.get("last").is_none(), "{json}");
    }

    #[test]
    fn the_tag_is_not_part_of_the_description() {
        let (resolve, _) = resolve_with(WIT);
        let iface = resolve.interfaces.iter().next().unwrap().1;
        let TypeDefKind::Record(r) = &resolve.types[iface.types["flags-out"]].kind else {
            panic!("a record")
        };
        assert_eq!(field_key(&r.fields[0]), "CarryFlag");
        assert_eq!(
            field_description(&r.fields[0]).as_deref(),
            Some("The carry flag.")
        );
        assert_eq!(field_key(&r.fields[1]), "zero");
        assert_eq!(field_description(&r.fields[1]), None);
    }
}
