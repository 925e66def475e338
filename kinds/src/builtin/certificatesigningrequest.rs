//! `certificates.k8s.io/v1` CertificateSigningRequest (kube: `pkg/registry/certificates/certificates`).

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use serde_json::{Value, json};

use crate::printers;
use apimachinery::catalogue::{ResetFields, ResourceDef, Strategy, Subresource};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::certificates;

pub(super) fn definition() -> ResourceDef {
    ResourceDef::new(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        CertificateSigningRequests,
    )
    .cluster_scoped()
    .short_names(&["csr"])
    .subresources(&[Subresource::Status, Subresource::Approval])
    .schema::<CertificateSigningRequest>()
}

struct CertificateSigningRequests;

impl Strategy for CertificateSigningRequests {
    /// No writer owns the spec, fixed at creation; the resource's writers own no status, a
    /// status writer no conditions (those are `/approval`'s): kube's reset fields.
    fn reset_fields(&self, subresource: Option<Subresource>) -> Option<ResetFields> {
        match subresource {
            None => Some(&[&["spec"], &["status"]]),
            Some(Subresource::Status) => Some(&[&["spec"], &["status", "conditions"]]),
            _ => None,
        }
    }

    /// Updates (and `/approval`, which the registry checks as an update) keep the condition
    /// rules.
    fn validate_kind_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        certificates::certificate_conditions(new, Some(old))
    }

    /// kube's approval strategy: only the conditions (Approved, Denied) change.
    fn prepare_for_subresource_update(&self, subresource: Subresource, new: &mut Value, old: &Value) {
        if subresource != Subresource::Approval {
            *new = old.clone();
            return;
        }
        let mut conditions = new.pointer("/status/conditions").cloned();
        // kube fills a condition's times when missing; a condition that was already there with
        // the same status keeps its transition time.
        let now = apimachinery::object::now_rfc3339();
        for c in conditions.iter_mut().flat_map(|c| c.as_array_mut()).flatten() {
            let before = old
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|o| o["type"] == c["type"] && o["status"] == c["status"]));
            if c.get("lastUpdateTime").is_none_or(Value::is_null) {
                c["lastUpdateTime"] = now.clone().into();
            }
            if c.get("lastTransitionTime").is_none_or(Value::is_null) {
                let kept = before.and_then(|b| b.get("lastTransitionTime")).cloned();
                c["lastTransitionTime"] = kept.unwrap_or_else(|| now.clone().into());
            }
        }
        // Spec and status as stored, but the conditions; the metadata as written.
        apimachinery::catalogue::update::carry_identity(new, old);
        for part in ["spec", "status"] {
            match old.get(part) {
                Some(v) => new[part] = v.clone(),
                None => {
                    new.as_object_mut().map(|o| o.remove(part));
                }
            }
        }
        match conditions {
            Some(c) => new["status"]["conditions"] = c,
            None => {
                if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
                    status.remove("conditions");
                }
            }
        }
    }

    fn validate_status_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        let mut out = apimachinery::catalogue::meta_update(new, old);
        out.extend(certificates::certificate_conditions(new, Some(old)));
        out
    }

    /// kube's `PrepareForCreate`: the requester is who creates it, whatever the body says,
    /// and no condition (approval) can be created with it.
    fn record_requester(&self, obj: &mut Value, user: &apimachinery::request::UserInfo) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            for k in ["username", "uid", "groups", "extra"] {
                spec.remove(k);
            }
            spec.insert("username".into(), user.name.clone().into());
            if !user.uid.is_empty() {
                spec.insert("uid".into(), user.uid.clone().into());
            }
            if !user.groups.is_empty() {
                spec.insert("groups".into(), user.groups.clone().into());
            }
        }
    }

    fn validate_kind(&self, obj: &Value) -> Vec<Cause> {
        certificates::certificate_signing_request(obj)
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crate::defaults::reset_status(obj, json!({}));
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(&printers::CERTIFICATE_SIGNING_REQUESTS)
    }
}
