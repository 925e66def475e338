//! A `resource.Quantity` string (`defaults::quantity::parse`): never a panic; a parsed quantity
//! prints in kube's canonical form, which parses back to the same value and prints the same.
use kube_cel::quantity;

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(q) = quantity::parse(text) else { return };
    let canonical = q.canonical();
    let again = quantity::parse(&canonical).unwrap_or_else(|e| panic!("{text:?} canonical {canonical:?}: {e}"));
    assert_eq!(again.nanos, q.nanos, "{text:?} canonical {canonical:?}");
    assert_eq!(again.canonical(), canonical, "{text:?}");
    let _ = q.round_up_milli().canonical();
    let _ = quantity::from_json(&serde_json::Value::String(text.to_string()));
}
