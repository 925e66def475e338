//! The order of `FieldsV1` keys, as structured-merge-diff writes them: `.` first, then fields
//! by name, associative-list keys, set values and list indexes, keys and values compared as
//! values (numbers numerically, so `k:{"port":80}` comes before `k:{"port":443}`).
//!
//! Objects are held as JSON values whose maps iterate in byte order, which is this order for
//! every key but numeric ones; the encoders of both wire formats write `FieldsV1` through
//! [`compare_keys`], so responses carry the bytes kube writes.

use std::cmp::Ordering;

use serde_json::Value;

/// Two `FieldsV1` keys in structured-merge-diff's order.
pub fn compare_keys(a: &str, b: &str) -> Ordering {
    fn rank(key: &str) -> u8 {
        match key.get(..2) {
            _ if key == "." => 0,
            Some("f:") => 1,
            Some("k:") => 2,
            Some("v:") => 3,
            Some("i:") => 4,
            _ => 5,
        }
    }
    let (ra, rb) = (rank(a), rank(b));
    if ra != rb {
        return ra.cmp(&rb);
    }
    let parsed = |k: &str| serde_json::from_str::<Value>(&k[2..]).ok();
    match ra {
        2 | 3 => match (parsed(a), parsed(b)) {
            (Some(x), Some(y)) => compare_values(&x, &y),
            _ => a.cmp(b),
        },
        4 => match (a[2..].parse::<u64>(), b[2..].parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => a.cmp(b),
        },
        _ => a.cmp(b),
    }
}

/// Whether a `FieldsV1` map's byte order may differ from kube's: it has two or more keys of
/// list elements (only their values can compare otherwise than their bytes).
pub fn needs_sorting<'a>(keys: impl Iterator<Item = &'a String>) -> bool {
    keys.filter(|k| k.starts_with("k:") || k.starts_with("v:") || k.starts_with("i:")).nth(1).is_some()
}

/// Values in structured-merge-diff's total order: numbers (compared numerically), strings,
/// booleans, lists, maps, then null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => x.as_f64().unwrap_or(0.0).total_cmp(&y.as_f64().unwrap_or(0.0)),
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (x, y) in x.iter().zip(y) {
                let c = compare_values(x, y);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            // Maps compare as their entries in key order.
            for ((xk, xv), (yk, yv)) in x.iter().zip(y.iter()) {
                let c = xk.cmp(yk).then_with(|| compare_values(xv, yv));
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// `value`, a `FieldsV1` tree, as JSON with every map's keys in [`compare_keys`] order.
pub fn to_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if needs_sorting(map.keys()) {
                entries.sort_by(|a, b| compare_keys(a.0, b.0));
            }
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, k).expect("writing to a Vec cannot fail");
                out.push(b':');
                write(v, out);
            }
            out.push(b'}');
        }
        other => serde_json::to_writer(&mut *out, other).expect("writing to a Vec cannot fail"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_element_keys_sort_by_value_and_the_rest_by_bytes() {
        let set = json!({"f:ports": {
            ".": {},
            "k:{\"containerPort\":443,\"protocol\":\"TCP\"}": {".": {}},
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}},
        }, "f:args": {"i:10": {}, "i:9": {}}, "f:nums": {"v:10": {}, "v:9": {}, "v:\"a\"": {}}});
        assert_eq!(
            String::from_utf8(to_json(&set)).unwrap(),
            concat!(
                r#"{"f:args":{"i:9":{},"i:10":{}},"f:nums":{"v:9":{},"v:10":{},"v:\"a\"":{}},"#,
                r#""f:ports":{".":{},"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{}},"#,
                r#""k:{\"containerPort\":443,\"protocol\":\"TCP\"}":{".":{}}}}"#
            )
        );
    }
}
