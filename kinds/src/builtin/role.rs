//! `rbac.authorization.k8s.io/v1` Role and ClusterRole (kube: `pkg/registry/rbac/role`,
//! `clusterrole`): names are any path segment (`system:controller:...`); printed by kube's
//! default convertor.

use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
use serde_json::Value;

use apimachinery::catalogue::{NameRule, ResourceDef, Strategy};
use apimachinery::error::Cause;
use validation::rbac;

pub(super) fn roles() -> ResourceDef {
    ResourceDef::new("rbac.authorization.k8s.io", "v1", "roles", "Role", Roles { namespaced: true })
        .names(NameRule::PathSegment)
        .schema::<Role>()
}

pub(super) fn cluster_roles() -> ResourceDef {
    ResourceDef::new("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", Roles { namespaced: false })
        .cluster_scoped()
        .names(NameRule::PathSegment)
        .schema::<ClusterRole>()
}

struct Roles {
    namespaced: bool,
}

impl Strategy for Roles {
    fn validate(&self, _: &ResourceDef, obj: &Value) -> Vec<Cause> {
        rbac::validate_role(obj, self.namespaced)
    }

    fn validate_update(&self, _: &ResourceDef, new: &Value, old: &Value) -> Vec<Cause> {
        rbac::validate_role_update(new, old, self.namespaced)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}
