//! The Go zero value of a message as kube's unstructured converter writes it: the "live
//! object" kube's field manager compares a create with. Values (structs and scalars) are
//! there, structs even under `omitempty`; nil pointers, slices and maps are `null` unless
//! `omitempty` leaves them out; kube's own types write their zero as their marshallers do.

use std::sync::{LazyLock, OnceLock};

use serde_json::{Map, Value};

use crate::schema::{MessageId, Scalar, Schema, Special};

/// The zero value of message `id` in JSON, as `runtime.DefaultUnstructuredConverter` writes it.
pub fn go_zero(schema: &Schema, id: MessageId) -> Value {
    let message = &schema.messages[id];
    match message.special {
        Special::None => {}
        Special::Duration => return Value::from("0s"),
        Special::Quantity => return Value::from("0"),
        Special::IntOrString => return Value::from(0),
        Special::SchemaOrBool => return Value::Bool(false),
        // Times, raw bytes and the rest write their zero as `null`.
        _ => return Value::Null,
    }
    let mut out = Map::new();
    for field in &message.fields {
        if field.inline {
            if let Scalar::Message(sub) = field.kind
                && let Value::Object(inner) = go_zero(schema, sub)
            {
                out.extend(inner);
            }
            continue;
        }
        let value = if field.always {
            match field.kind {
                // `omitempty` never leaves a struct out.
                Scalar::Message(sub) => go_zero(schema, sub),
                _ if field.omit_zero => continue,
                Scalar::String | Scalar::Bytes => Value::from(""),
                Scalar::Bool => Value::Bool(false),
                _ => Value::from(0),
            }
        } else if field.nil_written {
            Value::Null
        } else {
            continue;
        };
        out.insert(field.json.clone(), value);
    }
    Value::Object(out)
}

/// [`go_zero`] of a message of the built-in schema, computed once per message: creates ask
/// for it on every write.
pub fn built_in(id: MessageId) -> &'static Value {
    static ZEROS: LazyLock<Vec<OnceLock<Value>>> =
        LazyLock::new(|| Schema::global().messages.iter().map(|_| OnceLock::new()).collect());
    ZEROS[id].get_or_init(|| go_zero(Schema::global(), id))
}
