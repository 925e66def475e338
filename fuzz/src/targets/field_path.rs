//! Field paths as `managedFields` holds them: one `FieldsV1` path element (`f:`, `k:`, `v:`,
//! `i:`), a `FieldsV1` set, and a whole `managedFields` list. Never a panic; whatever decodes
//! encodes to kube's bytes and decodes back to the same thing.
use apimachinery::fieldpath::{FieldSet, PathElement};
use apimachinery::managedfields::Managed;
use serde_json::{Value, json};

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(Some(pe)) = PathElement::decode(text)
    {
        let encoded = pe.encode();
        let again = PathElement::decode(&encoded).expect("an encoded element decodes").expect("of a known kind");
        assert_eq!(again, pe, "{text:?} encoded as {encoded:?}");
        assert_eq!(again.encode(), encoded);
    }
    let Some(value) = crate::json_value(data) else { return };
    if let Ok(set) = FieldSet::from_fields_v1(&value) {
        let text = set.to_fields_v1();
        let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?} is not JSON: {e}"));
        let again = FieldSet::from_fields_v1(&parsed).expect("written FieldsV1 reads back");
        assert_eq!(again, set, "{value} written as {text}");
        assert_eq!(again.to_fields_v1(), text);
    }
    let mut object = json!({"metadata": {"name": "a", "managedFields": value}});
    if let Ok(managed) = Managed::decode(&object) {
        managed.encode_into(&mut object);
        let again = Managed::decode(&object).expect("written managedFields read back");
        assert_eq!(again, managed);
    }
}
