//! A RFC 6902 JSON patch body applied to a fixed Deployment (`patch::apply_patch`): never a panic;
//! a result is an object the server can store and decode again.
#![no_main]
use apimachinery::patch::{PatchType, apply_patch};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    apimachinery::schema::prepare();
    let original = apiserver_fuzz::deployment();
    if let Ok(patched) = apply_patch(PatchType::Json, &original, data, ("apps", "v1", "Deployment")) {
        assert!(patched.is_object());
        apiserver_fuzz::assert_storable(&patched);
    }
});
