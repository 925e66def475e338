//! The kinds as the registry reaches them, through their definitions: shared by the
//! defaulting tests.

use apimachinery::catalogue::ResourceDef;

pub(crate) fn find(group: &str, version: &str, resource: &str) -> Option<&'static ResourceDef> {
    crate::builtin::find(group, version, resource).map(|d| d.as_ref())
}

pub(crate) fn def(group: &str, resource: &str) -> &'static ResourceDef {
    crate::builtin::find(group, "v1", resource).unwrap().as_ref()
}
