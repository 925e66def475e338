//! Kubernetes' protobuf wire format (`application/vnd.kubernetes.protobuf`) for objects the
//! server holds as JSON values.
//!
//! The messages are compiled from Kubernetes' own .proto files at build time (see `build.rs`);
//! the codec walks them, so no field number is written here. What the .proto files do not say
//! about JSON (inlined structs, `omitempty`, JSON names) comes from the Go types beside them,
//! and kube's special types (Time, MicroTime, Duration, Quantity, IntOrString, RawExtension,
//! FieldsV1) have their JSON forms in [`codec`].
//!
//! On the wire a body is the magic `k8s\0` then a `runtime.Unknown`: `typeMeta` (apiVersion,
//! kind), `raw` (the object's message), `contentEncoding`, `contentType` (both empty, and
//! written as Go writes empty strings). A typed list is its `ListMeta` (field 1) then each
//! item's message (field 2). A watch stream is frames of a 4-byte big-endian length and a
//! `metav1.WatchEvent`, whose object holds an enveloped body.
//!
//! Messages are written as Go's generated marshallers write them, so that a body is byte for
//! byte kube's: fields in number order, map entries in key order, and every field that is a
//! value in Go (not a pointer, slice or map) written even when zero.
//!
//! Heads and tails are split so callers can serve a cached message's bytes without copying:
//! [`unknown_head`] and [`watch_frame_head`] write everything before the raw message, and
//! [`UNKNOWN_TAIL`] is what follows it.
//!
//! # Layout
//! - this module: the envelope (`runtime.Unknown`), typed lists and watch frames around a
//!   message.
//! - [`schema`]: the messages compiled from the descriptor set into tables the codec walks.
//! - [`codec`]: JSON values to messages and back, and kube's special types' JSON forms.
//! - [`carry`]: fields the schema does not know (a newer kube's), kept through a rewrite.
//! - [`fields_v1`]: the order of `FieldsV1` keys as structured-merge-diff writes them, used by
//!   the encoders of both wire formats.
//! - [`go_zero`]: a message's Go zero value as kube's converter writes it (what a create is
//!   compared with for managed fields).
//! - `normal`: what an object reads as once stored ([`stored_form_as`]), worked out without
//!   encoding it.

pub mod carry;
pub mod codec;
pub mod fields_v1;
pub mod go_zero;
mod normal;
pub mod schema;

use std::borrow::Cow;

use serde_json::Value;

pub use normal::stored_form_as;
pub use schema::{MessageId, Schema};

use codec::{Wire, fields, write_bytes};

/// The content type.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The content type of watch streams.
pub const WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The four bytes every protobuf body starts with.
pub const MAGIC: &[u8; 4] = b"k8s\0";
/// What follows the raw message of an enveloped body: the Unknown's empty `contentEncoding`
/// (field 3) and `contentType` (field 4).
pub const UNKNOWN_TAIL: &[u8] = &[0x1a, 0x00, 0x22, 0x00];

/// Why a value could not be encoded or a body decoded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kind has no protobuf message (custom resources, for instance).
    #[error("no protobuf message for {api_version}, Kind={kind}")]
    NoMessage {
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
    },
    /// Bytes that are not a valid message.
    #[error("{0}")]
    Decode(#[from] prost::DecodeError),
    /// A field running past the end of its message, or of a wire type kube never writes.
    #[error("unexpected EOF")]
    Truncated,
    /// A body without the `k8s\0` prefix.
    #[error("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")]
    NoMagic,
    /// A value whose JSON shape does not match its message.
    #[error("{0}")]
    Shape(String),
    /// Messages nested deeper than [`MAX_DEPTH`].
    #[error("exceeded max depth: messages nest deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// The deepest nesting of messages a body may have (embedded objects in `RawExtension`s
/// included). Decoding recurses once per level, so without a bound a few megabytes of nested
/// length prefixes would exhaust the stack; this is far beyond any real object, and a body
/// this deep would be refused by the server's nesting bound on objects anyway.
pub const MAX_DEPTH: usize = 256;

fn type_of(obj: &Value) -> (&str, &str) {
    (obj["apiVersion"].as_str().unwrap_or(""), obj["kind"].as_str().unwrap_or(""))
}

/// Whether objects of `api_version` and `kind` have a protobuf form.
pub fn supports(api_version: &str, kind: &str) -> bool {
    Schema::global().message_for(api_version, kind).is_some()
}

/// The message bytes of `obj` (typed by its own apiVersion and kind), without envelope.
pub fn encode_raw(obj: &Value) -> Result<Vec<u8>, Error> {
    let (api_version, kind) = type_of(obj);
    encode_as(obj, api_version, kind)
}

/// The message bytes of `obj` as the message of `api_version` and `kind`.
pub fn encode_as(obj: &Value, api_version: &str, kind: &str) -> Result<Vec<u8>, Error> {
    encode_with(codec::encode, obj, api_version, kind)
}

/// [`encode_as`] as storage holds the object: without `metadata.resourceVersion` and
/// `metadata.selfLink`, whether `obj` has them or not.
pub fn encode_stored_as(obj: &Value, api_version: &str, kind: &str) -> Result<Vec<u8>, Error> {
    encode_with(codec::encode_stored, obj, api_version, kind)
}

/// `obj` encoded by `encode` as the message of `api_version` and `kind`.
fn encode_with(
    encode: fn(&Schema, MessageId, &Value, &mut Vec<u8>) -> Result<(), Error>,
    obj: &Value,
    api_version: &str,
    kind: &str,
) -> Result<Vec<u8>, Error> {
    let schema = Schema::global();
    let id = schema
        .message_for(api_version, kind)
        .ok_or_else(|| Error::NoMessage { api_version: api_version.into(), kind: kind.into() })?;
    let mut out = Vec::with_capacity(256);
    encode(schema, id, obj, &mut out)?;
    Ok(out)
}

/// The body of `obj`: the magic, then its `runtime.Unknown`.
pub fn encode_object(obj: &Value) -> Result<Vec<u8>, Error> {
    let (api_version, kind) = type_of(obj);
    let raw = encode_as(obj, api_version, kind)?;
    Ok(enveloped(api_version, kind, &raw))
}

/// The body of a message `raw` of `api_version` and `kind`.
pub fn enveloped(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut out = unknown_head(api_version, kind, raw.len());
    out.extend_from_slice(raw);
    out.extend_from_slice(UNKNOWN_TAIL);
    out
}

/// Everything of an enveloped body before its `raw_len` bytes of message, which
/// [`UNKNOWN_TAIL`] must follow.
pub fn unknown_head(api_version: &str, kind: &str, raw_len: usize) -> Vec<u8> {
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
    write_bytes(1, api_version.as_bytes(), &mut type_meta);
    write_bytes(2, kind.as_bytes(), &mut type_meta);
    let mut out = Vec::with_capacity(type_meta.len() + 16);
    out.extend_from_slice(MAGIC);
    write_bytes(1, &type_meta, &mut out);
    prost::encoding::encode_key(2, prost::encoding::WireType::LengthDelimited, &mut out);
    prost::encoding::encode_varint(raw_len as u64, &mut out);
    out
}

/// Decodes an enveloped body into the object, `apiVersion` and `kind` set from its type.
pub fn decode_object(body: &[u8]) -> Result<Value, Error> {
    decode_object_at(body, 0)
}

/// [`decode_object`] of a body nested `depth` messages deep.
pub(crate) fn decode_object_at(body: &[u8], depth: usize) -> Result<Value, Error> {
    let ((api_version, kind), raw) = split_envelope(body)?;
    decode_raw_at(raw, &api_version, &kind, depth)
}

/// An enveloped body's apiVersion and kind (borrowed from the body when valid UTF-8).
type TypeOf<'a> = (Cow<'a, str>, Cow<'a, str>);

/// An enveloped body's apiVersion, kind and raw message.
fn split_envelope(body: &[u8]) -> Result<(TypeOf<'_>, &[u8]), Error> {
    let rest = body.strip_prefix(MAGIC.as_slice()).ok_or(Error::NoMagic)?;
    let (mut api_version, mut kind, mut raw) = (Cow::Borrowed(""), Cow::Borrowed(""), &[][..]);
    for item in fields(rest) {
        match item? {
            (1, Wire::Bytes(tm)) => {
                for t in fields(tm) {
                    match t? {
                        (1, Wire::Bytes(b)) => api_version = String::from_utf8_lossy(b),
                        (2, Wire::Bytes(b)) => kind = String::from_utf8_lossy(b),
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(b)) => raw = b,
            (3, Wire::Bytes(enc)) if !enc.is_empty() => {
                return Err(Error::Shape(format!("unsupported content encoding {:?}", String::from_utf8_lossy(enc))));
            }
            _ => {}
        }
    }
    Ok(((api_version, kind), raw))
}

/// `new_body`, an enveloped body about to replace `old_body`, with the fields of `old_body`
/// that this server's schema does not know (a newer kube-apiserver's) carried over, as
/// [`carry`] places them. `None` when `old_body` has none or is of another type, or when
/// either body is no protobuf: `new_body` is then stored as it is.
pub fn carry_unknown_fields(new_body: &[u8], old_body: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    if !old_body.starts_with(MAGIC) || !new_body.starts_with(MAGIC) {
        return Ok(None);
    }
    let ((api_version, kind), new_raw) = split_envelope(new_body)?;
    let (old_type, old_raw) = split_envelope(old_body)?;
    if old_type != (api_version.clone(), kind.clone()) {
        return Ok(None);
    }
    let schema = Schema::global();
    let Some(id) = schema.message_for(&api_version, &kind) else { return Ok(None) };
    let carried = carry::carry_unknown(schema, id, new_raw, old_raw)?;
    Ok(carried.map(|raw| enveloped(&api_version, &kind, &raw)))
}

/// Decodes message bytes of `api_version` and `kind` into the object, with both set.
pub fn decode_raw(raw: &[u8], api_version: &str, kind: &str) -> Result<Value, Error> {
    decode_raw_at(raw, api_version, kind, 0)
}

fn decode_raw_at(raw: &[u8], api_version: &str, kind: &str, depth: usize) -> Result<Value, Error> {
    let schema = Schema::global();
    let id = schema
        .message_for(api_version, kind)
        .ok_or_else(|| Error::NoMessage { api_version: api_version.into(), kind: kind.into() })?;
    let mut obj = codec::decode_at(schema, id, raw, depth)?;
    if let Value::Object(map) = &mut obj {
        map.insert("apiVersion".into(), Value::String(api_version.into()));
        map.insert("kind".into(), Value::String(kind.into()));
    }
    Ok(obj)
}

/// The raw message of a typed list (`PodList`): its ListMeta, then its items' messages.
pub fn encode_list_raw<'a>(list_meta: &Value, items: impl IntoIterator<Item = &'a [u8]>) -> Result<Vec<u8>, Error> {
    let schema = Schema::global();
    let meta = schema
        .message("k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta")
        .ok_or_else(|| Error::Shape("ListMeta is missing from the schema".into()))?;
    let mut head = Vec::new();
    codec::encode(schema, meta, list_meta, &mut head)?;
    let mut out = Vec::with_capacity(head.len() + 4096);
    write_bytes(1, &head, &mut out);
    for item in items {
        write_bytes(2, item, &mut out);
    }
    Ok(out)
}

/// Everything of a watch frame before the raw message of its object: the frame's length, the
/// `WatchEvent` with its type, the RawExtension and the object's envelope head. The message
/// and [`UNKNOWN_TAIL`] end the frame.
pub fn watch_frame_head(event_type: &str, api_version: &str, kind: &str, raw_len: usize) -> Vec<u8> {
    let body_head = unknown_head(api_version, kind, raw_len);
    let body_len = body_head.len() + raw_len + UNKNOWN_TAIL.len();
    let mut raw_ext = Vec::with_capacity(8);
    prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut raw_ext);
    prost::encoding::encode_varint(body_len as u64, &mut raw_ext);
    let raw_ext_len = raw_ext.len() + body_len;
    let mut event = Vec::with_capacity(32 + body_head.len());
    write_bytes(1, event_type.as_bytes(), &mut event);
    prost::encoding::encode_key(2, prost::encoding::WireType::LengthDelimited, &mut event);
    prost::encoding::encode_varint(raw_ext_len as u64, &mut event);
    let frame_len = event.len() + raw_ext_len;
    let mut out = Vec::with_capacity(4 + event.len() + raw_ext.len() + body_head.len());
    out.extend_from_slice(&(frame_len as u32).to_be_bytes());
    out.extend_from_slice(&event);
    out.extend_from_slice(&raw_ext);
    out.extend_from_slice(&body_head);
    out
}

/// A whole watch frame of `obj`.
pub fn watch_frame(event_type: &str, obj: &Value) -> Result<Vec<u8>, Error> {
    let (api_version, kind) = type_of(obj);
    let raw = encode_as(obj, api_version, kind)?;
    let mut out = watch_frame_head(event_type, api_version, kind, raw.len());
    out.extend_from_slice(&raw);
    out.extend_from_slice(UNKNOWN_TAIL);
    Ok(out)
}

/// Reads one watch frame off the front of `buf`: the event type, the object, the bytes used.
/// `None` while the frame is incomplete.
pub fn read_watch_frame(buf: &[u8]) -> Result<Option<(String, Value, usize)>, Error> {
    let Some(len) = buf.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize) else {
        return Ok(None);
    };
    let Some(frame) = buf.get(4..4 + len) else { return Ok(None) };
    let (mut event_type, mut object) = (String::new(), Value::Null);
    for item in fields(frame) {
        match item? {
            (1, Wire::Bytes(b)) => event_type = String::from_utf8_lossy(b).into_owned(),
            (2, Wire::Bytes(raw_ext)) => {
                for r in fields(raw_ext) {
                    if let (1, Wire::Bytes(body)) = r? {
                        object = decode_object(body)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(Some((event_type, object, 4 + len)))
}

#[cfg(test)]
#[path = "../prepare.rs"]
mod prepare;
#[cfg(test)]
mod tests;
