//! A request body as JSON, decoded as the gateway decodes it (`negotiate::decode_body_keys`):
//! never a panic; an accepted body is an object within the nesting bound that re-encodes to
//! the same value.
use gateway::negotiate::{Input, decode_body_keys};

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    if let Ok((value, _keys)) = decode_body_keys(Input::Json, data) {
        assert!(value.is_object());
        crate::assert_storable(&value);
    }
}
