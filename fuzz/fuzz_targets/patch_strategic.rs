//! A strategic merge patch body applied to a fixed Deployment (`patch::apply_patch`): never a panic;
//! a result is an object the server can store and decode again.
#![no_main]
use apimachinery::patch::{PatchType, apply_patch};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    apimachinery::schema::prepare();
    let original = apiserver_fuzz::deployment();
    if let Ok(patched) = apply_patch(PatchType::StrategicMerge, &original, data, ("apps", "v1", "Deployment")) {
        assert!(patched.is_object());
        apiserver_fuzz::assert_storable(&patched);
    }
    // Without a schema (a custom resource), the same patch merges like a merge patch.
    if let Ok(patched) = apply_patch(PatchType::StrategicMerge, &original, data, ("example.com", "v1", "Widget")) {
        apiserver_fuzz::assert_storable(&patched);
    }
});
