//! A request body as YAML, decoded as the gateway decodes it: never a panic; an accepted body
//! is an object within the nesting bound that round-trips through JSON (how it is stored).
use gateway::negotiate::{Input, decode_body_keys};

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    if let Ok((value, _keys)) = decode_body_keys(Input::Yaml, data) {
        assert!(value.is_object());
        crate::assert_storable(&value);
        // The same object sent as JSON decodes to the same value.
        let json = serde_json::to_vec(&value).unwrap();
        let (again, _) = decode_body_keys(Input::Json, &json).expect("a decoded YAML body is valid JSON");
        assert_eq!(again, value);
    }
}
