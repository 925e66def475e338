//! JSON values to protobuf messages and back, walking the [`Schema`].
//!
//! Encoding writes fields in number order, map entries in key order (as Go's generated
//! marshallers do), and nothing for JSON nulls. Decoding produces what kube's JSON of the same
//! Go struct shows: embedded structs inlined, zero scalars dropped where Go's `omitempty`
//! drops them, kube's special types in their JSON forms.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, Datelike, SecondsFormat, Utc};
use prost::bytes::Buf;
use prost::encoding::{WireType, decode_key, decode_varint, encode_key, encode_varint};
use serde_json::{Map, Value};

use crate::Error;
use crate::schema::{Field, Fill, MessageId, Scalar, Schema, Special};

/// Encodes `value` as the message `id` (its raw bytes, no envelope). A JSON null is the
/// message's zero value, written as Go writes a zero struct.
pub fn encode(schema: &Schema, id: MessageId, value: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
    encode_leaving(schema, id, value, Leave::Nothing, out)
}

/// Encodes `value` as the message `id` as storage holds it: its `metadata` without
/// `resourceVersion` and `selfLink`, which kube never stores (so the value need not be copied
/// to take them out).
pub fn encode_stored(schema: &Schema, id: MessageId, value: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
    encode_leaving(schema, id, value, Leave::StoredMeta, out)
}

/// What an encoding leaves out of a message, as if absent.
#[derive(Clone, Copy, PartialEq)]
enum Leave {
    Nothing,
    /// Its `metadata`'s `resourceVersion` and `selfLink`.
    StoredMeta,
    /// These members of it.
    Members(&'static [&'static str]),
}

fn encode_leaving(schema: &Schema, id: MessageId, value: &Value, leave: Leave, out: &mut Vec<u8>) -> Result<(), Error> {
    let message = &schema.messages[id];
    match message.special {
        Special::None => {
            let empty = Map::new();
            let obj = match value {
                Value::Object(obj) => obj,
                Value::Null => &empty,
                _ => return Err(Error::Shape(format!("{} must be an object, not {value}", message.name))),
            };
            // Each field's value, found in one walk of the object's keys beside the fields'
            // names (both sorted), rather than a map search per field.
            let mut on_stack = [None::<&Value>; 64];
            let mut on_heap;
            let values: &mut [Option<&Value>] = match message.fields.len() {
                n if n <= on_stack.len() => &mut on_stack[..n],
                n => {
                    on_heap = vec![None; n];
                    &mut on_heap
                }
            };
            let mut keys = obj.iter().peekable();
            for &i in &message.by_json {
                let name = message.fields[i].json.as_str();
                while keys.next_if(|(k, _)| k.as_str() < name).is_some() {}
                if let Some((k, v)) = keys.peek()
                    && k.as_str() == name
                {
                    values[i] = Some(*v);
                }
            }
            for (field, member) in message.fields.iter().zip(values.iter()) {
                if field.inline {
                    if let Scalar::Message(sub) = field.kind {
                        write_message(schema, field.number, sub, value, Leave::Nothing, out)?;
                    }
                    continue;
                }
                let left = matches!(leave, Leave::Members(m) if m.contains(&field.json.as_str()));
                match member.filter(|_| !left) {
                    None | Some(Value::Null) if field.always => write_zero(schema, field.number, field.kind, out)?,
                    None | Some(Value::Null) => {}
                    Some(v) => match (leave, field.kind) {
                        (Leave::StoredMeta, Scalar::Message(sub)) if field.json == "metadata" && !field.repeated => {
                            let unstored = Leave::Members(&["resourceVersion", "selfLink"]);
                            write_message(schema, field.number, sub, v, unstored, out)?
                        }
                        _ => write_field(schema, field, v, out)?,
                    },
                }
            }
        }
        // The zero Time is no Timestamp at all; any other has both fields.
        Special::Time | Special::MicroTime if value.is_null() => {}
        Special::Time | Special::MicroTime => {
            let Some(s) = value.as_str() else { return Err(Error::Shape(format!("a time must be a string: {value}"))) };
            let t = DateTime::parse_from_rfc3339(s).map_err(|e| Error::Shape(format!("time {s:?}: {e}")))?;
            // chrono reads a leap second (`:60`) as nanoseconds past a second; Go's time.Parse
            // refuses it.
            if t.timestamp_subsec_nanos() >= 1_000_000_000 {
                return Err(Error::Shape(format!("time {s:?}: second out of range")));
            }
            write_varint(1, t.timestamp() as u64, out);
            write_varint(2, u64::from(t.timestamp_subsec_nanos()), out);
        }
        Special::Duration => {
            let nanos = match value {
                Value::Null => 0,
                Value::String(s) => parse_duration(s)?,
                _ => return Err(Error::Shape(format!("a duration must be a string: {value}"))),
            };
            write_varint(1, nanos as u64, out);
        }
        // Go writes a Quantity as its canonical string, "0" for the zero Quantity.
        Special::Quantity if value.is_null() => write_bytes(1, b"0", out),
        Special::Quantity => write_bytes(1, scalar_text(value).as_bytes(), out),
        Special::IntOrString => {
            let (kind, int, text) = match value {
                Value::Null => (0, 0, "".into()),
                Value::Number(n) => (0, n.as_i64().unwrap_or_default(), "".into()),
                other => (1, 0, scalar_text(other)),
            };
            write_varint(1, kind, out);
            write_varint(2, int as u64, out);
            write_bytes(3, text.as_bytes(), out);
        }
        // Raw bytes are written only when there are some.
        Special::RawExtension | Special::FieldsV1 | Special::Json if value.is_null() => {}
        // kube writes a field set's keys in its own order (`fields_v1`).
        Special::FieldsV1 => write_bytes(1, &crate::fields_v1::to_json(value), out),
        Special::RawExtension | Special::Json => {
            write_bytes(1, &serde_json::to_vec(value).unwrap_or_default(), out);
        }
        Special::Items => {
            let field = &message.fields[0];
            for item in value.as_array().into_iter().flatten() {
                write_one(schema, field.number, field.kind, item, out)?;
            }
        }
        Special::SchemaOrArray | Special::SchemaOrStringArray => match value {
            Value::Object(_) => write_one(schema, 1, message.fields[0].kind, value, out)?,
            Value::Array(items) => {
                for item in items {
                    write_one(schema, 2, message.fields[1].kind, item, out)?;
                }
            }
            Value::Null => {}
            other => return Err(Error::Shape(format!("a schema or an array expected, not {other}"))),
        },
        Special::SchemaOrBool => match value {
            Value::Object(_) => {
                write_varint(1, 1, out);
                write_one(schema, 2, message.fields[1].kind, value, out)?;
            }
            Value::Bool(allows) => write_varint(1, u64::from(*allows), out),
            Value::Null => write_varint(1, 0, out),
            _ => return Err(Error::Shape("boolean or JSON schema expected".into())),
        },
    }
    Ok(())
}

/// Writes the zero value of a field Go's marshaller always writes.
fn write_zero(schema: &Schema, number: u32, kind: Scalar, out: &mut Vec<u8>) -> Result<(), Error> {
    match kind {
        Scalar::String | Scalar::Bytes => write_bytes(number, b"", out),
        Scalar::Bool | Scalar::Int | Scalar::SInt => write_varint(number, 0, out),
        Scalar::Double | Scalar::Fixed64 => {
            encode_key(number, WireType::SixtyFourBit, out);
            out.extend_from_slice(&[0; 8]);
        }
        Scalar::Float | Scalar::Fixed32 => {
            encode_key(number, WireType::ThirtyTwoBit, out);
            out.extend_from_slice(&[0; 4]);
        }
        Scalar::Message(id) => write_message(schema, number, id, &Value::Null, Leave::Nothing, out)?,
    }
    Ok(())
}

pub(crate) fn scalar_text(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(other.to_string()),
    }
}

fn write_field(schema: &Schema, field: &Field, v: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
    if let Some(key_kind) = field.map_key {
        let Some(map) = v.as_object() else {
            return Err(Error::Shape(format!("{} must be an object", field.json)));
        };
        let mut entry = Vec::new();
        for (k, item) in map {
            entry.clear();
            match key_kind {
                Scalar::String => write_bytes(1, k.as_bytes(), &mut entry),
                _ => write_one(schema, 1, key_kind, &Value::String(k.clone()), &mut entry)?,
            }
            // Go writes every value, zero or not, but for nil bytes.
            match (item, field.kind) {
                (Value::Null, Scalar::Bytes) => {}
                (Value::Null, kind) => write_zero(schema, 2, kind, &mut entry)?,
                (item, kind) => write_one(schema, 2, kind, item, &mut entry)?,
            }
            write_bytes(field.number, &entry, out);
        }
        return Ok(());
    }
    if field.repeated {
        let Some(items) = v.as_array() else { return Err(Error::Shape(format!("{} must be an array", field.json))) };
        for item in items {
            if item.is_null() {
                write_zero(schema, field.number, field.kind, out)?;
            } else {
                write_one(schema, field.number, field.kind, item, out)?;
            }
        }
        return Ok(());
    }
    write_one(schema, field.number, field.kind, v, out)
}

fn write_one(schema: &Schema, number: u32, kind: Scalar, v: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
    let bad = || Error::Shape(format!("field {number}: unexpected {v}"));
    match kind {
        Scalar::String => write_bytes(number, scalar_text(v).as_bytes(), out),
        Scalar::Bytes => {
            let s = v.as_str().ok_or_else(bad)?;
            let raw = BASE64.decode(s).map_err(|e| Error::Shape(format!("field {number}: {e}")))?;
            write_bytes(number, &raw, out);
        }
        Scalar::Bool => write_varint(number, u64::from(v.as_bool().ok_or_else(bad)?), out),
        Scalar::Int => {
            let n = v.as_i64().map(|n| n as u64).or_else(|| v.as_u64()).ok_or_else(bad)?;
            write_varint(number, n, out);
        }
        Scalar::SInt => {
            let n = v.as_i64().ok_or_else(bad)?;
            write_varint(number, ((n << 1) ^ (n >> 63)) as u64, out);
        }
        Scalar::Double => {
            encode_key(number, WireType::SixtyFourBit, out);
            out.extend_from_slice(&v.as_f64().ok_or_else(bad)?.to_le_bytes());
        }
        Scalar::Float => {
            encode_key(number, WireType::ThirtyTwoBit, out);
            out.extend_from_slice(&(v.as_f64().ok_or_else(bad)? as f32).to_le_bytes());
        }
        Scalar::Fixed32 => {
            encode_key(number, WireType::ThirtyTwoBit, out);
            out.extend_from_slice(&(v.as_i64().ok_or_else(bad)? as u32).to_le_bytes());
        }
        Scalar::Fixed64 => {
            encode_key(number, WireType::SixtyFourBit, out);
            out.extend_from_slice(&(v.as_i64().ok_or_else(bad)? as u64).to_le_bytes());
        }
        Scalar::Message(id) => write_message(schema, number, id, v, Leave::Nothing, out)?,
    }
    Ok(())
}

/// Writes a nested message in place: one byte is kept for its length, which most messages fit
/// (under 128 bytes); a longer one moves its body along by the bytes its length needs.
fn write_message(
    schema: &Schema,
    number: u32,
    id: MessageId,
    v: &Value,
    leave: Leave,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    encode_key(number, WireType::LengthDelimited, out);
    let at = out.len();
    out.push(0);
    encode_leaving(schema, id, v, leave, out)?;
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let mut head = Vec::with_capacity(4);
        encode_varint(len as u64, &mut head);
        out.splice(at..at + 1, head);
    }
    Ok(())
}

/// Writes a varint field.
pub(crate) fn write_varint(number: u32, v: u64, out: &mut Vec<u8>) {
    encode_key(number, WireType::Varint, out);
    encode_varint(v, out);
}

/// Writes a length-delimited field.
pub(crate) fn write_bytes(number: u32, b: &[u8], out: &mut Vec<u8>) {
    encode_key(number, WireType::LengthDelimited, out);
    encode_varint(b.len() as u64, out);
    out.extend_from_slice(b);
}

/// One field read off the wire.
pub(crate) enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

/// Reads the fields of a message in order.
pub(crate) fn fields(mut buf: &[u8]) -> impl Iterator<Item = Result<(u32, Wire<'_>), Error>> {
    std::iter::from_fn(move || {
        if buf.is_empty() {
            return None;
        }
        let read = (|| {
            let (number, wire) = decode_key(&mut buf)?;
            Ok::<_, Error>(match wire {
                WireType::Varint => (number, Wire::Varint(decode_varint(&mut buf)?)),
                WireType::SixtyFourBit if buf.len() >= 8 => (number, Wire::Fixed64(buf.get_u64_le())),
                WireType::ThirtyTwoBit if buf.len() >= 4 => (number, Wire::Fixed32(buf.get_u32_le())),
                WireType::LengthDelimited => {
                    let len = decode_varint(&mut buf)? as usize;
                    if len > buf.len() {
                        return Err(Error::Truncated);
                    }
                    let (b, rest) = buf.split_at(len);
                    buf = rest;
                    (number, Wire::Bytes(b))
                }
                _ => return Err(Error::Truncated),
            })
        })();
        if read.is_err() {
            buf = &[];
        }
        Some(read)
    })
}

/// Decodes the message `id` into its JSON value.
pub fn decode(schema: &Schema, id: MessageId, bytes: &[u8]) -> Result<Value, Error> {
    decode_at(schema, id, bytes, 0)
}

/// Decodes the message `id` found `depth` messages deep: one more level per message, refused
/// past [`crate::MAX_DEPTH`].
pub(crate) fn decode_at(schema: &Schema, id: MessageId, bytes: &[u8], depth: usize) -> Result<Value, Error> {
    if depth > crate::MAX_DEPTH {
        return Err(Error::TooDeep);
    }
    let depth = depth + 1;
    let message = &schema.messages[id];
    // One small function a form: nested messages recurse through this dispatch, so only the
    // frames of the forms a body nests through are on the stack.
    match message.special {
        Special::None => decode_fields(schema, message, bytes, depth),
        Special::Time | Special::MicroTime => decode_time(bytes, message.special == Special::MicroTime),
        Special::Duration => decode_duration(bytes),
        Special::Quantity => decode_quantity(bytes),
        Special::IntOrString => decode_int_or_string(bytes),
        Special::RawExtension | Special::FieldsV1 => decode_raw_json(bytes, depth),
        Special::Items => decode_items(schema, message, bytes, depth),
        Special::Json => decode_json(bytes),
        Special::SchemaOrArray | Special::SchemaOrStringArray | Special::SchemaOrBool => {
            decode_schema_or(schema, message, bytes, depth)
        }
    }
}

/// A message of fields: an object, embedded structs inlined.
fn decode_fields(
    schema: &Schema,
    message: &crate::schema::Message,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, Error> {
    let mut obj = Map::new();
    let mut inlined = Vec::new();
    for item in fields(bytes) {
        let (number, wire) = item?;
        let Some(field) = message.field(number) else { continue };
        if field.inline {
            if let (Scalar::Message(sub), Wire::Bytes(b)) = (field.kind, wire)
                && let Value::Object(inner) = decode_at(schema, sub, b, depth)?
            {
                obj.extend(inner);
            }
            inlined.push(number);
            continue;
        }
        if let Some(key_kind) = field.map_key {
            let Wire::Bytes(entry) = wire else { return Err(wrong(field)) };
            let (mut key, mut value) = (None, None);
            for e in fields(entry) {
                match e? {
                    (1, w) => key = Some(read_one(schema, key_kind, w, depth)?),
                    (2, w) => value = Some(read_one(schema, field.kind, w, depth)?),
                    _ => {}
                }
            }
            let key = match key {
                Some(Value::String(s)) => s,
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let value = value.unwrap_or_else(|| zero(schema, field.kind));
            let map = obj.entry(field.json.clone()).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = map {
                m.insert(key, value);
            }
            continue;
        }
        if field.repeated {
            let list = obj.entry(field.json.clone()).or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(list) = list else { continue };
            match (wire, field.kind) {
                // A packed run of scalars.
                (Wire::Bytes(b), k) if !matches!(k, Scalar::String | Scalar::Bytes | Scalar::Message(_)) => {
                    let mut b = b;
                    while !b.is_empty() {
                        let w = match k {
                            Scalar::Double | Scalar::Fixed64 if b.len() >= 8 => Wire::Fixed64(b.get_u64_le()),
                            Scalar::Float | Scalar::Fixed32 if b.len() >= 4 => Wire::Fixed32(b.get_u32_le()),
                            _ => Wire::Varint(decode_varint(&mut b).map_err(Error::Decode)?),
                        };
                        list.push(read_one(schema, k, w, depth)?);
                    }
                }
                (w, k) => list.push(read_one(schema, k, w, depth)?),
            }
            continue;
        }
        let value = read_one(schema, field.kind, wire, depth)?;
        if value.is_null() || (field.omit_zero && is_zero(&value)) {
            obj.remove(&field.json);
            continue;
        }
        obj.insert(field.json.clone(), value);
    }
    fill_zeros(schema, message, &inlined, &mut obj);
    Ok(Value::Object(obj))
}

fn decode_time(bytes: &[u8], micro: bool) -> Result<Value, Error> {
    let (mut seconds, mut nanos) = (0i64, 0i32);
    for item in fields(bytes) {
        match item? {
            (1, Wire::Varint(v)) => seconds = v as i64,
            // An int32 on the wire: a varint of which the low 32 bits count.
            (2, Wire::Varint(v)) => nanos = v as i32,
            _ => {}
        }
    }
    if seconds == 0 && nanos == 0 {
        return Ok(Value::Null);
    }
    Ok(Value::String(format_time(seconds, nanos, micro)?))
}

fn decode_duration(bytes: &[u8]) -> Result<Value, Error> {
    let mut nanos = 0i64;
    for item in fields(bytes) {
        if let (1, Wire::Varint(v)) = item? {
            nanos = v as i64;
        }
    }
    Ok(Value::String(format_duration(nanos)))
}

fn decode_quantity(bytes: &[u8]) -> Result<Value, Error> {
    // The zero Quantity (no string) is "0", as Go prints it.
    let mut s = "0".to_string();
    for item in fields(bytes) {
        if let (1, Wire::Bytes(b)) = item? {
            s = String::from_utf8_lossy(b).into_owned();
        }
    }
    Ok(Value::String(s))
}

fn decode_int_or_string(bytes: &[u8]) -> Result<Value, Error> {
    let (mut kind, mut int, mut text) = (0u64, 0i64, String::new());
    for item in fields(bytes) {
        match item? {
            (1, Wire::Varint(v)) => kind = v,
            (2, Wire::Varint(v)) => int = v as i32 as i64,
            (3, Wire::Bytes(b)) => text = String::from_utf8_lossy(b).into_owned(),
            _ => {}
        }
    }
    Ok(if kind == 1 { Value::String(text) } else { Value::from(int) })
}

/// A RawExtension or FieldsV1: embedded JSON, or an embedded enveloped object.
fn decode_raw_json(bytes: &[u8], depth: usize) -> Result<Value, Error> {
    let mut raw: &[u8] = &[];
    for item in fields(bytes) {
        if let (1, Wire::Bytes(b)) = item? {
            raw = b;
        }
    }
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    if raw.starts_with(crate::MAGIC) {
        return crate::decode_object_at(raw, depth);
    }
    serde_json::from_slice(raw).map_err(|e| Error::Shape(format!("embedded JSON: {e}")))
}

fn decode_items(schema: &Schema, message: &crate::schema::Message, bytes: &[u8], depth: usize) -> Result<Value, Error> {
    let field = &message.fields[0];
    let mut items = Vec::new();
    for item in fields(bytes) {
        let (number, wire) = item?;
        if number == field.number {
            items.push(read_one(schema, field.kind, wire, depth)?);
        }
    }
    Ok(Value::Array(items))
}

/// apiextensions' `JSON`: the value its bytes hold, null for none.
fn decode_json(bytes: &[u8]) -> Result<Value, Error> {
    let mut raw: &[u8] = &[];
    for item in fields(bytes) {
        if let (1, Wire::Bytes(b)) = item? {
            raw = b;
        }
    }
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw).map_err(|e| Error::Shape(format!("embedded JSON: {e}")))
}

/// The `JSONSchemaPropsOr*` messages, as their Go types' MarshalJSON write them: the array
/// when it has items, else the schema, else (for the boolean form) the boolean or (for the
/// others) null.
fn decode_schema_or(
    schema: &Schema,
    message: &crate::schema::Message,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, Error> {
    let (mut allows, mut schema_value, mut list) = (None, None, Vec::new());
    for item in fields(bytes) {
        let (number, wire) = item?;
        let Some(field) = message.field(number) else { continue };
        let value = read_one(schema, field.kind, wire, depth)?;
        match (message.special, number) {
            (Special::SchemaOrBool, 1) => allows = Some(value),
            (Special::SchemaOrBool, 2) | (_, 1) => schema_value = Some(value),
            (_, 2) => list.push(value),
            _ => {}
        }
    }
    Ok(match message.special {
        Special::SchemaOrBool => schema_value.or(allows).unwrap_or(Value::Bool(false)),
        _ if !list.is_empty() => Value::Array(list),
        _ => schema_value.unwrap_or(Value::Null),
    })
}

/// What a Go decoder leaves in the fields a message did not carry: the zero value of those Go
/// always writes (values, not pointers), as JSON shows it, so that absent and zero fields read
/// alike. Where Go's JSON would show `null` (a zero time, a nil list without `omitempty`), the
/// member is left out, as this server's objects leave it out (request bodies drop null
/// members), so that an object read from storage compares equal to the same object sent.
fn fill_zeros(schema: &Schema, message: &crate::schema::Message, inlined: &[u32], obj: &mut Map<String, Value>) {
    for fill in fills(schema, message) {
        match fill {
            Fill::Inline(number, inner) => {
                if !inlined.contains(number) {
                    for (k, v) in inner {
                        if !obj.contains_key(k) {
                            obj.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            Fill::Member(key, value) => {
                if !obj.contains_key(key) {
                    obj.insert(key.clone(), value.clone());
                }
            }
        }
    }
}

/// `message`'s fills, in field order (an inlined struct's members and a field of the same
/// name meet as they would field by field): worked out once, from the zero values of the
/// fields Go always writes, less those JSON would leave out.
pub(crate) fn fills<'m>(schema: &Schema, message: &'m crate::schema::Message) -> &'m [Fill] {
    message.fills.get_or_init(|| {
        let mut out = Vec::new();
        for field in message.fields.iter().filter(|f| f.always) {
            if field.inline {
                if let Scalar::Message(sub) = field.kind
                    && let Ok(Value::Object(inner)) = decode(schema, sub, &[])
                {
                    out.push(Fill::Inline(field.number, inner));
                }
                continue;
            }
            let value = zero(schema, field.kind);
            if !(value.is_null() || (field.omit_zero && is_zero(&value))) {
                out.push(Fill::Member(field.json.clone(), value));
            }
        }
        out
    })
}

fn wrong(field: &Field) -> Error {
    Error::Shape(format!("field {} ({}) has the wrong wire type", field.number, field.json))
}

fn read_one(schema: &Schema, kind: Scalar, wire: Wire<'_>, depth: usize) -> Result<Value, Error> {
    Ok(match (kind, wire) {
        (Scalar::String, Wire::Bytes(b)) => Value::String(String::from_utf8_lossy(b).into_owned()),
        (Scalar::Bytes, Wire::Bytes(b)) => Value::String(BASE64.encode(b)),
        (Scalar::Bool, Wire::Varint(v)) => Value::Bool(v != 0),
        (Scalar::Int, Wire::Varint(v)) => Value::from(v as i64),
        (Scalar::SInt, Wire::Varint(v)) => Value::from(((v >> 1) as i64) ^ -((v & 1) as i64)),
        (Scalar::Double, Wire::Fixed64(v)) => float(f64::from_bits(v)),
        (Scalar::Float, Wire::Fixed32(v)) => float(f64::from(f32::from_bits(v))),
        (Scalar::Fixed32, Wire::Fixed32(v)) => Value::from(v),
        (Scalar::Fixed64, Wire::Fixed64(v)) => Value::from(v as i64),
        (Scalar::Message(id), Wire::Bytes(b)) => decode_at(schema, id, b, depth)?,
        _ => return Err(Error::Shape(format!("a {kind:?} field has the wrong wire type"))),
    })
}

/// A float as Go's encoding/json writes it: whole numbers without a fraction (`100`, not
/// `100.0`), which serde_json keeps apart from floats.
pub(crate) fn float(f: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: every whole number below is exact.
    if f.fract() == 0.0 && f.abs() < EXACT { Value::from(f as i64) } else { Value::from(f) }
}

pub(crate) fn zero(schema: &Schema, kind: Scalar) -> Value {
    match kind {
        Scalar::String | Scalar::Bytes => Value::String(String::new()),
        Scalar::Bool => Value::Bool(false),
        Scalar::Message(id) => decode(schema, id, &[]).unwrap_or(Value::Null),
        _ => Value::from(0),
    }
}

pub(crate) fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// The JSON of a `metav1.Time` (RFC 3339 in seconds) or `metav1.MicroTime` (in microseconds,
/// always six digits) of a protobuf Timestamp. Nanoseconds outside a second carry into the
/// seconds as Go's `time.Unix` carries them; a year outside 0 to 9999 is refused, as Go's
/// `Time.MarshalJSON` refuses it (kube could not serve such an object as JSON).
pub(crate) fn format_time(seconds: i64, nanos: i32, micro: bool) -> Result<String, Error> {
    let seconds = seconds.checked_add(i64::from(nanos).div_euclid(1_000_000_000));
    let nanos = i64::from(nanos).rem_euclid(1_000_000_000) as u32;
    let t = seconds
        .and_then(|s| DateTime::<Utc>::from_timestamp(s, nanos))
        .filter(|t| (0..=9999).contains(&t.year()))
        .ok_or_else(|| Error::Shape("Time.MarshalJSON: year outside of range [0,9999]".into()))?;
    let format = if micro { SecondsFormat::Micros } else { SecondsFormat::Secs };
    Ok(t.to_rfc3339_opts(format, true))
}

/// Go's `time.Duration.String()` of `nanos`.
pub(crate) fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let neg = nanos < 0;
    let mut n = nanos.unsigned_abs();
    let mut out = String::new();
    if n < 1_000_000_000 {
        let (unit, div) = if n < 1_000 {
            ("ns", 1)
        } else if n < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        out.push_str(&trim_fraction(n / div, n % div, div));
        out.push_str(unit);
    } else {
        let h = n / 3_600_000_000_000;
        n %= 3_600_000_000_000;
        let m = n / 60_000_000_000;
        n %= 60_000_000_000;
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if h > 0 || m > 0 {
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&trim_fraction(n / 1_000_000_000, n % 1_000_000_000, 1_000_000_000));
        out.push('s');
    }
    if neg { format!("-{out}") } else { out }
}

fn trim_fraction(whole: u64, frac: u64, div: u64) -> String {
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub(crate) fn parse_duration(s: &str) -> Result<i64, Error> {
    let bad = || Error::Shape(format!("time: invalid duration {s:?}"));
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Ok(if neg { -(total as i64) } else { total as i64 })
}
