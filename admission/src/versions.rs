//! The version a webhook or policy sees a request in: kube's `matchPolicy`.
//!
//! Objects travel through admission in their stored form (an `autoscaling/v1`
//! HorizontalPodAutoscaler as the `autoscaling/v2` object it is stored as). A webhook or a
//! policy sees the request in a served version instead: the request's own when a rule matches
//! it, else, under `matchPolicy: Equivalent` (the default), the first other version or group
//! serving the same store whose attributes a rule matches (an `autoscaling/v1` write seen by a
//! hook for `autoscaling/v2`; a core Event by one for `events.k8s.io`). The AdmissionReview
//! then names that version as `kind` and `resource`, and the request's own as `requestKind`
//! and `requestResource`, as kube's `VersionedAttributes` do.

use std::borrow::Cow;
use std::sync::Arc;

use apimachinery::catalogue::{Catalogue, ResourceDef, Subresource};
use apimachinery::error::ApiError;
use apimachinery::messages::Admit;
use serde_json::Value;

use crate::matching::RequestAttributes;

/// The versions a request can be seen in: its own first, then the resources sharing its store
/// in discovery order. Empty when the catalogue does not serve the request's resource (the
/// request is then seen as it came).
pub fn candidates(catalogue: &Catalogue, request: &Admit) -> Vec<Arc<ResourceDef>> {
    let t = &request.target;
    let (group, version) = t.requested.as_ref().map_or((&t.group, &t.version), |(g, v)| (g, v));
    let Some(own) = catalogue.find(group, version, &t.resource) else { return Vec::new() };
    let others =
        catalogue.sharing_storage(&own).into_iter().filter(|d| (&d.group, &d.version) != (&own.group, &own.version));
    std::iter::once(own.clone()).chain(others).collect()
}

/// The attributes rules see for `request` in version `def` (the request's own when `None`).
pub fn attributes<'a>(request: &'a Admit, def: Option<&'a ResourceDef>) -> RequestAttributes<'a> {
    let own = RequestAttributes::of(request);
    match def {
        Some(d) => RequestAttributes { group: &d.group, version: &d.version, resource: &d.resource, ..own },
        None => own,
    }
}

/// The version `rules` match the request in, as kube's matchers look: any rule on the
/// request's own version first; then, unless `exact`, rule by rule (earlier rules first) the
/// equivalent versions. `Some(None)`: the request is not in the catalogue and a rule matched
/// it as it came; `None`: no rule matched.
pub fn matched<'c, R>(
    candidates: &'c [Arc<ResourceDef>],
    request: &Admit,
    exact: bool,
    rules: &[R],
    matches: impl Fn(&R, &RequestAttributes<'_>) -> bool,
) -> Option<Option<&'c Arc<ResourceDef>>> {
    let own = attributes(request, candidates.first().map(|d| d.as_ref()));
    if rules.iter().any(|r| matches(r, &own)) {
        return Some(candidates.first());
    }
    if exact {
        return None;
    }
    rules.iter().find_map(|r| candidates.iter().skip(1).find(|d| matches(r, &attributes(request, Some(d)))).map(Some))
}

/// A request seen in one version: what a webhook is sent and a policy's CEL reads.
pub struct Seen<'a> {
    /// The version seen, `None` for the request's own when it is not in the catalogue.
    pub def: Option<&'a ResourceDef>,
    /// The request's own resource, to name as `requestKind` and `requestResource`.
    pub requested: Option<&'a ResourceDef>,
    /// The object in that version.
    pub object: Cow<'a, Value>,
    /// The old object in that version.
    pub old_object: Option<Cow<'a, Value>>,
}

impl<'a> Seen<'a> {
    /// `request` (with `object`, its current stored form) seen in `def`.
    pub fn new(
        request: &'a Admit,
        object: &'a Value,
        def: Option<&'a ResourceDef>,
        candidates: &'a [Arc<ResourceDef>],
    ) -> Self {
        // A Scale is the same in every version of its resource.
        let scale = request.target.subresource == Some(Subresource::Scale);
        let view = |o: &'a Value| match def {
            Some(d) if !scale => d.strategy.to_served(o).map_or(Cow::Borrowed(o), Cow::Owned),
            _ => Cow::Borrowed(o),
        };
        Seen {
            def,
            requested: candidates.first().map(|d| d.as_ref()),
            object: view(object),
            old_object: request.old_object.as_deref().map(view),
        }
    }

    /// An object of the version seen (a webhook's patched object) back in its stored form.
    pub fn to_storage(&self, object: Value) -> Result<Value, ApiError> {
        match self.def {
            Some(d) if object.get("kind").and_then(Value::as_str) != Some("Scale") => d.strategy.to_storage(object),
            _ => Ok(object),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::Rule;
    use crate::testing::admit;
    use apimachinery::messages::Operation;
    use serde_json::json;

    fn rule(group: &str, version: &str, resource: &str) -> Rule {
        Rule::parse(
            &json!({"operations": ["*"], "apiGroups": [group], "apiVersions": [version], "resources": [resource]}),
        )
    }

    /// An `autoscaling/v1` create of an HPA, its object in the stored (v2) form.
    fn v1_create(catalogue: &Catalogue) -> (Admit, Value) {
        let v1 = catalogue.find("autoscaling", "v1", "horizontalpodautoscalers").unwrap();
        let body = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}});
        let stored = v1.strategy.to_storage(body).unwrap();
        let mut request = admit(Operation::Create, "autoscaling", "horizontalpodautoscalers", stored.clone());
        request.target.version = "v2".into();
        request.target.requested = Some(("autoscaling".into(), "v1".into()));
        (request, stored)
    }

    #[test]
    fn equivalent_versions_match_after_the_own_one_and_exact_matches_only_it() {
        let catalogue = kinds::catalogue();
        let (request, _) = v1_create(&catalogue);
        let candidates = candidates(&catalogue, &request);
        let names: Vec<String> = candidates.iter().map(|d| format!("{}/{}", d.group, d.version)).collect();
        assert_eq!(names, ["autoscaling/v1", "autoscaling/v2"]);
        let version = |rules: &[Rule], exact: bool| {
            matched(&candidates, &request, exact, rules, Rule::matches).map(|m| m.unwrap().version.clone())
        };
        let v2 = [rule("autoscaling", "v2", "horizontalpodautoscalers")];
        assert_eq!(version(&v2, false).as_deref(), Some("v2"));
        assert_eq!(version(&v2, true), None);
        let both = [rule("autoscaling", "v2", "*"), rule("autoscaling", "v1", "*")];
        assert_eq!(version(&both, false).as_deref(), Some("v1"), "the request's own version first");
        assert_eq!(version(&[rule("apps", "*", "*")], false), None);

        let events = catalogue.find("", "v1", "events").unwrap();
        let mut core_event = admit(Operation::Create, "", "events", json!({"metadata": {"name": "e"}}));
        core_event.target.resource = events.resource.clone();
        let groups: Vec<String> = super::candidates(&catalogue, &core_event).iter().map(|d| d.group.clone()).collect();
        assert_eq!(groups, ["", "events.k8s.io"], "both groups serve the one store of events");
    }

    #[test]
    fn a_request_is_seen_in_the_version_matched_and_a_change_goes_back_to_the_stored_form() {
        let catalogue = kinds::catalogue();
        let (request, stored) = v1_create(&catalogue);
        let candidates = candidates(&catalogue, &request);
        let own = Seen::new(&request, &stored, Some(&candidates[0]), &candidates);
        assert_eq!(own.object["apiVersion"], "autoscaling/v1", "its own version, not the stored one");
        assert_eq!(own.object["spec"]["targetCPUUtilizationPercentage"], 70);
        let v2 = Seen::new(&request, &stored, Some(&candidates[1]), &candidates);
        assert!(matches!(v2.object, Cow::Borrowed(_)), "the stored version is not copied");
        assert_eq!(v2.object["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 70);
        let mut changed = v2.object.clone().into_owned();
        changed["spec"]["maxReplicas"] = json!(9);
        let back = v2.to_storage(changed).unwrap();
        assert_eq!(
            (back["apiVersion"].as_str(), back["spec"]["maxReplicas"].as_i64()),
            (Some("autoscaling/v2"), Some(9))
        );
        let mut changed_v1 = own.object.clone().into_owned();
        changed_v1["spec"]["targetCPUUtilizationPercentage"] = json!(50);
        let back = own.to_storage(changed_v1).unwrap();
        assert_eq!(back["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 50);
    }
}
