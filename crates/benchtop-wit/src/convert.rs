//! JSON ⇄ component values, following the mapping of docs/design.md, Contract 1.
//!
//! Argument errors name the JSON path, the expected type and what was
//! received, so an agent can fix its call without reading the schema.

use crate::names::{json_name, matches};
use crate::types::{int_bounds, resolve_alias};
use serde_json::{Map, Number, Value, json};
use std::fmt;
use wasmtime::component::Val;
use wit_parser::{Resolve, Type, TypeDefKind};

/// An argument that does not fit its parameter's type.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentError {
    /// JSON path of the offending value, like `arguments.origin.x`.
    pub path: String,
    /// What was expected there.
    pub expected: String,
    /// What was found.
    pub received: String,
}

impl fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid arguments: `{}` must be {}, but got {}",
            self.path, self.expected, self.received
        )
    }
}

impl std::error::Error for ArgumentError {}

type Result<T> = std::result::Result<T, ArgumentError>;

/// Describes a JSON value briefly, for error messages.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let short: String = s.chars().take(40).collect();
            let more = if s.chars().count() > 40 { "…" } else { "" };
            format!("the string \"{short}{more}\"")
        }
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => {
            let keys: Vec<&str> = o.keys().take(5).map(String::as_str).collect();
            format!("an object with keys [{}]", keys.join(", "))
        }
    }
}

/// Converts JSON to component values for one type.
pub struct FromJson<'a> {
    resolve: &'a Resolve,
}

impl<'a> FromJson<'a> {
    /// A converter over the types of `resolve`.
    pub fn new(resolve: &'a Resolve) -> Self {
        Self { resolve }
    }

    fn err<T>(path: &str, expected: impl Into<String>, v: &Value) -> Result<T> {
        Err(ArgumentError {
            path: path.to_owned(),
            expected: expected.into(),
            received: describe(v),
        })
    }

    /// Converts the fields of a JSON object into the values of named slots
    /// (function parameters or record fields). Unknown keys are refused, and
    /// missing non-optional slots are reported.
    pub fn fields(
        &self,
        path: &str,
        slots: &[(&str, &Type)],
        obj: &Map<String, Value>,
    ) -> Result<Vec<(String, Val)>> {
        let keyed: Vec<(&str, String, &Type)> = slots
            .iter()
            .map(|(name, ty)| (*name, json_name(name), *ty))
            .collect();
        self.keyed_fields(path, &keyed, obj)
    }

    /// Like [`fields`](Self::fields), each slot with its JSON key (a record
    /// field's `@key NAME`, for names WIT cannot spell such as
    /// `resourceUri`); the snake_case and kebab-case of the WIT name are
    /// accepted too.
    fn keyed_fields(
        &self,
        path: &str,
        slots: &[(&str, String, &Type)],
        obj: &Map<String, Value>,
    ) -> Result<Vec<(String, Val)>> {
        for key in obj.keys() {
            if !slots
                .iter()
                .any(|(name, jkey, _)| jkey == key || matches(name, key))
            {
                let known: Vec<String> = slots.iter().map(|(_, k, _)| k.clone()).collect();
                return Err(ArgumentError {
                    path: join(path, key),
                    expected: if known.is_empty() {
                        "absent (this takes no arguments)".into()
                    } else {
                        format!("absent: the known names are {}", known.join(", "))
                    },
                    received: "an unknown property".into(),
                });
            }
        }
        let mut out = Vec::with_capacity(slots.len());
        for (name, jname, ty) in slots {
            let snake = json_name(name);
            let value = obj
                .get(jname)
                .or_else(|| obj.get(&snake))
                .or_else(|| obj.get(*name))
                .unwrap_or(&Value::Null);
            let field_path = join(path, jname);
            let val = match resolve_alias(self.resolve, ty) {
                Err(TypeDefKind::Option(inner)) => {
                    if value.is_null() {
                        Val::Option(None)
                    } else {
                        Val::Option(Some(Box::new(self.value(&field_path, inner, value)?)))
                    }
                }
                _ if value.is_null()
                    && !obj.contains_key(jname)
                    && !obj.contains_key(&snake)
                    && !obj.contains_key(*name) =>
                {
                    return Err(ArgumentError {
                        path: field_path,
                        expected: format!("present ({})", self.expected(ty)),
                        received: "nothing: the property is required".into(),
                    });
                }
                _ => self.value(&field_path, ty, value)?,
            };
            out.push((name.to_string(), val));
        }
        Ok(out)
    }

    /// A short description of what a type expects.
    fn expected(&self, ty: &Type) -> String {
        match resolve_alias(self.resolve, ty) {
            Ok(t) => match int_bounds(t) {
                Some((lo, hi)) => format!("an integer from {lo} to {hi}"),
                None => match t {
                    Type::Bool => "a boolean".into(),
                    Type::F32 | Type::F64 => "a number".into(),
                    Type::Char => "a one-character string".into(),
                    Type::String => "a string".into(),
                    _ => "a value".into(),
                },
            },
            Err(kind) => match kind {
                TypeDefKind::Record(_) => "an object".into(),
                TypeDefKind::Tuple(t) => format!("an array of {} items", t.types.len()),
                TypeDefKind::Flags(f) => format!(
                    "an array of distinct names from [{}]",
                    f.flags
                        .iter()
                        .map(|x| json_name(&x.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                TypeDefKind::Enum(e) => format!(
                    "one of [{}]",
                    e.cases
                        .iter()
                        .map(|x| json_name(&x.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                TypeDefKind::Variant(v) => format!(
                    "one of [{}] (cases with data as {{\"case\": value}})",
                    v.cases
                        .iter()
                        .map(|x| json_name(&x.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                TypeDefKind::Option(inner) => format!("{} or null", self.expected(inner)),
                TypeDefKind::Result(_) => "{\"ok\": …} or {\"err\": …}".into(),
                TypeDefKind::List(_) | TypeDefKind::FixedLengthList(..) => "an array".into(),
                TypeDefKind::Map(k, _) => {
                    if matches!(resolve_alias(self.resolve, k), Ok(Type::String)) {
                        "an object".into()
                    } else {
                        "an array of [key, value] pairs".into()
                    }
                }
                _ => "a value".into(),
            },
        }
    }

    /// Converts one JSON value to a component value of type `ty`.
    pub fn value(&self, path: &str, ty: &Type, v: &Value) -> Result<Val> {
        let kind = match resolve_alias(self.resolve, ty) {
            Ok(prim) => return self.primitive(path, prim, v),
            Err(kind) => kind,
        };
        match kind {
            TypeDefKind::Record(r) => {
                let Value::Object(obj) = v else {
                    return Self::err(path, self.expected(ty), v);
                };
                let slots: Vec<(&str, String, &Type)> = r
                    .fields
                    .iter()
                    .map(|f| (f.name.as_str(), crate::types::field_key(f), &f.ty))
                    .collect();
                Ok(Val::Record(self.keyed_fields(path, &slots, obj)?))
            }
            TypeDefKind::Tuple(t) => {
                let Value::Array(items) = v else {
                    return Self::err(path, self.expected(ty), v);
                };
                if items.len() != t.types.len() {
                    return Self::err(path, self.expected(ty), v);
                }
                let vals = t
                    .types
                    .iter()
                    .zip(items)
                    .enumerate()
                    .map(|(i, (t, item))| self.value(&format!("{path}[{i}]"), t, item))
                    .collect::<Result<_>>()?;
                Ok(Val::Tuple(vals))
            }
            TypeDefKind::Flags(f) => {
                let Value::Array(items) = v else {
                    return Self::err(path, self.expected(ty), v);
                };
                let mut set: Vec<String> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let name = item
                        .as_str()
                        .and_then(|s| f.flags.iter().find(|fl| matches(&fl.name, s)));
                    match name {
                        Some(fl) if !set.contains(&fl.name) => set.push(fl.name.clone()),
                        Some(_) => {
                            return Self::err(
                                &format!("{path}[{i}]"),
                                "a flag not already listed",
                                item,
                            );
                        }
                        None => return Self::err(&format!("{path}[{i}]"), self.expected(ty), item),
                    }
                }
                Ok(Val::Flags(set))
            }
            TypeDefKind::Enum(e) => {
                let case = v
                    .as_str()
                    .and_then(|s| e.cases.iter().find(|c| matches(&c.name, s)));
                match case {
                    Some(c) => Ok(Val::Enum(c.name.clone())),
                    None => Self::err(path, self.expected(ty), v),
                }
            }
            TypeDefKind::Variant(var) => {
                match v {
                    Value::String(s) => {
                        if let Some(c) = var.cases.iter().find(|c| matches(&c.name, s)) {
                            if c.ty.is_none() {
                                return Ok(Val::Variant(c.name.clone(), None));
                            }
                            return Self::err(
                                path,
                                format!(
                                    "{{\"{}\": value}} (this case carries data)",
                                    json_name(&c.name)
                                ),
                                v,
                            );
                        }
                    }
                    Value::Object(o) if o.len() == 1 => {
                        let (key, payload) = o.iter().next().expect("one entry");
                        if let Some(c) = var.cases.iter().find(|c| matches(&c.name, key)) {
                            let inner = match &c.ty {
                                Some(t) => {
                                    Some(Box::new(self.value(&join(path, key), t, payload)?))
                                }
                                None if payload.is_null() => None,
                                None => {
                                    return Self::err(
                                        &join(path, key),
                                        "null (this case carries no data)",
                                        payload,
                                    );
                                }
                            };
                            return Ok(Val::Variant(c.name.clone(), inner));
                        }
                    }
                    _ => {}
                }
                Self::err(path, self.expected(ty), v)
            }
            TypeDefKind::Option(inner) => {
                if v.is_null() {
                    Ok(Val::Option(None))
                } else {
                    Ok(Val::Option(Some(Box::new(self.value(path, inner, v)?))))
                }
            }
            TypeDefKind::Result(r) => {
                if let Value::Object(o) = v
                    && o.len() == 1
                {
                    let (key, payload) = o.iter().next().expect("one entry");
                    let arm = match key.as_str() {
                        "ok" => Some((&r.ok, true)),
                        "err" => Some((&r.err, false)),
                        _ => None,
                    };
                    if let Some((t, is_ok)) = arm {
                        let inner = match t {
                            Some(t) => Some(Box::new(self.value(&join(path, key), t, payload)?)),
                            None => None,
                        };
                        return Ok(Val::Result(if is_ok { Ok(inner) } else { Err(inner) }));
                    }
                }
                Self::err(path, self.expected(ty), v)
            }
            TypeDefKind::List(t) => {
                let Value::Array(items) = v else {
                    return Self::err(path, self.expected(ty), v);
                };
                let vals = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.value(&format!("{path}[{i}]"), t, item))
                    .collect::<Result<_>>()?;
                Ok(Val::List(vals))
            }
            TypeDefKind::FixedLengthList(t, n) => {
                let Value::Array(items) = v else {
                    return Self::err(path, self.expected(ty), v);
                };
                if items.len() != *n as usize {
                    return Self::err(path, format!("an array of exactly {n} items"), v);
                }
                let vals = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.value(&format!("{path}[{i}]"), t, item))
                    .collect::<Result<_>>()?;
                Ok(Val::FixedLengthList(vals))
            }
            TypeDefKind::Map(k, val_ty) => match v {
                Value::Object(o) => {
                    let mut pairs = Vec::with_capacity(o.len());
                    for (key, item) in o {
                        let kv = self.value(&join(path, key), k, &Value::String(key.clone()))?;
                        pairs.push((kv, self.value(&join(path, key), val_ty, item)?));
                    }
                    Ok(Val::Map(pairs))
                }
                // `[[key, value], …]`: the schema's form for keys that are not
                // strings, and what `to_json` prints for them.
                Value::Array(items) => {
                    let mut pairs = Vec::with_capacity(items.len());
                    let mut seen = std::collections::HashSet::new();
                    for (i, item) in items.iter().enumerate() {
                        let at = format!("{path}[{i}]");
                        let Some([key, value]) = item.as_array().map(Vec::as_slice) else {
                            return Self::err(&at, "a [key, value] pair", item);
                        };
                        let kv = self.value(&format!("{at}[0]"), k, key)?;
                        if !seen.insert(to_json(&kv).to_string()) {
                            return Self::err(&format!("{at}[0]"), "a key not already listed", key);
                        }
                        pairs.push((kv, self.value(&format!("{at}[1]"), val_ty, value)?));
                    }
                    Ok(Val::Map(pairs))
                }
                _ => Self::err(path, self.expected(ty), v),
            },
            _ => Self::err(path, "a value of a supported type", v),
        }
    }

    fn primitive(&self, path: &str, ty: Type, v: &Value) -> Result<Val> {
        if let Some((lo, hi)) = int_bounds(ty) {
            let n = match v {
                Value::Number(n) => n
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from))
                    .or_else(|| {
                        // Accept 3.0 for 3: JSON encoders often emit integral floats.
                        n.as_f64()
                            .filter(|f| f.fract() == 0.0 && f.abs() < 1e19)
                            .map(|f| f as i128)
                    }),
                _ => None,
            };
            return match n {
                Some(n) if (lo..=hi).contains(&n) => Ok(match ty {
                    Type::U8 => Val::U8(n as u8),
                    Type::U16 => Val::U16(n as u16),
                    Type::U32 => Val::U32(n as u32),
                    Type::U64 => Val::U64(n as u64),
                    Type::S8 => Val::S8(n as i8),
                    Type::S16 => Val::S16(n as i16),
                    Type::S32 => Val::S32(n as i32),
                    _ => Val::S64(n as i64),
                }),
                _ => Self::err(path, format!("an integer from {lo} to {hi}"), v),
            };
        }
        match ty {
            Type::Bool => v
                .as_bool()
                .map(Val::Bool)
                .map_or_else(|| Self::err(path, "a boolean", v), Ok),
            Type::F32 | Type::F64 => {
                let f = match v {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => match s.as_str() {
                        "NaN" => Some(f64::NAN),
                        "Infinity" => Some(f64::INFINITY),
                        "-Infinity" => Some(f64::NEG_INFINITY),
                        _ => None,
                    },
                    _ => None,
                };
                match (f, ty) {
                    (Some(f), Type::F64) => Ok(Val::Float64(f)),
                    // Anything that rounds to a finite f32: `to_json` prints
                    // f32::MAX as 3.4028235e38, a little above it.
                    (Some(f), _) if !f.is_finite() || (f as f32).is_finite() => {
                        Ok(Val::Float32(f as f32))
                    }
                    (Some(_), _) => {
                        Self::err(path, "a number within the range of a 32-bit float", v)
                    }
                    (None, _) => Self::err(
                        path,
                        "a number (or \"NaN\", \"Infinity\", \"-Infinity\")",
                        v,
                    ),
                }
            }
            Type::Char => {
                let mut chars = v.as_str().map(str::chars);
                match chars
                    .as_mut()
                    .and_then(|c| c.next().zip(Some(c.next().is_none())))
                {
                    Some((c, true)) => Ok(Val::Char(c)),
                    _ => Self::err(path, "a string of exactly one character", v),
                }
            }
            Type::String => v
                .as_str()
                .map(|s| Val::String(s.to_owned()))
                .map_or_else(|| Self::err(path, "a string", v), Ok),
            _ => Self::err(path, "a value of a supported type", v),
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        format!("{path}.{key}")
    } else {
        format!("{path}[{key:?}]")
    }
}

/// Converts a component value to JSON (names in snake_case, NaN and
/// infinities as strings, `none` as null).
pub fn to_json(val: &Val) -> Value {
    match val {
        Val::Bool(b) => json!(b),
        Val::S8(n) => json!(n),
        Val::U8(n) => json!(n),
        Val::S16(n) => json!(n),
        Val::U16(n) => json!(n),
        Val::S32(n) => json!(n),
        Val::U32(n) => json!(n),
        Val::S64(n) => json!(n),
        Val::U64(n) => json!(n),
        // Through the shortest decimal form, so 0.1f32 reads back as 0.1.
        Val::Float32(f) => float(f.to_string().parse().unwrap_or(f64::NAN)),
        Val::Float64(f) => float(*f),
        Val::Char(c) => json!(c.to_string()),
        Val::String(s) => json!(s),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => {
            Value::Array(items.iter().map(to_json).collect())
        }
        Val::Map(pairs) => {
            if pairs.iter().all(|(k, _)| matches!(k, Val::String(_))) {
                let mut o = Map::new();
                for (k, v) in pairs {
                    if let Val::String(k) = k {
                        o.insert(k.clone(), to_json(v));
                    }
                }
                Value::Object(o)
            } else {
                Value::Array(
                    pairs
                        .iter()
                        .map(|(k, v)| json!([to_json(k), to_json(v)]))
                        .collect(),
                )
            }
        }
        Val::Record(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (json_name(k), to_json(v)))
                .collect(),
        ),
        Val::Variant(case, payload) => match payload {
            None => json!(json_name(case)),
            Some(p) => {
                let mut o = Map::new();
                o.insert(json_name(case), to_json(p));
                Value::Object(o)
            }
        },
        Val::Enum(case) => json!(json_name(case)),
        Val::Option(inner) => inner.as_deref().map_or(Value::Null, to_json),
        Val::Result(r) => {
            let (key, inner) = match r {
                Ok(v) => ("ok", v),
                Err(v) => ("err", v),
            };
            let mut o = Map::new();
            o.insert(key.into(), inner.as_deref().map_or(Value::Null, to_json));
            Value::Object(o)
        }
        Val::Flags(names) => Value::Array(names.iter().map(|n| json!(json_name(n))).collect()),
        Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => {
            json!("<unsupported handle>")
        }
    }
}

fn float(f: f64) -> Value {
    if f.is_nan() {
        json!("NaN")
    } else if f.is_infinite() {
        json!(if f > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(wit: &str) -> (Resolve, Vec<Type>) {
        let mut resolve = Resolve::default();
        let pkg = resolve.push_str("t.wit", wit).unwrap();
        let iface = resolve.packages[pkg].interfaces["t"];
        let types = resolve.interfaces[iface]
            .types
            .values()
            .map(|id| Type::Id(*id))
            .collect();
        (resolve, types)
    }

    /// Found by fuzzing (fuzz/fuzz_targets/json_to_wit.rs): `to_json` prints
    /// f32::MAX as 3.4028235e38, which is above f32::MAX as an f64, so the
    /// value it had just printed was refused.
    #[test]
    fn the_largest_f32_survives_a_round_trip() {
        let (resolve, _) = resolve("package t:t; interface t {}");
        let conv = FromJson::new(&resolve);
        for v in [f32::MAX, f32::MIN, f32::MIN_POSITIVE, 1e-45] {
            let json = to_json(&Val::Float32(v));
            assert_eq!(
                conv.value("x", &Type::F32, &json),
                Ok(Val::Float32(v)),
                "{json}"
            );
        }
        // Past the rounding range of f32 it is still refused.
        assert!(conv.value("x", &Type::F32, &json!(3.41e38)).is_err());
        assert!(conv.value("x", &Type::F32, &json!(-1e39)).is_err());
    }

    /// Issue 34: an argument WIT cannot spell (the conformance suite's
    /// `resourceUri`) is named by its field's `@key`; the snake_case name
    /// still works, and the error for an unknown one lists the keys.
    #[test]
    fn a_keyed_field_takes_its_key_as_an_argument() {
        let (resolve, types) = resolve(
            "package t:t; interface t { record a { /// @key resourceUri\n resource-uri: string } }",
        );
        let conv = FromJson::new(&resolve);
        let want = Val::Record(vec![(
            "resource-uri".into(),
            Val::String("test://r".into()),
        )]);
        for key in ["resourceUri", "resource_uri"] {
            assert_eq!(
                conv.value("arguments", &types[0], &json!({key: "test://r"})),
                Ok(want.clone()),
                "{key}"
            );
        }
        let e = conv
            .value("arguments", &types[0], &json!({"uri": "x"}))
            .unwrap_err();
        assert!(e.expected.contains("resourceUri"), "{e:?}");
    }

    /// Found by fuzzing: a map whose keys are not strings (here chars) was
    /// accepted as an object, printed by `to_json` as `[[key, value], …]`
    /// (the schema's form for such maps), and that form was refused.
    #[test]
    fn maps_with_other_keys_take_pairs() {
        let (resolve, types) = resolve(
            "package t:t; interface t { type by-char = map<char, u8>; type by-name = map<string, u8>; }",
        );
        let conv = FromJson::new(&resolve);
        let (by_char, by_name) = (&types[0], &types[1]);
        let v = conv.value("m", by_char, &json!({"z": 1})).unwrap();
        let printed = to_json(&v);
        assert_eq!(printed, json!([["z", 1]]));
        assert_eq!(conv.value("m", by_char, &printed).unwrap(), v);
        assert_eq!(
            to_json(&conv.value("m", by_name, &json!([["a", 2]])).unwrap()),
            json!({"a": 2})
        );
        let dup = conv
            .value("m", by_char, &json!([["z", 1], ["z", 2]]))
            .unwrap_err();
        assert_eq!(dup.path, "m[1][0]");
        let bad = conv.value("m", by_char, &json!([["z"]])).unwrap_err();
        assert_eq!(
            (bad.path.as_str(), bad.expected.as_str()),
            ("m[0]", "a [key, value] pair")
        );
        let wrong = conv.value("m", by_char, &json!(3)).unwrap_err();
        assert_eq!(wrong.expected, "an array of [key, value] pairs");
    }
}
