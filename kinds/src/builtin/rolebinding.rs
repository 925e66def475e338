//! `rbac.authorization.k8s.io/v1` RoleBinding and ClusterRoleBinding (kube:
//! `pkg/registry/rbac/rolebinding`, `clusterrolebinding`).

use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use serde_json::Value;

use crate::printers;
use apimachinery::catalogue::{NameRule, ResourceDef, Strategy};
use apimachinery::error::Cause;
use apimachinery::table::Printer;
use validation::rbac;

pub(super) fn role_bindings() -> ResourceDef {
    ResourceDef::new("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", Bindings { namespaced: true })
        .names(NameRule::PathSegment)
        .schema::<RoleBinding>()
}

pub(super) fn cluster_role_bindings() -> ResourceDef {
    let bindings = Bindings { namespaced: false };
    ResourceDef::new("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", bindings)
        .cluster_scoped()
        .names(NameRule::PathSegment)
        .schema::<ClusterRoleBinding>()
}

struct Bindings {
    namespaced: bool,
}

impl Strategy for Bindings {
    fn defaults(&self, obj: &mut Value) {
        crate::defaults::default_role_binding(obj);
    }

    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        rbac::validate_binding(obj, self.namespaced)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        rbac::validate_binding_update(new, old, self.namespaced)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn printer(&self) -> Option<&dyn Printer> {
        Some(if self.namespaced { &printers::ROLE_BINDINGS } else { &printers::CLUSTER_ROLE_BINDINGS })
    }
}
