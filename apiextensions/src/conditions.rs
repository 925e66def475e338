//! A CRD's status as kube's controllers keep it: the names it is served under
//! (`status.acceptedNames`, with `NamesAccepted` saying why a requested name is refused), the
//! `Established` condition, and `Terminating` while its objects are deleted.

use serde_json::{Map, Value, json};

/// One CRD condition (`CustomResourceDefinitionCondition`) without its transition time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// `NamesAccepted`, `Established`, `Terminating`.
    pub kind: &'static str,
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    /// kube's reason.
    pub reason: String,
    /// kube's message.
    pub message: String,
}

impl Condition {
    fn new(kind: &'static str, status: &'static str, reason: &str, message: &str) -> Self {
        Condition { kind, status, reason: reason.to_string(), message: message.to_string() }
    }
}

/// The condition of `kind` in a CRD's status, if any.
pub fn find<'a>(crd: &'a Value, kind: &str) -> Option<&'a Value> {
    crd.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == kind)
}

/// Whether the condition of `kind` is `True`.
pub fn is_true(crd: &Value, kind: &str) -> bool {
    find(crd, kind).is_some_and(|c| c["status"] == "True")
}

/// kube's `SetCRDCondition`: the condition replaced in place (appended when new), its
/// transition time moved only when its status changes.
pub fn set(crd: &mut Value, c: &Condition, now: &str) {
    if !crd["status"].is_object() {
        crd["status"] = json!({});
    }
    let status = crd["status"].as_object_mut().expect("an object");
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("an array");
    let fresh = json!({"type": c.kind, "status": c.status, "lastTransitionTime": now, "reason": c.reason,
        "message": c.message});
    match list.iter_mut().find(|x| x["type"] == c.kind) {
        None => list.push(fresh),
        Some(old) => {
            let time = if old["status"] == c.status && old["lastTransitionTime"].is_string() {
                old["lastTransitionTime"].clone()
            } else {
                now.into()
            };
            *old = fresh;
            old["lastTransitionTime"] = time;
        }
    }
}

/// Every name the CRDs of `group` are served under (plural, singular, short names), and every
/// kind (kind, list kind): the names another CRD of the group may not take.
fn used_names<'a>(group: &str, crds: impl Iterator<Item = &'a Value>) -> (Vec<String>, Vec<String>) {
    let (mut resources, mut kinds) = (Vec::new(), Vec::new());
    for crd in crds.filter(|c| c.pointer("/spec/group").and_then(Value::as_str) == Some(group)) {
        let accepted = &crd["status"]["acceptedNames"];
        for key in ["plural", "singular"] {
            resources.extend(accepted[key].as_str().map(str::to_string));
        }
        if let Some(short) = accepted["shortNames"].as_array() {
            resources.extend(short.iter().filter_map(Value::as_str).map(str::to_string));
        }
        for key in ["kind", "listKind"] {
            kinds.extend(accepted[key].as_str().map(str::to_string));
        }
    }
    (resources, kinds)
}

/// kube's `equalToAcceptedOrFresh`.
fn fresh(requested: &str, accepted: &str, used: &[String]) -> Result<(), String> {
    if requested == accepted || !used.iter().any(|u| u == requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// What kube's naming controller decides for `crd` among `all` (every CRD, `crd` included):
/// the new `acceptedNames`, `NamesAccepted`, and `Established` as it stands before the
/// establishing controller acts (`Installing` once the names are accepted).
pub fn accept_names<'a>(crd: &Value, all: impl IntoIterator<Item = &'a Value>) -> (Value, Condition, Condition) {
    let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or("");
    let (resources, kinds) = used_names(group, all.into_iter());
    let requested = &crd["spec"]["names"];
    let accepted = &crd["status"]["acceptedNames"];
    let mut names: Map<String, Value> = accepted.as_object().cloned().unwrap_or_default();
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    let mut refused: Option<(&str, String)> = None;
    for (key, reason, used) in [
        ("plural", "PluralConflict", &resources),
        ("singular", "SingularConflict", &resources),
        ("shortNames", "ShortNamesConflict", &resources),
        ("kind", "KindConflict", &kinds),
        ("listKind", "ListKindConflict", &kinds),
    ] {
        if key == "shortNames" {
            if requested["shortNames"] == accepted["shortNames"] {
                continue;
            }
            let had: Vec<&str> = accepted["shortNames"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let errs: Vec<String> = requested["shortNames"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .filter(|s| !had.contains(s))
                .filter_map(|s| fresh(s, "", used).err())
                .collect();
            match errs.len() {
                0 => {
                    names.insert(key.into(), requested["shortNames"].clone());
                }
                1 => refused = Some((reason, errs[0].clone())),
                _ => refused = Some((reason, format!("[{}]", errs.join(", ")))),
            }
            continue;
        }
        match fresh(&text(requested, key), &text(accepted, key), used) {
            Ok(()) => {
                names.insert(key.into(), requested[key].clone());
            }
            Err(e) => refused = Some((reason, e)),
        }
    }
    names.insert("categories".into(), requested["categories"].clone());
    names.retain(|_, v| !v.is_null());
    let names_accepted = match refused {
        Some((reason, message)) => Condition::new("NamesAccepted", "False", reason, &message),
        None => Condition::new("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
    };
    let mut established = match find(crd, "Established") {
        Some(old) => Condition {
            kind: "Established",
            status: if old["status"] == "True" { "True" } else { "False" },
            reason: text(old, "reason"),
            message: text(old, "message"),
        },
        None => Condition::new("Established", "False", "NotAccepted", "not all names are accepted"),
    };
    if established.status != "True" && names_accepted.status == "True" {
        established = Condition::new("Established", "False", "Installing", "the initial names have been accepted");
    }
    (Value::Object(names), names_accepted, established)
}

/// `Established` once the CRD is served: what kube's establishing controller sets.
pub fn established() -> Condition {
    Condition::new("Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
}

/// `Terminating` as the CRD's delete sets it, before its objects are deleted.
pub fn deletion_pending() -> Condition {
    Condition::new(
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    )
}

/// `Terminating` while the finalizer deletes the objects.
pub fn deletion_in_progress() -> Condition {
    Condition::new("Terminating", "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress")
}

/// `Terminating` when objects remain after a deletion pass.
pub fn deletion_check(remaining: usize) -> Condition {
    Condition::new(
        "Terminating",
        "True",
        "InstanceDeletionCheck",
        &format!("could not confirm zero CustomResources remaining: {remaining} remaining"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, plural: &str, kind: &str, short: &[&str]) -> Value {
        json!({"metadata": {"name": name}, "spec": {"group": "example.com",
            "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind,
                "listKind": format!("{kind}List"), "shortNames": short}}})
    }

    fn accepted(mut c: Value) -> Value {
        c["status"] = json!({"acceptedNames": c["spec"]["names"].clone()});
        c
    }

    #[test]
    fn fresh_names_are_accepted_and_installing() {
        let c = crd("widgets.example.com", "widgets", "Widget", &["wd"]);
        let (names, accepted_c, established) = accept_names(&c, std::slice::from_ref(&c));
        assert_eq!(names["plural"], "widgets");
        assert_eq!(names["shortNames"], json!(["wd"]));
        assert_eq!((accepted_c.status, accepted_c.reason.as_str()), ("True", "NoConflicts"));
        assert_eq!((established.status, established.reason.as_str()), ("False", "Installing"));
    }

    #[test]
    fn a_name_taken_in_the_group_is_refused_as_kube_words_it() {
        let other = accepted(crd("gadgets.example.com", "gadgets", "Gadget", &["wd"]));
        let c = crd("widgets.example.com", "widgets", "Widget", &["wd"]);
        let (names, cond, established) = accept_names(&c, &[other.clone(), c.clone()]);
        assert_eq!((cond.status, cond.reason.as_str()), ("False", "ShortNamesConflict"));
        assert_eq!(cond.message, "\"wd\" is already in use");
        assert!(names.get("shortNames").is_none());
        assert_eq!(names["plural"], "widgets", "the other names are accepted");
        assert_eq!((established.status, established.reason.as_str()), ("False", "NotAccepted"));

        let same_kind = crd("gizmos.example.com", "gizmos", "Gadget", &[]);
        let (_, cond, _) = accept_names(&same_kind, &[other, same_kind.clone()]);
        assert_eq!(
            (cond.reason.as_str(), cond.message.as_str()),
            ("ListKindConflict", "\"GadgetList\" is already in use")
        );
    }

    #[test]
    fn conditions_keep_their_transition_time_while_their_status_holds() {
        let mut c = json!({});
        set(&mut c, &Condition::new("Established", "False", "Installing", "m"), "t1");
        set(&mut c, &Condition::new("Established", "False", "Other", "m"), "t2");
        assert_eq!(c["status"]["conditions"][0]["lastTransitionTime"], "t1");
        set(&mut c, &established(), "t3");
        assert_eq!(c["status"]["conditions"][0]["lastTransitionTime"], "t3");
        assert_eq!(c["status"]["conditions"][0]["reason"], "InitialNamesAccepted");
        assert!(is_true(&c, "Established"));
    }
}
