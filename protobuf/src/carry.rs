//! Fields this server's schema does not know, carried from a stored message into the one that
//! replaces it.
//!
//! A kube-apiserver newer than this server, sharing its etcd, writes fields this server has no
//! number for. Decoding drops them (the JSON this server holds has no place for them), so a
//! read-modify-write here (a label added, a status patched) would erase them. Before such a
//! write is stored, [`carry_unknown`] puts every unknown field of the stored message back into
//! the new one, in the message where it was:
//! - a singular message field is matched with the stored one of the same number;
//! - an element of a repeated message field with the stored element of the same `name` when
//!   the element has a `name` field and the names on both sides are all set and distinct
//!   (containers, volumes), by position otherwise (unnamed ports, mounts of one volume);
//! - map values and kube's special messages (Time, Quantity, ...) are not looked into.
//!
//! Unknown fields go before the first known field with a higher number, where Go's marshaller
//! (which writes in number order) puts them. A parent the new object no longer has takes its
//! unknown fields with it.

use prost::encoding::{WireType, decode_key, decode_varint};

use crate::Error;
use crate::codec::write_bytes;
use crate::schema::{Message, MessageId, Scalar, Schema, Special};

/// One field of a message: its number, its value if length-delimited, and all its bytes (key
/// included).
pub(crate) struct Span<'a> {
    pub(crate) number: u32,
    pub(crate) delimited: Option<&'a [u8]>,
    pub(crate) whole: &'a [u8],
}

/// The fields of a message in order, each with its bytes.
pub(crate) fn spans(buf: &[u8]) -> impl Iterator<Item = Result<Span<'_>, Error>> {
    let mut rest = buf;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let start = rest;
        let read = (|| {
            let (number, wire) = decode_key(&mut rest)?;
            let delimited = match wire {
                WireType::Varint => {
                    decode_varint(&mut rest)?;
                    None
                }
                WireType::SixtyFourBit | WireType::ThirtyTwoBit => {
                    let n = if wire == WireType::SixtyFourBit { 8 } else { 4 };
                    rest = rest.get(n..).ok_or(Error::Truncated)?;
                    None
                }
                WireType::LengthDelimited => {
                    let len = decode_varint(&mut rest)? as usize;
                    let value = rest.get(..len).ok_or(Error::Truncated)?;
                    rest = &rest[len..];
                    Some(value)
                }
                _ => return Err(Error::Truncated),
            };
            let whole = &start[..start.len() - rest.len()];
            Ok::<_, Error>(Span { number, delimited, whole })
        })();
        if read.is_err() {
            rest = &[];
        }
        Some(read)
    })
}

/// The message a known field holds, when it is one this module looks into.
fn nested(schema: &Schema, message: &Message, number: u32) -> Option<MessageId> {
    let field = message.field(number)?;
    match field.kind {
        Scalar::Message(sub) if field.map_key.is_none() && schema.messages[sub].special == Special::None => Some(sub),
        _ => None,
    }
}

/// Whether the message `id` in `bytes` holds a field the schema does not know, at any depth
/// this module looks into.
pub fn has_unknown(schema: &Schema, id: MessageId, bytes: &[u8], depth: usize) -> Result<bool, Error> {
    if depth > crate::MAX_DEPTH {
        return Err(Error::TooDeep);
    }
    let message = &schema.messages[id];
    for span in spans(bytes) {
        let span = span?;
        if message.field(span.number).is_none() {
            return Ok(true);
        }
        if let (Some(sub), Some(value)) = (nested(schema, message, span.number), span.delimited)
            && has_unknown(schema, sub, value, depth + 1)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `new` (a message `id`) with the unknown fields of `old` (the stored message `id`) carried
/// over; `None` when `old` has none, and `new` is to be stored as it is.
pub fn carry_unknown(schema: &Schema, id: MessageId, new: &[u8], old: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    if !has_unknown(schema, id, old, 0)? {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(new.len() + old.len() / 4);
    merge(schema, id, new, old, 0, &mut out)?;
    Ok(Some(out))
}

/// Writes `new` with what `old` holds unknown, recursively.
fn merge(schema: &Schema, id: MessageId, new: &[u8], old: &[u8], depth: usize, out: &mut Vec<u8>) -> Result<(), Error> {
    if depth > crate::MAX_DEPTH {
        return Err(Error::TooDeep);
    }
    let message = &schema.messages[id];
    let old_spans = spans(old).collect::<Result<Vec<_>, _>>()?;
    let new_spans = spans(new).collect::<Result<Vec<_>, _>>()?;
    let mut unknown = old_spans.iter().filter(|s| message.field(s.number).is_none()).peekable();
    // Per repeated message field: which stored element each new one replaces, in order.
    let mut pairings: Vec<(u32, std::vec::IntoIter<Option<&[u8]>>)> = Vec::new();
    for span in &new_spans {
        while let Some(u) = unknown.next_if(|u| u.number < span.number) {
            out.extend_from_slice(u.whole);
        }
        let (Some(sub), Some(value)) = (nested(schema, message, span.number), span.delimited) else {
            out.extend_from_slice(span.whole);
            continue;
        };
        let field = message.field(span.number).expect("a known field");
        let counterpart = if field.repeated {
            if !pairings.iter().any(|(n, _)| *n == span.number) {
                let pairs = pair_elements(schema, sub, &old_spans, &new_spans, span.number)?;
                pairings.push((span.number, pairs.into_iter()));
            }
            let (_, pairs) = pairings.iter_mut().find(|(n, _)| *n == span.number).expect("just added");
            pairs.next().flatten()
        } else {
            old_spans.iter().rev().find(|s| s.number == span.number).and_then(|s| s.delimited)
        };
        match counterpart {
            Some(before) if has_unknown(schema, sub, before, depth + 1)? => {
                let mut merged = Vec::with_capacity(value.len() + before.len() / 4);
                merge(schema, sub, value, before, depth + 1, &mut merged)?;
                write_bytes(span.number, &merged, out);
            }
            _ => out.extend_from_slice(span.whole),
        }
    }
    for u in unknown {
        out.extend_from_slice(u.whole);
    }
    Ok(())
}

/// For each new element of the repeated field `number`, the stored element it replaces: the
/// one of the same `name` when the element message has one and every element on both sides
/// has a name of its own (none empty, none repeated), else the one at the same position.
fn pair_elements<'a>(
    schema: &Schema,
    sub: MessageId,
    old_spans: &[Span<'a>],
    new_spans: &[Span<'_>],
    number: u32,
) -> Result<Vec<Option<&'a [u8]>>, Error> {
    let old: Vec<&[u8]> = old_spans.iter().filter(|s| s.number == number).filter_map(|s| s.delimited).collect();
    let new: Vec<&[u8]> = new_spans.iter().filter(|s| s.number == number).filter_map(|s| s.delimited).collect();
    let by_position = || (0..new.len()).map(|i| old.get(i).copied()).collect();
    let name_field = schema.messages[sub].fields.iter().find(|f| f.json == "name" && f.kind == Scalar::String);
    let Some(name_field) = name_field.map(|f| f.number) else { return Ok(by_position()) };
    let (Some(old_names), Some(new_names)) = (unique_names(&old, name_field)?, unique_names(&new, name_field)?) else {
        return Ok(by_position());
    };
    Ok(new_names.iter().map(|name| old_names.iter().position(|n| n == name).map(|i| old[i])).collect())
}

/// The `name` of each element, if every element has one and no two share it.
fn unique_names<'a>(elements: &[&'a [u8]], name_field: u32) -> Result<Option<Vec<&'a [u8]>>, Error> {
    let mut names = Vec::with_capacity(elements.len());
    for element in elements {
        match string_field(element, name_field)? {
            Some(name) if !name.is_empty() && !names.contains(&name) => names.push(name),
            _ => return Ok(None),
        }
    }
    Ok(Some(names))
}

/// The bytes of the length-delimited field `number` of a message.
fn string_field(bytes: &[u8], number: u32) -> Result<Option<&[u8]>, Error> {
    for span in spans(bytes) {
        let span = span?;
        if span.number == number {
            return Ok(span.delimited);
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::codec::write_varint;

    /// Pod fields: spec 2; PodSpec: containers 2; Container: env 7; ObjectMeta: metadata 1.
    const SPEC: u32 = 2;
    const CONTAINERS: u32 = 2;
    const METADATA: u32 = 1;

    fn pod(containers: &[&str], label: &str) -> Value {
        let containers: Vec<Value> = containers.iter().map(|c| json!({"name": c, "image": "nginx"})).collect();
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": label},
                "finalizers": ["f"], "managedFields": [{"manager": "m", "operation": "Update"}]},
            "spec": {"containers": containers}})
    }

    fn raw(obj: &Value) -> Vec<u8> {
        crate::encode_raw(obj).unwrap()
    }

    /// A varint field `number` holding `v`, as a newer schema would write it.
    fn field(number: u32, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_varint(number, v, &mut out);
        out
    }

    /// `message` with `extra` appended to the message found along `path` (a field number and
    /// which of its occurrences, at each level).
    fn inject(message: &[u8], path: &[(u32, usize)], extra: &[u8]) -> Vec<u8> {
        let Some(&(number, nth)) = path.first() else { return [message, extra].concat() };
        let mut out = Vec::new();
        let mut seen = 0;
        for span in spans(message) {
            let span = span.unwrap();
            if span.number == number {
                if seen == nth {
                    write_bytes(number, &inject(span.delimited.unwrap(), &path[1..], extra), &mut out);
                    seen += 1;
                    continue;
                }
                seen += 1;
            }
            out.extend_from_slice(span.whole);
        }
        out
    }

    fn carried(new: &[u8], old: &[u8]) -> Option<Vec<u8>> {
        let schema = Schema::global();
        let id = schema.message_for("v1", "Pod").unwrap();
        carry_unknown(schema, id, new, old).unwrap()
    }

    #[test]
    fn unknown_fields_at_every_depth_survive_a_rewrite_in_place() {
        let stored = raw(&pod(&["a", "b"], "v1"));
        let newer = inject(&stored, &[], &field(900, 1));
        let newer = inject(&newer, &[(SPEC, 0)], &field(901, 2));
        let newer = inject(&newer, &[(SPEC, 0), (CONTAINERS, 1)], &field(902, 3));
        // What this server reads of it is what it had: the unknown fields are not shown.
        assert_eq!(crate::decode_raw(&newer, "v1", "Pod").unwrap(), crate::decode_raw(&stored, "v1", "Pod").unwrap());

        // A label changed here: the new message has each unknown field where it was.
        let relabelled = raw(&pod(&["a", "b"], "v2"));
        let expected = inject(&relabelled, &[], &field(900, 1));
        let expected = inject(&expected, &[(SPEC, 0)], &field(901, 2));
        let expected = inject(&expected, &[(SPEC, 0), (CONTAINERS, 1)], &field(902, 3));
        assert_eq!(carried(&relabelled, &newer), Some(expected));
        // Nothing unknown stored: the new message is stored as it is.
        assert_eq!(carried(&relabelled, &stored), None);
    }

    #[test]
    fn list_elements_keep_theirs_by_name_and_a_removed_one_takes_its_own_along() {
        let stored = raw(&pod(&["a", "b"], "v1"));
        let newer = inject(&stored, &[(SPEC, 0), (CONTAINERS, 1)], &field(902, 3));
        // The containers swapped: b's field goes with b, now first.
        let swapped = raw(&pod(&["b", "a"], "v1"));
        let expected = inject(&swapped, &[(SPEC, 0), (CONTAINERS, 0)], &field(902, 3));
        assert_eq!(carried(&swapped, &newer), Some(expected));
        // b is gone: so is what it held.
        let without_b = raw(&pod(&["a"], "v1"));
        assert_eq!(carried(&without_b, &newer), Some(without_b.clone()));
    }

    #[test]
    fn elements_with_empty_or_shared_names_pair_by_position() {
        // Two unnamed ports (Go writes `name: ""` for both): the second's field stays with the
        // second, not with the first empty name found.
        let with_ports = |label: &str| {
            let mut p = pod(&["a"], label);
            p["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80}, {"containerPort": 443}]);
            p
        };
        const PORTS: u32 = 6;
        let stored = raw(&with_ports("v1"));
        let newer = inject(&stored, &[(SPEC, 0), (CONTAINERS, 0), (PORTS, 1)], &field(903, 4));
        let relabelled = raw(&with_ports("v2"));
        let expected = inject(&relabelled, &[(SPEC, 0), (CONTAINERS, 0), (PORTS, 1)], &field(903, 4));
        assert_eq!(carried(&relabelled, &newer), Some(expected));
        // Two containers of one name (invalid, but stored bytes are what they are): by position.
        let stored = raw(&pod(&["a", "a"], "v1"));
        let newer = inject(&stored, &[(SPEC, 0), (CONTAINERS, 1)], &field(902, 3));
        let expected = inject(&raw(&pod(&["a", "a"], "v2")), &[(SPEC, 0), (CONTAINERS, 1)], &field(902, 3));
        assert_eq!(carried(&raw(&pod(&["a", "a"], "v2")), &newer), Some(expected));
    }

    #[test]
    fn an_unknown_field_goes_where_go_writes_it_in_number_order() {
        // ObjectMeta's field 15 (the removed clusterName) lies between finalizers (14) and
        // managedFields (17).
        let stored = raw(&pod(&["a"], "v1"));
        let newer = inject(&stored, &[(METADATA, 0)], &field(15, 7));
        let out = carried(&raw(&pod(&["a"], "v2")), &newer).unwrap();
        let meta = spans(&out).map(Result::unwrap).find(|s| s.number == METADATA).unwrap().delimited.unwrap();
        let numbers: Vec<u32> = spans(meta).map(|s| s.unwrap().number).collect();
        let at = numbers.iter().position(|&n| n == 15).expect("carried");
        assert_eq!((numbers[at - 1], numbers[at + 1]), (14, 17), "{numbers:?}");
        assert_eq!(crate::decode_raw(&out, "v1", "Pod").unwrap()["metadata"]["labels"]["app"], "v2");
    }

    #[test]
    fn enveloped_bodies_carry_only_between_the_same_type() {
        let stored = crate::encode_object(&pod(&["a"], "v1")).unwrap();
        let (_, stored_raw) = crate::split_envelope(&stored).unwrap();
        let newer = crate::enveloped("v1", "Pod", &inject(stored_raw, &[], &field(900, 1)));
        let new = crate::encode_object(&pod(&["a"], "v2")).unwrap();
        let out = crate::carry_unknown_fields(&new, &newer).unwrap().expect("carried");
        assert!(out.len() > new.len() && out.starts_with(crate::MAGIC));
        assert_eq!(crate::decode_object(&out).unwrap(), crate::decode_object(&new).unwrap());
        let other_version = crate::enveloped("v2", "Pod", &inject(stored_raw, &[], &field(900, 1)));
        assert_eq!(crate::carry_unknown_fields(&new, &other_version).unwrap(), None);
        assert_eq!(crate::carry_unknown_fields(&new, b"{\"json\":1}").unwrap(), None);
    }
}
