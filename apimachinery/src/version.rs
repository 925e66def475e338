//! Kubernetes API versions (`v1`, `v2beta1`, `v1alpha3`) as kube orders them
//! (`k8s.io/apimachinery/pkg/version/helpers.go`): which version of a group is preferred, in
//! discovery and wherever several versions of one thing are ranked.

use std::cmp::Ordering;

/// kube's version priority (`version.CompareKubeAwareVersionStrings`): GA before beta before
/// alpha, higher numbers first, and versions that are not Kubernetes-like last, by name.
pub fn compare_kube_aware_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, minor) = if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (0, m)
        } else {
            return None;
        };
        if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((major, stage, minor.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb.cmp(&sa).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_kube_prefers_them() {
        let mut v = vec!["v1alpha1", "foo1", "v1", "v2beta1", "v11alpha2", "v2", "v1beta2", "v10", "foo10"];
        v.sort_by(|a, b| compare_kube_aware_versions(a, b));
        assert_eq!(v, ["v10", "v2", "v1", "v2beta1", "v1beta2", "v11alpha2", "v1alpha1", "foo1", "foo10"]);
    }
}
