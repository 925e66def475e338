//! Local APIServices registered: kube-apiserver's autoregister controller, with its CRD
//! registration. Every group version served here has an APIService `<version>.<group>`
//! without `spec.service`: a built-in one with kube's priorities, labelled
//! `kube-aggregator.kubernetes.io/automanaged: onstart`; a custom resource's with priority
//! 1000/100, labelled `true` (`apiregistration.k8s.io` itself has none, as in kube).
//!
//! As in kube, at start a missing APIService is created, an `onstart` one whose spec differs
//! is updated (its labels and status kept), and an `onstart` one nothing serves any more is
//! deleted; one without the label (an administrator's) is left alone. `true` ones follow the
//! catalogue all along: created when a CRD's version is served, kept to their spec, deleted
//! when nothing serves them. Unlike kube, a deleted APIService of a group version still
//! served is created again at once, built-in ones included: kube waits for a restart, and
//! meanwhile the group drops out of its legacy `/apis`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use actors::Deadline;
use apimachinery::catalogue::{Catalogue, ResourceDef};
use apimachinery::encoded::WatchEventType;
use apimachinery::messages::{CreateObject, DeleteObject, ListObjects, Target, UpdateObject};
use apimachinery::object::ObjectExt;
use apimachinery::options::{DeleteOptions, ListOptions, ReadAt, WriteOptions};
use kinds::apiregistration::{self, ApiServiceSpec, Priority};
use serde_json::{Value, json};

use super::{WRITE_TIMEOUT, events, identity};
use stage_handles::Stages;

/// The APIService a served group version should have.
struct Wanted {
    object: Value,
}

fn wanted_object(group: &str, version: &str, priority: Priority, label: &str) -> Value {
    let mut spec = json!({"version": version, "groupPriorityMinimum": priority.group,
        "versionPriority": priority.version});
    if !group.is_empty() {
        spec["group"] = group.into();
    }
    json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": apiregistration::name_of(group, version),
            "labels": {apiregistration::AUTOMANAGED_LABEL: label}},
        "spec": spec})
}

/// The APIServices the catalogue calls for, by name.
fn wanted(catalogue: &Catalogue) -> BTreeMap<String, Wanted> {
    let builtin = |g: &str, v: &str| kinds::resources().iter().any(|d| d.group == g && d.version == v);
    let mut out = BTreeMap::new();
    for group in catalogue.groups().iter().filter(|g| g.name != apiregistration::GROUP) {
        for version in &group.versions {
            let (priority, label) = if builtin(&group.name, version) {
                // kube skips built-in group versions missing from its table.
                let Some(p) = apiregistration::builtin_priority(&group.name, version) else { continue };
                (p, apiregistration::AUTOMANAGED_ON_START)
            } else {
                (apiregistration::CRD_PRIORITY, apiregistration::AUTOMANAGED_ALWAYS)
            };
            let object = wanted_object(&group.name, version, priority, label);
            out.insert(object.name().to_string(), Wanted { object });
        }
    }
    out
}

fn automanaged(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/labels")?.get(apiregistration::AUTOMANAGED_LABEL)?.as_str()
}

/// What bringing one APIService to what is wanted takes.
#[derive(Debug, PartialEq)]
enum Action {
    Create(Value),
    Update(Value),
    Delete,
}

/// kube's autoregister decisions for one name. `at_start`: the one pass where `onstart`
/// APIServices are updated or deleted.
fn decide(wanted: Option<&Wanted>, existing: Option<&Value>, at_start: bool) -> Option<Action> {
    match (wanted, existing) {
        (Some(w), None) => Some(Action::Create(w.object.clone())),
        (Some(w), Some(e)) => {
            let label = automanaged(e)?;
            let differs = ApiServiceSpec::of(e) != ApiServiceSpec::of(&w.object);
            let keeps_up = at_start || label == apiregistration::AUTOMANAGED_ALWAYS;
            (differs && keeps_up).then(|| {
                let mut updated = e.clone();
                updated["spec"] = w.object["spec"].clone();
                Action::Update(updated)
            })
        }
        (None, Some(e)) => match automanaged(e)? {
            apiregistration::AUTOMANAGED_ALWAYS => Some(Action::Delete),
            apiregistration::AUTOMANAGED_ON_START if at_start => Some(Action::Delete),
            _ => None,
        },
        (None, None) => None,
    }
}

struct Registration {
    stages: Stages,
    def: Arc<ResourceDef>,
    wanted: BTreeMap<String, Wanted>,
    existing: HashMap<String, Value>,
}

impl Registration {
    async fn sync(&self, name: &str, at_start: bool) {
        let Some(action) = decide(self.wanted.get(name), self.existing.get(name), at_start) else { return };
        let user = identity("kube-apiserver-autoregistration");
        let (deadline, options) = (Deadline::after(WRITE_TIMEOUT), WriteOptions::default());
        let result = match action {
            Action::Create(object) => {
                let create = CreateObject { target: Target::collection(&self.def, ""), object, user, options };
                self.stages.create.ask(create, deadline).await.map(|_| ())
            }
            Action::Update(object) => {
                let update = UpdateObject { target: Target::object(&self.def, "", name), object, user, options };
                self.stages.update.ask(update, deadline).await.map(|_| ())
            }
            Action::Delete => {
                let options = DeleteOptions::default();
                let delete = DeleteObject { target: Target::object(&self.def, "", name), user, options };
                self.stages.delete.ask(delete, deadline).await.map(|_| ())
            }
        };
        match result {
            Ok(()) => {}
            // Someone else wrote it meanwhile: its event brings it here again.
            Err(e) if matches!(e.reason, apimachinery::Reason::AlreadyExists | apimachinery::Reason::Conflict) => {}
            Err(e) if e.reason == apimachinery::Reason::NotFound => {}
            Err(e) => tracing::warn!(apiservice = %name, "registering APIService: {}", e.message),
        }
    }

    async fn sync_all(&self, at_start: bool) {
        let names: BTreeSet<String> = self.wanted.keys().chain(self.existing.keys()).cloned().collect();
        for name in names {
            self.sync(&name, at_start).await;
        }
    }
}

/// Registers the APIServices of what is served now, then follows the catalogue and the
/// APIServices on the current arbiter.
pub async fn start(stages: Stages, catalogue: Arc<Catalogue>) {
    let Some(def) = catalogue.find(apiregistration::GROUP, "v1", "apiservices") else { return };
    let list = ListObjects {
        target: Target::collection(&def, ""),
        options: ListOptions { read_at: ReadAt::Latest, ..Default::default() },
    };
    let existing = match stages.reads(&def) {
        Ok(reads) => match reads.reader.list(list).await {
            Ok(list) => list.items.iter().map(|o| o.value()).map(|o| (o.name().to_string(), o)).collect(),
            Err(e) => {
                tracing::warn!("listing APIServices: {}", e.message);
                return;
            }
        },
        Err(_) => return,
    };
    let mut changes = catalogue.subscribe();
    let mut registration =
        Registration { stages: stages.clone(), def: def.clone(), wanted: wanted(&catalogue), existing };
    registration.sync_all(true).await;
    let mut apiservices = events(&stages, &def);
    actix_rt::spawn(async move {
        loop {
            tokio::select! {
                Some((kind, obj)) = apiservices.recv() => {
                    let name = obj.name().to_string();
                    if kind == WatchEventType::Deleted {
                        registration.existing.remove(&name);
                    } else {
                        registration.existing.insert(name.clone(), obj);
                    }
                    registration.sync(&name, false).await;
                }
                Ok(()) = changes.changed() => {
                    registration.wanted = wanted(&catalogue);
                    registration.sync_all(false).await;
                }
                else => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_start() -> Wanted {
        let object = wanted_object("apps", "v1", Priority { group: 17800, version: 15 }, "onstart");
        Wanted { object }
    }

    #[test]
    fn every_builtin_group_version_is_wanted_with_kube_priorities_and_custom_ones_at_1000() {
        let catalogue = kinds::catalogue();
        let w = wanted(&catalogue);
        let core = &w["v1."].object;
        assert_eq!(core["spec"], json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}));
        assert_eq!(core["metadata"]["labels"][apiregistration::AUTOMANAGED_LABEL], "onstart");
        assert_eq!(w["v2.autoscaling"].object["spec"]["versionPriority"], 30);
        assert!(!w.keys().any(|n| n.ends_with(".apiregistration.k8s.io")), "the aggregator's own group has none");
        catalogue
            .add(ResourceDef::new("example.com", "v1", "widgets", "Widget", apimachinery::catalogue::DefaultStrategy))
            .unwrap();
        let custom = &wanted(&catalogue)["v1.example.com"].object;
        assert_eq!(automanaged(custom), Some("true"));
        assert_eq!(custom["spec"]["groupPriorityMinimum"], 1000);
    }

    #[test]
    fn onstart_apiservices_are_kept_at_start_and_recreated_when_deleted() {
        let w = on_start();
        assert!(matches!(decide(Some(&w), None, false), Some(Action::Create(_))), "deleted: created again");
        let mut old = w.object.clone();
        old["spec"]["versionPriority"] = 1.into();
        old["status"] = json!({"conditions": []});
        let Some(Action::Update(updated)) = decide(Some(&w), Some(&old), true) else { panic!("updated at start") };
        assert_eq!((&updated["spec"], &updated["status"]), (&w.object["spec"], &old["status"]));
        assert_eq!(decide(Some(&w), Some(&old), false), None, "but only at start");
        assert_eq!(decide(None, Some(&old), true), Some(Action::Delete), "no longer served: deleted at start");
        assert_eq!(decide(None, Some(&old), false), None);
    }

    #[test]
    fn an_administrators_apiservice_is_left_alone_and_crd_ones_follow_the_catalogue() {
        let w = on_start();
        let mut mine = w.object.clone();
        mine["metadata"]["labels"] = json!({});
        mine["spec"]["versionPriority"] = 2.into();
        assert_eq!(decide(Some(&w), Some(&mine), true), None);
        assert_eq!(decide(None, Some(&mine), true), None);
        let crd = wanted_object("example.com", "v1", apiregistration::CRD_PRIORITY, "true");
        assert_eq!(decide(None, Some(&crd), false), Some(Action::Delete), "its CRD is gone");
    }
}
