//! Legacy service-account tokens, tracked as kube-apiserver tracks them:
//!
//! - the ConfigMap `kube-system/kube-apiserver-legacy-service-account-token-tracking` says
//!   since when (`since`, a UTC date) uses are recorded. kube's `legacytokentracking`
//!   controller writes it; kube-controller-manager's legacy token cleaner reads it before it
//!   marks any token unused, and logs an error each time it looks while it is missing;
//! - each use labels the token's Secret `kubernetes.io/legacy-token-last-used: <today>`
//!   ([`SecretLabeler`], called by the ServiceAccount authenticator).
//!
//! Without the label a token used only through this server would look unused to the cleaner,
//! and be invalidated while in use.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use actors::Deadline;
use apimachinery::catalogue::Catalogue;
use apimachinery::messages::{PatchObject, Target};
use apimachinery::options::WriteOptions;
use apimachinery::patch::PatchType;
use apimachinery::request::UserInfo;
use auth::serviceaccount::authenticator::{LAST_USED_LABEL, LegacyTokenUse};
use serde_json::{Value, json};
use stage_handles::Stages;

use super::WRITE_TIMEOUT;

/// The ConfigMap's namespace and name, kube's.
const NAMESPACE: &str = "kube-system";
const NAME: &str = "kube-apiserver-legacy-service-account-token-tracking";
/// Its key holding the date.
const SINCE: &str = "since";

/// kube-apiserver's loopback identity, which writes both.
fn apiserver() -> UserInfo {
    UserInfo { name: "system:apiserver".into(), groups: vec!["system:masters".into()], ..Default::default() }
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// Whether `since` is a date as kube writes it.
fn valid_date(since: Option<&str>) -> bool {
    since.is_some_and(|s| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok())
}

/// How often the tracking ConfigMap is looked at again once written (kube's controller
/// watches it and re-creates it at most every 30 minutes).
const RECHECK: std::time::Duration = std::time::Duration::from_secs(600);

/// Keeps the tracking ConfigMap on the current runtime: written at once (retried with backoff
/// until it is), then looked at again every [`RECHECK`], so a deleted one comes back.
pub fn start(stages: Stages, catalogue: Arc<Catalogue>) {
    actix_rt::spawn(async move {
        let mut backoff = std::time::Duration::from_secs(1);
        loop {
            match ensure_tracking(&stages, &catalogue).await {
                Ok(()) => {
                    backoff = std::time::Duration::from_secs(1);
                    tokio::time::sleep(RECHECK).await;
                }
                Err(e) => {
                    tracing::warn!("recording since when legacy service account tokens are tracked: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(std::time::Duration::from_secs(60));
                }
            }
        }
    });
}

/// Creates the tracking ConfigMap with today's date, or rewrites a `since` that is not a date;
/// a valid one (another apiserver's, perhaps older) is kept.
async fn ensure_tracking(stages: &Stages, catalogue: &Catalogue) -> Result<(), String> {
    super::configmap_data::reconcile(stages, catalogue, (NAMESPACE, NAME), &apiserver(), |data| {
        if valid_date(data.and_then(|d| d.get(SINCE)).and_then(Value::as_str)) {
            return None;
        }
        let mut data = data.cloned().unwrap_or_default();
        data.insert(SINCE.into(), today().into());
        Some(data)
    })
    .await
}

/// Labels a legacy token's Secret with the day it was used: a merge patch with the Secret's
/// uid as precondition, as kube sends, at most once per Secret and day from this server.
#[derive(Clone)]
pub struct SecretLabeler {
    stages: Stages,
    catalogue: Arc<Catalogue>,
    /// The day, and the Secrets labelled (or being labelled) on it.
    labelled: Arc<Mutex<Labelled>>,
}

/// A day, and the Secrets (namespace, name) labelled on it.
type Labelled = (String, HashSet<(String, String)>);

impl SecretLabeler {
    /// A labeler writing through `stages`.
    pub fn new(stages: Stages, catalogue: Arc<Catalogue>) -> Self {
        SecretLabeler { stages, catalogue, labelled: Arc::default() }
    }

    /// Whether `namespace/name` is to be labelled for `today` (and notes that it is).
    fn first_today(&self, namespace: &str, name: &str, today: &str) -> bool {
        let mut labelled = self.labelled.lock().unwrap_or_else(|e| e.into_inner());
        if labelled.0 != today {
            *labelled = (today.to_string(), HashSet::new());
        }
        labelled.1.insert((namespace.to_string(), name.to_string()))
    }

    /// Forgets that `namespace/name` was labelled (its patch failed: the next use tries again).
    fn forget(&self, namespace: &str, name: &str) {
        let mut labelled = self.labelled.lock().unwrap_or_else(|e| e.into_inner());
        labelled.1.remove(&(namespace.to_string(), name.to_string()));
    }
}

impl LegacyTokenUse for SecretLabeler {
    fn used(&self, namespace: &str, name: &str, uid: &str, today: &str) {
        if !self.first_today(namespace, name, today) {
            return;
        }
        let Some(def) = self.catalogue.find("", "v1", "secrets") else { return };
        let patch = json!({"metadata": {"uid": uid, "labels": {LAST_USED_LABEL: today}}});
        let write = PatchObject {
            target: Target::object(&def, namespace, name),
            patch_type: PatchType::Merge,
            patch: patch.to_string().into_bytes(),
            user: apiserver(),
            options: WriteOptions::default(),
        };
        let this = self.clone();
        let (namespace, name) = (namespace.to_string(), name.to_string());
        actix_rt::spawn(async move {
            if let Err(e) = this.stages.patch.ask(write, Deadline::after(WRITE_TIMEOUT)).await {
                this.forget(&namespace, &name);
                tracing::warn!(
                    "labelling legacy service account token {namespace}/{name} with last-used date: {}",
                    e.message
                );
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_kubes() {
        assert!(valid_date(Some("2026-12-07")));
        assert!(!valid_date(Some("07/12/2026")));
        assert!(!valid_date(Some("")));
        assert!(!valid_date(None));
    }
}
