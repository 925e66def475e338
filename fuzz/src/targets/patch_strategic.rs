//! A strategic merge patch body applied to a fixed Deployment (`patch::apply_patch`): never a panic;
//! a result is an object the server can store and decode again.
use apimachinery::patch::{PatchType, apply_patch};

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    kinds::schema::prepare();
    let original = crate::deployment();
    if let Ok(patched) = apply_patch(PatchType::StrategicMerge, &original, data, ("apps", "v1", "Deployment")) {
        assert!(patched.is_object());
        crate::assert_storable(&patched);
    }
    // Without a schema (a custom resource), the same patch merges like a merge patch.
    if let Ok(patched) = apply_patch(PatchType::StrategicMerge, &original, data, ("example.com", "v1", "Widget")) {
        crate::assert_storable(&patched);
    }
}
