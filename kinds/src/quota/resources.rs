//! Resource lists (`corev1.ResourceList`) and the arithmetic quota does over them (kube:
//! `k8s.io/apiserver/pkg/quota/v1/resources.go`).
//!
//! A list is a map from resource name to [`Quantity`], sorted by name, so what is printed from
//! one (`pods=1,requests.cpu=500m`) comes out in kube's sorted order without a sort.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use kube_cel::quantity::{self, Quantity};

/// Resource name to quantity.
pub type ResourceList = BTreeMap<String, Quantity>;

/// A quantity of `n` whole units (`resource.NewQuantity(n, DecimalSI)`).
pub fn units(n: i64) -> Quantity {
    Quantity { nanos: i128::from(n) * 1_000_000_000, format: quantity::Format::DecimalSi }
}

/// The list in `value` (a JSON object of quantity strings); `None` when absent or `null`, as
/// kube tells a nil list from an empty one. Members that do not parse are left out: validation
/// refused them before they were stored.
pub fn parse(value: Option<&Value>) -> Option<ResourceList> {
    let map = value?.as_object()?;
    Some(map.iter().filter_map(|(k, v)| Some((k.clone(), quantity::from_json(v).ok()?))).collect())
}

/// The list as JSON, each quantity in kube's canonical form.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(list.iter().map(|(k, q)| (k.clone(), Value::String(q.canonical()))).collect::<Map<_, _>>())
}

/// `Quantity.Add`: the sum keeps the format of `a` unless `a` is zero.
pub fn add_quantity(a: Quantity, b: Quantity) -> Quantity {
    let format = if a.is_zero() { b.format } else { a.format };
    // Saturating: a quantity holds up to 10^38 nano-units, so a sum of many can pass i128.
    Quantity { nanos: a.nanos.saturating_add(b.nanos), format }
}

/// `Quantity.Sub`: as [`add_quantity`], of the difference.
pub fn sub_quantity(a: Quantity, b: Quantity) -> Quantity {
    let format = if a.is_zero() { b.format } else { a.format };
    Quantity { nanos: a.nanos.saturating_sub(b.nanos), format }
}

/// `quota.Add`: every resource of either list, summed where both have it.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    add_into(&mut out, b);
    out
}

/// `addResourceList`: adds `b` into `a`.
pub fn add_into(a: &mut ResourceList, b: &ResourceList) {
    for (k, q) in b {
        let sum = a.get(k).map_or(*q, |have| add_quantity(*have, *q));
        a.insert(k.clone(), sum);
    }
}

/// `maxResourceList`: each resource of `b` raised into `a` where it is larger.
pub fn max_into(a: &mut ResourceList, b: &ResourceList) {
    for (k, q) in b {
        if a.get(k).is_none_or(|have| q > have) {
            a.insert(k.clone(), *q);
        }
    }
}

/// `quota.SubtractWithNonNegativeResult`: `a - b` per resource of either, never below zero.
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    for (k, q) in a {
        let d = b.get(k).map_or(*q, |other| sub_quantity(*q, *other));
        out.insert(k.clone(), if d.nanos > 0 { d } else { units(0) });
    }
    for k in b.keys() {
        out.entry(k.clone()).or_insert_with(|| units(0));
    }
    out
}

/// `quota.Mask`: only the resources named in `names`.
pub fn mask<'a>(list: &ResourceList, names: impl IntoIterator<Item = &'a String>) -> ResourceList {
    names.into_iter().filter_map(|n| Some((n.clone(), *list.get(n)?))).collect()
}

/// `quota.LessThanOrEqual`: whether every resource `a` shares with `b` is at most `b`'s, and
/// those that are not.
pub fn exceeding(a: &ResourceList, b: &ResourceList) -> Vec<String> {
    b.iter().filter(|(k, limit)| a.get(*k).is_some_and(|q| q > *limit)).map(|(k, _)| k.clone()).collect()
}

/// `quota.Equals`: the same resources with equal quantities (`1` equals `1000m`: formats are
/// how a quantity prints, not what it is).
pub fn equals(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len() && a.iter().all(|(k, q)| b.get(k).is_some_and(|o| o.nanos == q.nanos))
}

/// `quota.IsZero`.
pub fn is_zero(list: &ResourceList) -> bool {
    list.values().all(Quantity::is_zero)
}

/// `quota.IsNegative`: the resources below zero.
pub fn negative(list: &ResourceList) -> Vec<String> {
    list.iter().filter(|(_, q)| q.nanos < 0).map(|(k, _)| k.clone()).collect()
}

/// `prettyPrint`: `name=quantity` pairs by name, comma-joined.
pub fn pretty(list: &ResourceList) -> String {
    list.iter().map(|(k, q)| format!("{k}={}", q.canonical())).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(v: Value) -> ResourceList {
        parse(Some(&v)).unwrap()
    }

    #[test]
    fn sums_keep_the_first_nonzero_format() {
        let a = list(json!({"memory": "512Mi", "pods": "0"}));
        let b = list(json!({"memory": "512Mi", "pods": "1", "cpu": "250m"}));
        assert_eq!(to_json(&add(&a, &b)), json!({"cpu": "250m", "memory": "1Gi", "pods": "1"}));
        assert_eq!(pretty(&add(&a, &b)), "cpu=250m,memory=1Gi,pods=1");
    }

    #[test]
    fn differences_never_go_below_zero() {
        let a = list(json!({"requests.storage": "1Gi", "pods": "1"}));
        let b = list(json!({"requests.storage": "2Gi", "services": "1"}));
        assert_eq!(
            to_json(&subtract_non_negative(&a, &b)),
            json!({"pods": "1", "requests.storage": "0", "services": "0"})
        );
    }

    #[test]
    fn exceeding_names_what_is_over_and_ignores_what_is_unlimited() {
        let used = list(json!({"pods": "3", "cpu": "2", "secrets": "9"}));
        let hard = list(json!({"pods": "2", "cpu": "2"}));
        assert_eq!(exceeding(&used, &hard), vec!["pods"]);
        assert!(equals(&mask(&used, hard.keys()), &list(json!({"pods": "3", "cpu": "2000m"}))));
        assert!(parse(Some(&Value::Null)).is_none() && parse(None).is_none());
    }
}
