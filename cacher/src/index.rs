//! The cache's keys by the value of one selectable field, the one the kind's strategy names
//! (`Strategy::indexed_field`), as kube's watch cache indexes pods by `spec.nodeName`: a list
//! or a watch selecting one value of it reads that value's keys instead of testing every
//! object of the resource.

use std::sync::Arc;

use apimachinery::catalogue::ResourceDef;
use apimachinery::selector::fields::FieldSelector;

use crate::entry::{Entry, Objects};

/// The field a resource's cache indexes, if any.
pub(crate) fn indexed_field(def: &ResourceDef) -> Option<&'static str> {
    def.strategy.indexed_field()
}

/// Keys by one field's value; cloned with each snapshot, sharing its structure.
#[derive(Clone, Debug)]
pub(crate) struct FieldIndex {
    field: &'static str,
    keys: imbl::HashMap<String, imbl::OrdSet<Arc<str>>>,
}

impl FieldIndex {
    /// The index of `objects` by `field`.
    pub fn build(field: &'static str, objects: &Objects) -> FieldIndex {
        let mut index = FieldIndex { field, keys: imbl::HashMap::new() };
        for (key, entry) in objects {
            index.add(key, entry);
        }
        index
    }

    fn value<'e>(&self, entry: &'e Entry) -> &'e str {
        entry.fields.iter().find(|(f, _)| *f == self.field).map_or("", |(_, v)| v.as_str())
    }

    /// Records that `key` now holds `entry`, in place of `prev`.
    pub fn replace(&mut self, key: &Arc<str>, prev: Option<&Entry>, entry: &Entry) {
        if let Some(prev) = prev {
            if self.value(prev) == self.value(entry) {
                return;
            }
            self.remove(key, prev);
        }
        self.add(key, entry);
    }

    fn add(&mut self, key: &Arc<str>, entry: &Entry) {
        let value = self.value(entry);
        match self.keys.get_mut(value) {
            Some(keys) => {
                keys.insert(key.clone());
            }
            None => {
                self.keys.insert(value.to_string(), imbl::OrdSet::unit(key.clone()));
            }
        }
    }

    /// Records that `key`, which held `prev`, is gone.
    pub fn remove(&mut self, key: &Arc<str>, prev: &Entry) {
        let value = self.value(prev);
        if let Some(keys) = self.keys.get_mut(value) {
            keys.remove(key);
            if keys.is_empty() {
                self.keys.remove(value);
            }
        }
    }

    /// The keys whose objects can match `fields`, in key order, when it requires one value of
    /// the indexed field; `None` when every object must be tested.
    pub fn candidates<'s>(&'s self, fields: &FieldSelector) -> Option<impl Iterator<Item = &'s Arc<str>> + use<'s>> {
        let value = fields.exact_match(self.field)?;
        Some(self.keys.get(value).into_iter().flatten())
    }
}

/// The entries under `start` (a namespace's prefix) that can match `fields`, in key order: the
/// index's keys when it answers the selector, else every entry. The caller tests each.
pub(crate) fn scan<'a>(
    objects: &'a Objects,
    index: Option<&'a FieldIndex>,
    start: &'a str,
    fields: &FieldSelector,
) -> Box<dyn Iterator<Item = &'a Arc<Entry>> + 'a> {
    match index.and_then(|i| i.candidates(fields)) {
        Some(keys) => Box::new(keys.filter(move |k| k.starts_with(start)).filter_map(move |k| objects.get(k))),
        None => Box::new(
            objects
                .range::<_, str>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded))
                .take_while(move |(k, _)| k.starts_with(start))
                .map(|(_, e)| e),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::encoded::EncodedObject;
    use apimachinery::selector::labels::LabelSelector;
    use serde_json::json;

    fn pod(namespace: &str, name: &str, node: &str) -> (Arc<str>, Arc<Entry>) {
        let obj = json!({"metadata": {"name": name, "namespace": namespace}, "spec": {"nodeName": node}});
        let fields = vec![
            ("metadata.name", name.to_string()),
            ("metadata.namespace", namespace.to_string()),
            ("spec.nodeName", node.to_string()),
        ];
        let entry = Entry { object: EncodedObject::encode(&obj), labels: Box::new([]), fields, revision: 1 };
        (Arc::from(format!("/registry/pods/{namespace}/{name}")), Arc::new(entry))
    }

    /// The keys a list selects, through the index and by testing every entry.
    fn both_ways(objects: &Objects, index: &FieldIndex, start: &str, selector: &str) -> (Vec<String>, Vec<String>) {
        let fields = FieldSelector::parse(selector).unwrap();
        let keys = |i: Option<&FieldIndex>| {
            scan(objects, i, start, &fields)
                .filter(|e| e.matches(&LabelSelector::everything(), &fields))
                .map(|e| format!("{}/{}", e.fields[1].1, e.fields[0].1))
                .collect::<Vec<_>>()
        };
        (keys(Some(index)), keys(None))
    }

    #[test]
    fn a_list_through_the_index_selects_what_a_full_scan_selects_as_objects_move() {
        let mut objects = Objects::new();
        for (ns, name, node) in
            [("a", "p1", "n1"), ("a", "p2", "n2"), ("b", "p1", "n1"), ("b", "p3", ""), ("c", "p4", "n1")]
        {
            let (k, e) = pod(ns, name, node);
            objects.insert(k, e);
        }
        let mut index = FieldIndex::build("spec.nodeName", &objects);
        let selectors = [
            "spec.nodeName=n1",
            "spec.nodeName=",
            "spec.nodeName!=n1",
            "spec.nodeName=n1,metadata.name=p1",
            "",
            "spec.nodeName=none",
        ];
        let check = |objects: &Objects, index: &FieldIndex| {
            for start in ["/registry/pods/", "/registry/pods/b/"] {
                for selector in selectors {
                    let (indexed, scanned) = both_ways(objects, index, start, selector);
                    assert_eq!(indexed, scanned, "{selector} under {start}");
                }
            }
        };
        check(&objects, &index);
        assert_eq!(both_ways(&objects, &index, "/registry/pods/", "spec.nodeName=n1").0, ["a/p1", "b/p1", "c/p4"]);
        // Scheduled, moved, and gone.
        for (ns, name, node) in [("b", "p3", "n2"), ("a", "p1", "n2")] {
            let (k, e) = pod(ns, name, node);
            let prev = objects.insert(k.clone(), e.clone());
            index.replace(&k, prev.as_deref(), &e);
        }
        let (k, _) = pod("c", "p4", "");
        let gone = objects.remove(&k).unwrap();
        index.remove(&k, &gone);
        check(&objects, &index);
        assert_eq!(both_ways(&objects, &index, "/registry/pods/", "spec.nodeName=n2").0, ["a/p1", "a/p2", "b/p3"]);
        assert_eq!(both_ways(&objects, &index, "/registry/pods/", "spec.nodeName=").0, Vec::<String>::new());
    }
}
