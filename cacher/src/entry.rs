//! One object as the cache holds it, and the map of them by key that snapshots share.

use std::sync::Arc;

use apimachinery::catalogue::ResourceDef;
use apimachinery::encoded::EncodedObject;
use apimachinery::object::ObjectExt;
use apimachinery::selector::{FieldSelector, LabelSelector};
use serde_json::Value;
use storage::Revision;

/// One object as the cache holds it: its JSON, encoded once, and what selectors look at.
#[derive(Debug)]
pub(crate) struct Entry {
    pub object: EncodedObject,
    /// `metadata.labels`, sorted by key: a boxed slice holds a few labels in a fraction of a
    /// map's memory, and the cache holds one per object.
    pub labels: Box<[(Box<str>, Box<str>)]>,
    /// The selectable fields (`metadata.name`, `metadata.namespace`, `spec.nodeName`, ...).
    pub fields: Vec<(&'static str, String)>,
    /// Its resourceVersion: the revision of its last write.
    pub revision: Revision,
}

impl Entry {
    pub fn new(def: &ResourceDef, obj: &Value) -> Self {
        let mut labels: Vec<(Box<str>, Box<str>)> = obj
            .labels()
            .map(|l| l.iter().map(|(k, v)| (k.as_str().into(), v.as_str().unwrap_or_default().into())).collect())
            .unwrap_or_default();
        labels.sort_unstable();
        Entry {
            object: EncodedObject::encode(obj),
            labels: labels.into_boxed_slice(),
            fields: def.field_set(obj),
            revision: obj.resource_version().parse().unwrap_or(0),
        }
    }

    /// This object as it was when it went away at `revision`: its last state with that
    /// resourceVersion, as DELETED events carry it.
    pub fn at(&self, def: &ResourceDef, revision: Revision) -> Entry {
        let mut gone = self.object.value();
        gone.set_meta_str("resourceVersion", &revision.to_string());
        Entry::new(def, &gone)
    }

    pub fn namespace(&self) -> &str {
        self.fields.iter().find(|(k, _)| *k == "metadata.namespace").map_or("", |(_, v)| v.as_str())
    }

    pub fn matches(&self, labels: &LabelSelector, fields: &FieldSelector) -> bool {
        let label = |key: &str| {
            let at = self.labels.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
            Some(&*self.labels[at].1)
        };
        (labels.is_empty() || labels.matches_with(label)) && (fields.is_empty() || fields.matches(&self.fields))
    }
}

/// Objects by storage key. Keys are shared so that publishing a snapshot and then changing
/// the map copies pointers, not strings.
pub(crate) type Objects = imbl::OrdMap<Arc<str>, Arc<Entry>>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_match_label_and_field_selectors() {
        let def = crate::conformance::configmaps();
        let obj = json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7",
            "labels": {"zone": "1", "app": "web", "m": "x"}}});
        let e = Entry::new(def, &obj);
        assert_eq!(e.namespace(), "ns");
        let sel = |l: &str, f: &str| {
            let labels = LabelSelector::parse(l).unwrap();
            let fields = FieldSelector::parse(f).unwrap().validate_for(def.field_labels()).unwrap();
            e.matches(&labels, &fields)
        };
        assert!(sel("", ""));
        assert!(sel("app=web,zone=1,m", "metadata.name=a"));
        assert!(sel("app in (db,web),!missing", "metadata.namespace=ns"));
        assert!(!sel("app=db", ""));
        assert!(!sel("zone", "metadata.name=b"));
        assert!(!sel("m notin (x)", ""));
    }
}
