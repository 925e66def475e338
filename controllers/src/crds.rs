//! CustomResourceDefinitions served: what kube-apiserver's apiextensions controllers do
//! (naming, establishing, the CRD handler's serving, the CustomResourceCleanup finalizer).
//!
//! One task follows the CRDs through their cacher. For each CRD it decides the accepted names
//! (`NamesAccepted`, refused names reported as kube words them), serves the CRD's versions
//! through the catalogue and a cacher of their store the moment the names are accepted, then
//! writes `Established`. A CRD being deleted keeps being served while its objects are deleted,
//! then loses its finalizer; once it is gone its resources leave the catalogue and its cacher
//! stops. Unlike the other controllers this one is part of the API itself: it cannot be
//! turned off.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actors::Deadline;
use apiextensions::conditions;
use apiextensions::openapi::ServedVersion;
use apiextensions::served::{self, CLEANUP_FINALIZER};
use apimachinery::catalogue::{Catalogue, ResourceDef, Subresource};
use apimachinery::encoded::{EncodedObject, WatchEventType};
use apimachinery::lookup::ObjectLookup;
use apimachinery::messages::{DeleteCollection, ListObjects, Target, UpdateObject};
use apimachinery::object::{ObjectExt, now_rfc3339};
use apimachinery::options::{DeleteOptions, ListOptions, ReadAt, WriteOptions};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use kinds::schema::CustomDocuments;
use stage_handles::Stages;

use super::{WRITE_TIMEOUT, encoded_events, identity};

/// Where the controller publishes each custom group version's OpenAPI documents, for the
/// gateway to serve at `/openapi/v2` and `/openapi/v3`.
pub trait CustomOpenApi: Send + Sync {
    /// Sets (or, with `None`, removes) the documents of `group`/`version`.
    fn set(&self, group: &str, version: &str, docs: Option<CustomDocuments>);
}

/// The CRD resource, if served.
fn crd_definition(catalogue: &Catalogue) -> Option<Arc<ResourceDef>> {
    catalogue.find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
}

fn writer() -> apimachinery::request::UserInfo {
    identity("apiextensions-controller")
}

/// What a served CRD put in the catalogue.
struct Serving {
    storage_path: String,
    /// A hash of the spec and accepted names it was served from: a change re-serves it (a
    /// hash, not a copy: a CRD's schema is most of its size).
    fingerprint: u64,
    /// The group versions it serves, whose OpenAPI documents it is part of.
    group_versions: Vec<(String, String)>,
}

/// The controller's view: every CRD, and what each serves.
struct Controller {
    stages: Stages,
    catalogue: Arc<Catalogue>,
    openapi: Arc<dyn CustomOpenApi>,
    /// Reads Services and Endpoints for conversion webhooks.
    objects: Arc<dyn ObjectLookup>,
    def: Arc<ResourceDef>,
    /// Every CRD as the cacher holds it (the same bytes, not a decoded copy: a CRD is mostly
    /// its schema), decoded when looked at.
    crds: BTreeMap<String, EncodedObject>,
    serving: HashMap<String, Serving>,
    /// CRDs whose objects a cleanup task is deleting.
    cleaning: HashSet<String>,
    /// Tells the controller a cleanup task ended (its CRD is looked at again).
    cleaned: mpsc::UnboundedSender<String>,
}

impl Controller {
    /// Serves `crd`'s versions from its spec and accepted names, unless served so already.
    fn serve(&mut self, crd: &Value) {
        let name = crd.name().to_string();
        let fingerprint = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            crd["spec"].to_string().hash(&mut h);
            crd["status"]["acceptedNames"].to_string().hash(&mut h);
            h.finish()
        };
        if self.serving.get(&name).is_some_and(|s| s.fingerprint == fingerprint) {
            return;
        }
        let storage_path = served::storage_path(crd);
        let old_path = self.serving.get(&name).map(|s| s.storage_path.clone());
        let defs = served::definitions(crd, Some(&self.objects));
        let group_versions: Vec<(String, String)> = defs.iter().map(|d| (d.group.clone(), d.version.clone())).collect();
        let replaced = self
            .catalogue
            .replace(|d| Some(&d.storage_path) == old_path.as_ref() || d.storage_path == storage_path, defs);
        match replaced {
            Ok(added) => {
                if let Some(first) = added.into_iter().next() {
                    if old_path.as_ref() == Some(&storage_path) {
                        self.stages.caches.restart(first);
                    } else {
                        self.stages.caches.start(first);
                    }
                }
                tracing::info!(crd = %name, "serving custom resources");
            }
            Err(e) => {
                tracing::warn!(crd = %name, "cannot serve: {e}");
                return;
            }
        }
        if let Some(old) = old_path.filter(|p| *p != storage_path) {
            let caches = self.stages.caches.clone();
            actix_rt::spawn(async move { caches.stop(&old).await });
        }
        let before =
            self.serving.insert(name, Serving { storage_path, fingerprint, group_versions: group_versions.clone() });
        self.refresh_openapi(before.map(|b| b.group_versions).unwrap_or_default().into_iter().chain(group_versions));
    }

    /// Rebuilds the OpenAPI documents of these group versions (each once) from the CRDs
    /// serving them.
    fn refresh_openapi(&self, group_versions: impl Iterator<Item = (String, String)>) {
        let wanted: BTreeSet<(String, String)> = group_versions.collect();
        for (group, version) in wanted {
            let served_here = self.catalogue.resources_of(&group, &version);
            let mut defs = Vec::new();
            for (name, s) in &self.serving {
                let def = served_here.iter().find(|d| d.storage_path == s.storage_path);
                if let (Some(crd), Some(def)) = (self.crds.get(name), def) {
                    defs.push((crd.value(), def.clone()));
                }
            }
            let versions: Vec<ServedVersion<'_>> =
                defs.iter().map(|(crd, def)| ServedVersion { crd, def: def.as_ref() }).collect();
            let docs = (!versions.is_empty()).then(|| apiextensions::openapi::documents(&versions));
            self.openapi.set(&group, &version, docs);
        }
    }

    /// Stops serving what `name` served.
    fn unserve(&mut self, name: &str) {
        let Some(gone) = self.serving.remove(name) else { return };
        let _ = self.catalogue.replace(|d| d.storage_path == gone.storage_path, Vec::new());
        self.refresh_openapi(gone.group_versions.into_iter());
        let caches = self.stages.caches.clone();
        actix_rt::spawn(async move { caches.stop(&gone.storage_path).await });
        tracing::info!(crd = %name, "no longer serving custom resources");
    }

    /// The CRDs of `group`, decoded: a CRD's name is `<plural>.<group>`, so only names with
    /// that suffix are (a few more, of subgroups, which the callers' group checks drop).
    fn group_members(&self, group: &str) -> Vec<Value> {
        let suffix = format!(".{group}");
        self.crds.iter().filter(|(name, _)| name.ends_with(&suffix)).map(|(_, crd)| crd.value()).collect()
    }

    /// Brings one CRD to its desired state.
    async fn reconcile(&mut self, name: &str) {
        let Some(crd) = self.crds.get(name).map(EncodedObject::value) else {
            self.unserve(name);
            return;
        };
        if crd.is_being_deleted() {
            if conditions::is_true(&crd, "Established") || self.serving.contains_key(name) {
                self.serve(&crd);
            }
            if crd.finalizers().contains(&CLEANUP_FINALIZER) && self.cleaning.insert(name.to_string()) {
                let (stages, catalogue, def, done) =
                    (self.stages.clone(), self.catalogue.clone(), self.def.clone(), self.cleaned.clone());
                let name = name.to_string();
                actix_rt::spawn(async move {
                    cleanup(&stages, &catalogue, &def, &name).await;
                    let _ = done.send(name);
                });
            }
            return;
        }
        let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or("");
        let peers = self.group_members(group);
        let (names, accepted, established) = conditions::accept_names(&crd, peers.iter());
        let mut desired = crd.clone();
        if !desired["status"].is_object() {
            desired["status"] = json!({});
        }
        desired["status"]["acceptedNames"] = names;
        let now = now_rfc3339();
        conditions::set(&mut desired, &accepted, &now);
        conditions::set(&mut desired, &established, &now);
        if accepted.status == "True" || conditions::is_true(&crd, "Established") {
            self.serve(&desired);
            conditions::set(&mut desired, &conditions::established(), &now);
        }
        if desired["status"] != crd["status"] {
            write_status(&self.stages, &self.def, desired).await;
        }
    }
}

/// Writes a CRD's status; a conflict or a deletion meanwhile brings a new event instead.
async fn write_status(stages: &Stages, def: &ResourceDef, crd: Value) {
    let name = crd.name().to_string();
    let update = UpdateObject {
        target: Target { subresource: Some(Subresource::Status), ..Target::object(def, "", &name) },
        object: crd,
        user: writer(),
        options: WriteOptions::default(),
    };
    match stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await {
        Ok(_) => {}
        Err(e) if matches!(e.reason, apimachinery::Reason::Conflict | apimachinery::Reason::NotFound) => {}
        Err(e) => tracing::warn!(crd = %name, "writing CRD status: {}", e.message),
    }
}

/// The latest stored CRD.
async fn latest(stages: &Stages, def: &Arc<ResourceDef>, name: &str) -> Option<Value> {
    let get = apimachinery::messages::GetObject {
        target: Target::object(def, "", name),
        options: apimachinery::options::GetOptions { read_at: ReadAt::Latest },
    };
    stages.reads(def).ok()?.reader.get(get).await.ok().map(|o| o.value())
}

/// Sets one condition of the latest CRD through `/status`.
async fn set_condition(stages: &Stages, def: &Arc<ResourceDef>, name: &str, c: &conditions::Condition) {
    let Some(mut crd) = latest(stages, def, name).await else { return };
    conditions::set(&mut crd, c, &now_rfc3339());
    write_status(stages, def, crd).await;
}

/// kube's CRD finalizer: deletes every object of the CRD, checks that none remains, then
/// removes `customresourcecleanup.apiextensions.k8s.io` so the CRD's deletion completes.
async fn cleanup(stages: &Stages, catalogue: &Catalogue, def: &Arc<ResourceDef>, name: &str) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(crd) = latest(stages, def, name).await else { return };
        if !crd.finalizers().contains(&CLEANUP_FINALIZER) {
            return;
        }
        let path = served::storage_path(&crd);
        let resource = catalogue.stores().into_iter().find(|d| d.storage_path == path);
        let remaining = match &resource {
            Some(r) => {
                set_condition(stages, def, name, &conditions::deletion_in_progress()).await;
                delete_all(stages, r).await
            }
            None => 0,
        };
        if remaining == 0 {
            let mut crd = crd;
            let kept: Vec<Value> =
                crd.finalizers().iter().filter(|f| **f != CLEANUP_FINALIZER).map(|f| Value::from(*f)).collect();
            crd.meta_mut().insert("finalizers".into(), kept.into());
            let update = UpdateObject {
                target: Target::object(def, "", name),
                object: crd,
                user: writer(),
                options: WriteOptions::default(),
            };
            match stages.update.ask(update, Deadline::after(WRITE_TIMEOUT)).await {
                Ok(_) => return,
                Err(e) if e.reason == apimachinery::Reason::NotFound => return,
                Err(e) => tracing::warn!(crd = %name, "removing the cleanup finalizer: {}", e.message),
            }
        } else {
            set_condition(stages, def, name, &conditions::deletion_check(remaining)).await;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// Deletes every object of `resource` (all namespaces); returns how many remain after.
async fn delete_all(stages: &Stages, resource: &Arc<ResourceDef>) -> usize {
    let delete = DeleteCollection {
        target: Target::collection(resource, ""),
        list: ListOptions::default(),
        user: writer(),
        options: DeleteOptions::default(),
    };
    if let Err(e) = stages.delete_collection.ask(delete, Deadline::after(WRITE_TIMEOUT)).await {
        tracing::warn!(resource = %resource.qualified(), "deleting custom resources: {}", e.message);
    }
    let list = ListObjects {
        target: Target::collection(resource, ""),
        options: ListOptions { read_at: ReadAt::Latest, ..Default::default() },
    };
    match stages.reads(resource) {
        Ok(reads) => reads.reader.list(list).await.map_or(usize::MAX, |l| l.items.len()),
        Err(_) => usize::MAX,
    }
}

/// Serves the CRDs stored now, then follows them on the current arbiter. Returns once the
/// stored CRDs are served, so the server answers for their resources from its first request.
pub async fn start(
    stages: Stages,
    catalogue: Arc<Catalogue>,
    openapi: Arc<dyn CustomOpenApi>,
    objects: Arc<dyn ObjectLookup>,
) {
    let Some(def) = crd_definition(&catalogue) else { return };
    let (cleaned, mut cleaned_rx) = mpsc::unbounded_channel();
    let mut controller = Controller {
        stages: stages.clone(),
        catalogue,
        openapi,
        objects,
        def: def.clone(),
        crds: BTreeMap::new(),
        serving: HashMap::new(),
        cleaning: HashSet::new(),
        cleaned,
    };
    let list = ListObjects {
        target: Target::collection(&def, ""),
        options: ListOptions { read_at: ReadAt::Latest, ..Default::default() },
    };
    if let Ok(reads) = stages.reads(&def)
        && let Ok(list) = reads.reader.list(list).await
    {
        for crd in list.items {
            controller.crds.insert(crd.value().name().to_string(), crd);
        }
        let names: Vec<String> = controller.crds.keys().cloned().collect();
        for name in names {
            controller.reconcile(&name).await;
        }
    }
    let mut rx = encoded_events(&stages, &def);
    actix_rt::spawn(async move {
        loop {
            tokio::select! {
                event = rx.recv() => {
                    let Some((kind, encoded)) = event else { return };
                    let crd = encoded.value();
                    let name = crd.name().to_string();
                    let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or("").to_string();
                    if kind == WatchEventType::Deleted {
                        controller.crds.remove(&name);
                        controller.reconcile(&name).await;
                        // Names it held may now be free for another CRD of its group.
                        let waiting: Vec<String> = controller
                            .group_members(&group)
                            .iter()
                            .filter(|c| c.pointer("/spec/group").and_then(Value::as_str) == Some(&group))
                            .filter(|c| !conditions::is_true(c, "NamesAccepted"))
                            .map(|c| c.name().to_string())
                            .collect();
                        for other in waiting {
                            controller.reconcile(&other).await;
                        }
                    } else {
                        controller.crds.insert(name.clone(), encoded);
                        controller.reconcile(&name).await;
                    }
                }
                done = cleaned_rx.recv() => {
                    let Some(name) = done else { return };
                    controller.cleaning.remove(&name);
                    controller.reconcile(&name).await;
                }
            }
        }
    });
}
