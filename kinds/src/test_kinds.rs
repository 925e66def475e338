//! The kinds as the registry reaches them, through their definitions: shared by the
//! defaulting tests.

use serde_json::Value;

use apimachinery::catalogue::ResourceDef;

pub(crate) fn find(group: &str, version: &str, resource: &str) -> Option<&'static ResourceDef> {
    crate::builtin::find(group, version, resource).map(|d| d.as_ref())
}

pub(crate) fn def(group: &str, resource: &str) -> &'static ResourceDef {
    crate::builtin::find(group, "v1", resource).unwrap().as_ref()
}

pub(crate) fn apply_defaults(def: &ResourceDef, obj: &mut Value) {
    def.apply_defaults(obj);
}
pub(crate) fn prepare_for_create(def: &ResourceDef, obj: &mut Value) {
    def.prepare_for_create(obj);
}
pub(crate) fn prepare_for_update(def: &ResourceDef, new: &mut Value, old: &Value) {
    def.prepare_for_update(new, old);
}
