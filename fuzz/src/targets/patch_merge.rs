//! A RFC 7386 merge patch body applied to a fixed Deployment (`patch::apply_patch`): never a panic;
//! a result is an object the server can store and decode again.
use apimachinery::patch::{PatchType, apply_patch};

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    kinds::schema::prepare();
    let original = crate::deployment();
    if let Ok(patched) = apply_patch(PatchType::Merge, &original, data, ("apps", "v1", "Deployment")) {
        assert!(patched.is_object());
        crate::assert_storable(&patched);
        // A merge patch is idempotent: applied again it changes nothing.
        let again = apply_patch(PatchType::Merge, &patched, data, ("apps", "v1", "Deployment"))
            .expect("a merge patch that applied once applies again");
        assert_eq!(again, patched, "a merge patch applied twice gave another result");
    }
}
