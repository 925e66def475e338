//! What an object reads as once encoded and decoded again, worked out on the JSON value itself:
//! the fields the message lacks dropped, the zero values Go always writes filled in and those
//! `omitempty` leaves out taken away, kube's special types in the form their decoders give.
//!
//! A write compares its object in this form with the stored one (`storage_codec`'s stored form),
//! and making it by encoding and decoding cost an update as much as its own encoding for etcd.
//! Every step here mirrors one of [`crate::codec`]'s encoder and decoder; a shape this does not
//! follow (a schema-or-array of a CRD's schema, a map keyed by numbers) or a value the encoder
//! refuses is answered by the real round trip instead, so the outcome is always the codec's.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::DateTime;
use serde_json::{Map, Value};

use crate::Error;
use crate::codec::{fills, float, format_duration, format_time, is_zero, parse_duration, scalar_text, zero};
use crate::schema::{Field, Fill, MessageId, Scalar, Schema, Special};

/// Not followed here: the caller takes the real round trip.
struct Elsewhere;

/// [`crate::decode_raw`] of [`crate::encode_stored_as`] of `obj`, made without the bytes when it
/// can be.
pub fn stored_form_as(obj: &Value, api_version: &str, kind: &str) -> Result<Value, Error> {
    let schema = Schema::global();
    let id = schema
        .message_for(api_version, kind)
        .ok_or_else(|| Error::NoMessage { api_version: api_version.into(), kind: kind.into() })?;
    let mut back = match message(schema, id, obj, Leave::StoredMeta, 0) {
        Ok(back) => back,
        Err(Elsewhere) => {
            let raw = crate::encode_stored_as(obj, api_version, kind)?;
            return crate::decode_raw(&raw, api_version, kind);
        }
    };
    if let Value::Object(map) = &mut back {
        map.insert("apiVersion".into(), Value::String(api_version.into()));
        map.insert("kind".into(), Value::String(kind.into()));
    }
    Ok(back)
}

/// What the encoding leaves out of a message (the codec's `Leave`).
#[derive(Clone, Copy, PartialEq)]
enum Leave {
    Nothing,
    /// The `metadata` member's `resourceVersion` and `selfLink`.
    StoredMeta,
    /// These members.
    Members(&'static [&'static str]),
}

fn message(schema: &Schema, id: MessageId, value: &Value, leave: Leave, depth: usize) -> Result<Value, Elsewhere> {
    if depth > crate::MAX_DEPTH {
        return Err(Elsewhere);
    }
    let depth = depth + 1;
    let message = &schema.messages[id];
    match message.special {
        Special::None => fields(schema, message, value, leave, depth),
        // The zero Time is no Timestamp, which decodes as none.
        Special::Time | Special::MicroTime if value.is_null() => Ok(Value::Null),
        Special::Time | Special::MicroTime => {
            let s = value.as_str().ok_or(Elsewhere)?;
            let t = DateTime::parse_from_rfc3339(s).map_err(|_| Elsewhere)?;
            if t.timestamp_subsec_nanos() >= 1_000_000_000 {
                return Err(Elsewhere);
            }
            // Written as a varint of the seconds and one of the nanoseconds, read back as i32.
            let (seconds, nanos) = (t.timestamp(), t.timestamp_subsec_nanos() as i32);
            if seconds == 0 && nanos == 0 {
                return Ok(Value::Null);
            }
            let micro = message.special == Special::MicroTime;
            format_time(seconds, nanos, micro).map(Value::String).map_err(|_| Elsewhere)
        }
        Special::Duration => {
            let nanos = match value {
                Value::Null => 0,
                Value::String(s) => parse_duration(s).map_err(|_| Elsewhere)?,
                _ => return Err(Elsewhere),
            };
            Ok(Value::String(format_duration(nanos)))
        }
        Special::Quantity if value.is_null() => Ok(Value::String("0".into())),
        Special::Quantity => Ok(Value::String(scalar_text(value).into_owned())),
        Special::IntOrString => Ok(match value {
            Value::Null => Value::from(0),
            Value::Number(n) => Value::from(n.as_i64().unwrap_or_default() as i32 as i64),
            other => Value::String(scalar_text(other).into_owned()),
        }),
        // Raw JSON is written as its text and read back as the same value; none as none.
        Special::RawExtension | Special::FieldsV1 | Special::Json => Ok(value.clone()),
        Special::Items => {
            let field = &message.fields[0];
            let items = value.as_array().into_iter().flatten();
            Ok(Value::Array(items.map(|item| scalar(schema, field.kind, item, depth)).collect::<Result<_, _>>()?))
        }
        Special::SchemaOrArray | Special::SchemaOrStringArray | Special::SchemaOrBool => Err(Elsewhere),
    }
}

/// A message of fields, field by field in number order as the decoder meets them.
fn fields(
    schema: &Schema,
    message: &crate::schema::Message,
    value: &Value,
    leave: Leave,
    depth: usize,
) -> Result<Value, Elsewhere> {
    let empty = Map::new();
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Null => &empty,
        _ => return Err(Elsewhere),
    };
    let mut out = Map::new();
    for field in &message.fields {
        if field.inline {
            // Always written, from the whole object; its members land in this one.
            if let Scalar::Message(sub) = field.kind
                && let Value::Object(inner) = self::message(schema, sub, value, Leave::Nothing, depth)?
            {
                out.extend(inner);
            }
            continue;
        }
        let left = matches!(leave, Leave::Members(m) if m.contains(&field.json.as_str()));
        let member = obj.get(&field.json).filter(|v| !v.is_null() && !left);
        let Some(v) = member else {
            // Nothing is written but for a field Go always writes: its zero.
            if field.always {
                set(&mut out, field, zero(schema, field.kind));
            }
            continue;
        };
        if let Some(key_kind) = field.map_key {
            map(schema, field, key_kind, v, &mut out, depth)?;
            continue;
        }
        if field.repeated {
            let items = v.as_array().ok_or(Elsewhere)?;
            if items.is_empty() {
                continue;
            }
            let read = items
                .iter()
                .map(|item| {
                    if item.is_null() { Ok(zero(schema, field.kind)) } else { scalar(schema, field.kind, item, depth) }
                })
                .collect::<Result<Vec<_>, _>>()?;
            if let Value::Array(list) = out.entry(field.json.clone()).or_insert_with(|| Value::Array(Vec::new())) {
                list.extend(read);
            }
            continue;
        }
        let read = match (leave, field.kind) {
            (Leave::StoredMeta, Scalar::Message(sub)) if field.json == "metadata" => {
                self::message(schema, sub, v, Leave::Members(&["resourceVersion", "selfLink"]), depth)?
            }
            (_, kind) => scalar(schema, kind, v, depth)?,
        };
        set(&mut out, field, read);
    }
    // What the decoder fills in for fields the bytes lacked (none here but for odd schemas: the
    // encoder writes every field the fills name).
    for fill in fills(schema, message) {
        if let Fill::Member(key, zero) = fill
            && !out.contains_key(key)
        {
            out.insert(key.clone(), zero.clone());
        }
    }
    Ok(Value::Object(out))
}

/// A map field's entries: string keys only (the encoder refuses others unless they parse).
fn map(
    schema: &Schema,
    field: &Field,
    key_kind: Scalar,
    v: &Value,
    out: &mut Map<String, Value>,
    depth: usize,
) -> Result<(), Elsewhere> {
    let entries = v.as_object().ok_or(Elsewhere)?;
    if key_kind != Scalar::String {
        return Err(Elsewhere);
    }
    if entries.is_empty() {
        return Ok(());
    }
    let mut read = Map::new();
    for (k, item) in entries {
        // A null value is written as its zero (nothing for bytes, which read as "").
        let value = if item.is_null() { zero(schema, field.kind) } else { scalar(schema, field.kind, item, depth)? };
        read.insert(k.clone(), value);
    }
    if let Value::Object(m) = out.entry(field.json.clone()).or_insert_with(|| Value::Object(Map::new())) {
        m.extend(read);
    }
    Ok(())
}

/// A decoded single field: dropped when null or a zero `omitempty` leaves out.
fn set(out: &mut Map<String, Value>, field: &Field, value: Value) {
    if value.is_null() || (field.omit_zero && is_zero(&value)) {
        out.remove(&field.json);
    } else {
        out.insert(field.json.clone(), value);
    }
}

/// One value written as `kind` and read back.
fn scalar(schema: &Schema, kind: Scalar, v: &Value, depth: usize) -> Result<Value, Elsewhere> {
    Ok(match kind {
        Scalar::String => Value::String(scalar_text(v).into_owned()),
        Scalar::Bytes => {
            let raw = BASE64.decode(v.as_str().ok_or(Elsewhere)?).map_err(|_| Elsewhere)?;
            Value::String(BASE64.encode(raw))
        }
        Scalar::Bool => Value::Bool(v.as_bool().ok_or(Elsewhere)?),
        Scalar::Int => {
            let n = v.as_i64().map(|n| n as u64).or_else(|| v.as_u64()).ok_or(Elsewhere)?;
            Value::from(n as i64)
        }
        Scalar::SInt | Scalar::Fixed64 => Value::from(v.as_i64().ok_or(Elsewhere)?),
        Scalar::Double => float(v.as_f64().ok_or(Elsewhere)?),
        Scalar::Float => float(f64::from(v.as_f64().ok_or(Elsewhere)? as f32)),
        Scalar::Fixed32 => Value::from(v.as_i64().ok_or(Elsewhere)? as u32),
        Scalar::Message(id) => message(schema, id, v, Leave::Nothing, depth)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An ordinary object takes the direct path (the round trip is only for odd shapes); that
    /// both paths agree is `tests/stored_form.rs`.
    #[test]
    fn an_ordinary_object_is_worked_out_without_its_bytes() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "5"},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "10m"}}}]},
            "status": {"phase": "Running", "startTime": "2026-12-07T20:00:01Z"}});
        let schema = Schema::global();
        let id = schema.message_for("v1", "Pod").unwrap();
        let direct = message(schema, id, &pod, Leave::StoredMeta, 0).ok().expect("the direct path");
        assert_eq!(direct["metadata"].get("resourceVersion"), None);
        assert_eq!(direct["spec"]["containers"][0]["resources"]["requests"]["cpu"], "10m");
        assert_eq!(direct["spec"]["restartPolicy"], Value::Null, "a pointer-free default is not invented");
    }
}
